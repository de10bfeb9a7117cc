# tests/deploy/fake_podman.py SOCKET ROOTLESS CGROUP CONTROLLERS: a stand-in
# for Podman's API on a unix socket, for what a real Podman here cannot
# show: how the supervisor and vivariumctl report a rootless Podman whose
# limits are not enforced (rootless on cgroup v1 needs another machine's
# kernel setup to be seen for real on a rootful test host).  It answers
# /info with the given host facts and the few other calls status and the
# supervisor's start make with plausible empty answers.
import json
import os
import socketserver
import sys
from http.server import BaseHTTPRequestHandler

sock, rootless, cgroup, controllers = sys.argv[1:5]
info = {"host": {"cgroupVersion": cgroup,
                 "cgroupControllers": [c for c in controllers.split(",") if c],
                 "security": {"rootless": rootless == "true"}},
        "version": {"Version": "4.3.1", "APIVersion": "4.3.1"}}


class H(BaseHTTPRequestHandler):
    def address_string(self):
        return "unix"

    def log_message(self, *a):
        pass

    def reply(self, code, body):
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        if code != 204:
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if data:
            self.wfile.write(data)

    def do_GET(self):
        p = self.path.split("?")[0]
        if p.endswith("/info"):
            self.reply(200, info)
        elif p.endswith("/version"):
            self.reply(200, {"Version": "4.3.1", "ApiVersion": "1.41",
                             "Components": [{"Name": "Podman Engine", "Version": "4.3.1"}]})
        elif p.endswith("/exists"):
            self.reply(204, None)
        elif "/containers/" in p and p.endswith("/json") and "containers/json" not in p:
            self.reply(200, {"State": {"Status": "exited"}, "ImageName": "localhost/x:1"})
        else:
            self.reply(200, [])


class S(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


if os.path.exists(sock):
    os.unlink(sock)
S(sock, H).serve_forever()
