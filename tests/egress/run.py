#!/usr/bin/python3
"""Integration tests for vivarium-egress, on loopback only.

usage: run.py PATH/TO/vivarium-egress

Every socket here is on 127.0.0.0/8 or ::1.  Test origins: a small HTTP
server (answers with its own name and the headers it received) and an echo
server, each on 127.0.0.1 and 127.0.0.2 (and ::1 for the mixed-name test).
The proxy is started several times with different configurations; names
are made to resolve to loopback addresses by running the proxy in a private
mount namespace (unshare -m) with its own /etc/hosts bind-mounted, so the
host's /etc/hosts is never touched.
"""
import os
import re
import shutil
import socket
import socketserver
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback

PROXY = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else "bin/vivarium-egress"
TMP = tempfile.mkdtemp(prefix="egress-test-")
HOSTS = os.path.join(TMP, "hosts")
HAVE_UNSHARE = os.geteuid() == 0 and shutil.which("unshare") is not None


def free_port(host="127.0.0.1"):
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam)
    s.bind((host, 0))
    p = s.getsockname()[1]
    s.close()
    return p


# ------------------------------------------------------------ test origins

class Server(socketserver.ThreadingMixIn, socketserver.TCPServer):
    """A test server named name on host:port (IPv6 when host has a colon),
    a thread per connection running the class's handler."""
    daemon_threads = True
    allow_reuse_address = True
    handler = None

    def __init__(self, host, port, name):
        self.name = name
        if ":" in host:
            self.address_family = socket.AF_INET6
        super().__init__((host, port), self.handler)


class OriginHandler(socketserver.StreamRequestHandler):
    def handle(self):
        while True:
            req = origin_read(self.rfile)
            if req is None:
                return
            line, fields, body_in = req
            method, target, _ = line.split(" ", 2)
            if target.startswith("/slow"):
                time.sleep(30)
            body = ("origin=%s\nmethod=%s\ntarget=%s\nbody=%s\n%s\n" % (
                self.server.name, method, target, body_in.decode("latin-1"),
                "\n".join(fields))).encode()
            if target.startswith("/chunked"):
                self.wfile.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                                 + b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n")
            else:
                self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n"
                                 % len(body) + (b"" if method == "HEAD" else body))
            self.wfile.flush()


class EchoHandler(socketserver.BaseRequestHandler):
    def handle(self):
        self.request.sendall(("[%s]" % self.server.name).encode())
        while True:
            d = self.request.recv(65536)
            if not d:
                return
            self.request.sendall(d)


class Origin(Server):
    """HTTP/1.1 keep-alive origin.  The body names the server and lists the
    header fields it received, one per line."""
    handler = OriginHandler


class Echo(Server):
    """Echoes every byte back, after a prefix naming the server."""
    handler = EchoHandler


def serve(srv):
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


class Scripted:
    """An origin whose behaviour each test scripts: script(conn, n) runs
    for every connection accepted since the last reset(), n counting them
    from 1, so a test can tell a fresh upstream connection from a reused
    one."""

    def __init__(self, port):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(16)
        self.lock = threading.Lock()
        self.script = None
        self.count = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def reset(self, script):
        with self.lock:
            self.script = script
            self.count = 0

    def connections(self):
        with self.lock:
            return self.count

    def _accept(self):
        while True:
            c, _ = self.sock.accept()
            with self.lock:
                self.count += 1
                args = (self.script, c, self.count)
            threading.Thread(target=self._run, args=args, daemon=True).start()

    @staticmethod
    def _run(script, c, n):
        try:
            if script is not None:
                script(c, n)
        except OSError:
            pass
        finally:
            c.close()


def origin_read(f):
    """One request from an origin's connection (a file reading it):
    (request line, header lines, body with any chunked framing taken off),
    or None at EOF."""
    line = f.readline(65536)
    if not line:
        return None
    fields, length = [], 0
    while True:
        h = f.readline(65536)
        if h in (b"\r\n", b"\n", b""):
            break
        fields.append(h.decode("latin-1").rstrip("\r\n"))
        k, _, v = fields[-1].partition(":")
        if k.strip().lower() == "content-length":
            length = int(v)
    body = f.read(length) if length else b""
    if any(h.lower().replace(" ", "") == "transfer-encoding:chunked"
           for h in fields):
        while True:
            size = int(f.readline(100).split(b";")[0], 16)
            body += f.read(size)
            f.readline(10)
            if size == 0:
                break
    return line.decode("latin-1").rstrip("\r\n"), fields, body


def reset_close(c):
    """Closes with a reset rather than a FIN."""
    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    c.close()


# ------------------------------------------------------------ the proxy

class Proxy:
    def __init__(self, allow=None, ports=None, extra=None, hosts=False,
                 ulimit=None, config=None, resolv=None):
        self.port = free_port()
        self.log = os.path.join(TMP, "proxy-%d.log" % self.port)
        env = dict(os.environ)
        env.update({
            "VIVARIUM_EGRESS_LISTEN": "127.0.0.1:%d" % self.port,
            "VIVARIUM_EGRESS_PORTS": ",".join(str(p) for p in ports),
            "VIVARIUM_EGRESS_HEADER_TIMEOUT": "2",
            "VIVARIUM_EGRESS_CONNECT_TIMEOUT": "2",
            # On the host the proxy sees the host's interfaces as its
            # own; a test that needs the file names one.
            "VIVARIUM_EGRESS_HOST_ADDRESSES": "none",
            "ASAN_OPTIONS": "detect_leaks=1",
        })
        if allow:
            env["VIVARIUM_EGRESS_ALLOW_CIDRS"] = allow
        env.update(extra or {})
        cmd = [PROXY] + (["-f", config] if config else [])
        if hosts:
            # Private mount namespace: this process's /etc/hosts only
            # (and its /etc/resolv.conf when resolv names one).
            mounts = 'mount --bind "$0" /etc/hosts'
            if resolv:
                mounts += ' && mount --bind %s /etc/resolv.conf' % resolv
            cmd = ["unshare", "-m", "sh", "-c",
                   mounts + ' && exec "$@"', HOSTS] + cmd
        if ulimit:
            cmd = ["prlimit", "--nofile=%d" % ulimit] + cmd
        self.logf = open(self.log, "w")
        self.p = subprocess.Popen(cmd, env=env, stdout=self.logf,
                                  stderr=subprocess.STDOUT)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return
            except OSError:
                if self.p.poll() is not None:
                    break
                time.sleep(0.05)
        raise RuntimeError("proxy did not start: " + open(self.log).read())

    def stop(self):
        self.p.terminate()
        try:
            rc = self.p.wait(10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            rc = self.p.wait()
        self.logf.close()
        text = open(self.log).read()
        if "ERROR: AddressSanitizer" in text or "runtime error" in text \
                or "LeakSanitizer" in text:
            raise AssertionError("sanitizer report:\n" + text)
        if rc != 0:
            raise AssertionError("proxy exited with %d:\n%s" % (rc, text))
        return text

    def logtext(self):
        self.logf.flush()
        return open(self.log).read()

    def connect(self, timeout=5):
        s = socket.create_connection(("127.0.0.1", self.port), timeout)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return s


# Bytes read past the end of a response stay here for the next one.
PENDING = {}


def _fill(s, data):
    d = s.recv(65536)
    return data + d, bool(d)


def read_head(s):
    data = PENDING.pop(s.fileno(), b"")
    more = True
    while b"\r\n\r\n" not in data and more:
        data, more = _fill(s, data)
    head, _, rest = data.partition(b"\r\n\r\n")
    return head.decode("latin-1"), rest


def read_response(s):
    """One response: (status, headers text, body); extra bytes are kept."""
    head, rest = read_head(s)
    m = re.match(r"HTTP/1\.1 (\d{3}) ", head)
    assert m, "no status line in %r" % head
    status = int(m.group(1))
    cl = re.search(r"(?im)^content-length: *(\d+)", head)
    data, more = rest, True
    if cl:
        n = int(cl.group(1))
        while len(data) < n and more:
            data, more = _fill(s, data)
        body, extra = data[:n], data[n:]
    elif re.search(r"(?im)^transfer-encoding: *chunked", head):
        while b"0\r\n\r\n" not in data and more:
            data, more = _fill(s, data)
        i = data.index(b"0\r\n\r\n") + 5
        body, extra = data[:i], data[i:]
    else:
        body, extra = data, b""
    if extra:
        PENDING[s.fileno()] = extra
    return status, head, body


def request(proxy, raw):
    s = proxy.connect()
    s.sendall(raw)
    try:
        return read_response(s)
    finally:
        s.close()


def recv_exact(s, n):
    out = b""
    while len(out) < n:
        d = s.recv(n - len(out))
        if not d:
            break
        out += d
    return out


def read_to_eof(s, got=b"", within=5):
    """Everything the peer sends until it closes, after got."""
    out = bytearray(got)
    s.settimeout(within)
    while True:
        d = s.recv(65536)
        if not d:
            return bytes(out)
        out += d


def expect_eof(s, within):
    s.settimeout(within)
    try:
        while True:
            d = s.recv(4096)
            if not d:
                return True
    except socket.timeout:
        return False
    except ConnectionResetError:
        return True


# ------------------------------------------------------------ tests

O1 = free_port()
O2 = free_port("127.0.0.2")
E1 = free_port()
CLOSED = free_port()       # nothing listens here


def t_http_allowed(px, **_):
    st, head, body = request(px, b"GET http://127.0.0.1:%d/hello?x=1 HTTP/1.1\r\n"
                             b"Host: whatever\r\n\r\n" % O1)
    assert st == 200, (st, body)
    assert b"origin=o1" in body and b"target=/hello?x=1" in body, body
    assert b"Host: 127.0.0.1:%d" % O1 in body, body


def t_connect_allowed(px, **_):
    s = px.connect()
    s.sendall(b"CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" % E1)
    head, rest = read_head(s)
    assert head.startswith("HTTP/1.1 200"), head
    s.sendall(b"ping")
    got = rest + recv_exact(s, len(b"[e1]ping") - len(rest))
    assert got == b"[e1]ping", got
    s.close()


def t_early_bytes_after_connect(px, **_):
    """Bytes sent with the CONNECT, before the 200, reach the origin
    verbatim: never parsed as a request, never lost."""
    early = b"GET http://10.0.0.1/ HTTP/1.1\r\nHost: x\r\n\r\n\x16\x03\x01" * 3
    s = px.connect()
    s.sendall(b"CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n" % E1 + early)
    head, rest = read_head(s)
    assert head.startswith("HTTP/1.1 200"), head
    want = b"[e1]" + early
    got = rest + recv_exact(s, len(want) - len(rest))
    assert got == want, got
    # and the tunnel carries on
    s.sendall(b"more")
    assert recv_exact(s, 4) == b"more"
    s.close()


def t_connect_bulk_and_half_close(px, **_):
    """Megabytes each way (the splice path), byte-exact, then the client's
    half-close travels to the origin and the origin's close comes back."""
    data = os.urandom(6 << 20)
    s = px.connect(timeout=20)
    s.sendall(b"CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n" % E1)
    head, rest = read_head(s)
    assert head.startswith("HTTP/1.1 200"), head

    def writer():
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
    w = threading.Thread(target=writer)
    w.start()
    got = bytearray(rest)
    while True:
        d = s.recv(1 << 20)
        if not d:
            break
        got += d
    w.join()
    s.close()
    assert bytes(got) == b"[e1]" + data, (len(got), len(data))


def t_early_bytes_then_half_close_while_resolving(px, **_):
    """A CONNECT to a name (resolved off the loop): bytes and a half-close
    that arrive while the name resolves and the upstream connects are held,
    then delivered, and the origin's close comes back."""
    if not HAVE_UNSHARE:
        raise Skip("needs root and unshare for the test /etc/hosts")
    s = px.connect()
    s.sendall(b"CONNECT localhost:%d HTTP/1.1\r\n\r\n" % E1)
    s.sendall(b"early one,")
    s.sendall(b"early two")
    s.shutdown(socket.SHUT_WR)
    head, rest = read_head(s)
    assert head.startswith("HTTP/1.1 200"), head
    got = read_to_eof(s, rest)
    s.close()
    assert got == b"[e1]early one,early two", got


def t_client_reset_resets_upstream(px, **_):
    """A client that aborts its tunnel (RST) has the upstream aborted too,
    rather than closed as if the client had finished."""
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", RESETPORT))
    srv.listen(4)
    srv.settimeout(5)
    try:
        s = px.connect()
        s.sendall(b"CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n" % RESETPORT)
        up, _ = srv.accept()
        head, _ = read_head(s)
        assert head.startswith("HTTP/1.1 200"), head
        s.sendall(b"hi")
        up.settimeout(5)
        assert recv_exact(up, 2) == b"hi"
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                     struct.pack("ii", 1, 0))
        s.close()
        outcome = None
        try:
            outcome = up.recv(10)
        except ConnectionResetError:
            outcome = "reset"
        up.close()
        assert outcome == "reset", "upstream saw %r, not a reset" % (outcome,)
    finally:
        srv.close()


def t_headers_stripped(px, **_):
    st, _, body = request(px, b"GET http://127.0.0.1:%d/h HTTP/1.1\r\nHost: x\r\n"
                          b"Proxy-Authorization: Basic c2VjcmV0\r\n"
                          b"Proxy-Connection: keep-alive\r\nKeep-Alive: 30\r\n"
                          b"Connection: close, X-Hop\r\nX-Hop: 1\r\nTE: trailers\r\n"
                          b"X-Kept: yes\r\n\r\n" % O1)
    assert st == 200
    low = body.lower()
    for h in (b"proxy-", b"keep-alive", b"x-hop", b"\nte:"):
        assert h not in low, (h, body)
    assert b"X-Kept: yes" in body and b"Connection: close" in body, body


def t_response_hop_by_hop_stripped(px, **_):
    """The hop-by-hop fields of a response stop at the proxy; the status
    line and the end-to-end fields pass byte for byte, in order, and so
    does a chunked body with its framing.  The proxy says Connection: close
    exactly when it closes after the response."""
    def script(c, n):
        f = c.makefile("rb")
        while True:
            req = origin_read(f)
            if req is None:
                return
            target = req[0].split(" ")[1]
            if target == "/hop":
                c.sendall(b"HTTP/1.1 200 Fine\r\n"
                          b"Connection: X-Secret, keep-alive\r\n"
                          b"X-Secret: 1\r\nKeep-Alive: timeout=5\r\n"
                          b"Proxy-Foo: 1\r\nTrailer: x\r\n"
                          b"X-End:  to end \r\nCache-Control: no-cache\r\n"
                          b"Content-Length: 2\r\n\r\nok")
            elif target == "/chunked":
                c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
                          b"Trailer: X-T\r\nUpgrade: h2c\r\n"
                          b"Connection: Upgrade, Transfer-Encoding\r\n\r\n"
                          b"2\r\nab\r\n0\r\nX-T: 1\r\n\r\n")
            else:   # the body ends at EOF: the proxy must close after it
                c.sendall(b"HTTP/1.1 200 OK\r\nKeep-Alive: timeout=5\r\n"
                          b"X-Eof: 1\r\n\r\nto the end")
                return

    SCRIPTED_ORIGIN.reset(script)
    s = px.connect()
    s.sendall(b"GET http://127.0.0.1:%d/hop HTTP/1.1\r\nHost: x\r\n\r\n"
              % SCRIPTED)
    st, head, body = read_response(s)
    assert st == 200 and body == b"ok", (st, head, body)
    assert head == "HTTP/1.1 200 Fine\r\nX-End:  to end \r\n" \
        "Cache-Control: no-cache\r\nContent-Length: 2", repr(head)
    # kept alive, and said nothing about it
    s.sendall(b"GET http://127.0.0.1:%d/chunked HTTP/1.1\r\nHost: x\r\n\r\n"
              % SCRIPTED)
    head, body = read_head(s)
    assert head == "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked", repr(head)
    want = b"2\r\nab\r\n0\r\nX-T: 1\r\n\r\n"
    body += recv_exact(s, len(want) - len(body))
    assert body == want, body
    s.sendall(b"GET http://127.0.0.1:%d/eof HTTP/1.1\r\nHost: x\r\n\r\n"
              % SCRIPTED)
    head, rest = read_head(s)
    assert head == "HTTP/1.1 200 OK\r\nX-Eof: 1\r\nConnection: close", \
        repr(head)
    rest = read_to_eof(s, rest)
    s.close()
    assert rest == b"to the end", rest
    assert SCRIPTED_ORIGIN.connections() == 1


def t_response_close_announced(px, **_):
    """A client that asked for close hears the proxy will close, whatever
    the upstream said about its own connection."""
    def script(c, n):
        f = c.makefile("rb")
        if origin_read(f) is not None:
            c.sendall(b"HTTP/1.1 204 No Content\r\nConnection: keep-alive\r\n"
                      b"X-A: 1\r\n\r\n")
            origin_read(f)

    SCRIPTED_ORIGIN.reset(script)
    s = px.connect()
    s.sendall(b"GET http://127.0.0.1:%d/ HTTP/1.1\r\nHost: x\r\n"
              b"Connection: close\r\n\r\n" % SCRIPTED)
    head, rest = read_head(s)
    assert head == "HTTP/1.1 204 No Content\r\nX-A: 1\r\nConnection: close", \
        repr(head)
    assert rest == b"" and expect_eof(s, 3)
    s.close()


def keepalive_then(second):
    """A script: the first connection answers one GET and keeps the
    connection, then meets the next request with second(c) (a close, say:
    its keep-alive timer fired as the request crossed it); later
    connections answer every request."""
    def script(c, n):
        f = c.makefile("rb")
        served = 0
        while True:
            req = origin_read(f)
            if req is None:
                return
            if n == 1 and served == 1:
                f.close()       # else the socket outlives close()
                second(c)
                return
            body = b"conn=%d %s" % (n, req[0].encode())
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s"
                      % (len(body), body))
            served += 1
    return script


def t_stale_keepalive_retried(px, **_):
    """A kept-alive upstream that closes as the next GET reaches it: the
    GET is sent again on a fresh connection to the address already
    checked, and the client never sees the failure."""
    for how, close in (("fin", lambda c: c.close()), ("rst", reset_close)):
        SCRIPTED_ORIGIN.reset(keepalive_then(close))
        s = px.connect()
        for path, conn in ((b"/1", 1), (b"/2", 2), (b"/3", 2)):
            s.sendall(b"GET http://127.0.0.1:%d%s HTTP/1.1\r\nHost: x\r\n\r\n"
                      % (SCRIPTED, path))
            st, _, body = read_response(s)
            assert st == 200 and body.startswith(b"conn=%d GET %s " %
                                                 (conn, path)), (how, st, body)
        s.close()
        assert SCRIPTED_ORIGIN.connections() == 2, how
    time.sleep(0.3)
    lines = [ln for ln in px.logtext().splitlines()
             if "target=127.0.0.1:%d " % SCRIPTED in ln and "requests=3 " in ln]
    assert len(lines) >= 2 and all(ln.endswith(" retries=1") for ln in lines[-2:]), \
        lines


def t_idle_upstream_reset(px, **_):
    """A kept-alive upstream that resets while the client is between
    requests costs the client nothing: the next request gets a fresh
    upstream."""
    def script(c, n):
        f = c.makefile("rb")
        if origin_read(f) is not None:
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\nconn=%d"
                      % (len(b"conn=%d" % n), n))
            if n == 1:
                f.close()
                reset_close(c)
    SCRIPTED_ORIGIN.reset(script)
    s = px.connect()
    s.sendall(b"GET http://127.0.0.1:%d/1 HTTP/1.1\r\nHost: x\r\n\r\n" % SCRIPTED)
    st, _, body = read_response(s)
    assert st == 200 and body == b"conn=1", (st, body)
    time.sleep(0.3)
    s.sendall(b"GET http://127.0.0.1:%d/2 HTTP/1.1\r\nHost: x\r\n\r\n" % SCRIPTED)
    st, _, body = read_response(s)
    assert st == 200 and body == b"conn=2", (st, body)
    s.close()


def t_stale_keepalive_race(px, **_):
    """The origin resets each kept-alive connection right after its first
    response, and the client's next GET races the reset: whether the proxy
    sees the reset first (fresh upstream), its write fails, or its read
    does (a retry), the client gets its 200 every time."""
    def script(c, n):
        f = c.makefile("rb")
        while True:
            req = origin_read(f)
            if req is None:
                return
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            if req[0].split(" ")[1] == "/1":
                f.close()
                reset_close(c)
                return
    SCRIPTED_ORIGIN.reset(script)
    for i in range(40):
        s = px.connect()
        for path in (b"/1", b"/2"):
            s.sendall(b"GET http://127.0.0.1:%d%s HTTP/1.1\r\nHost: x\r\n\r\n"
                      % (SCRIPTED, path))
            st, _, body = read_response(s)
            assert st == 200 and body == b"ok", (i, path, st, body)
        s.close()


def t_keepalive_switch_race(px, **_):
    """The origin resets its connection right after answering, and the
    client's next request, for another target, races the reset: the new
    upstream is never taken for the old one, the second answer is o2's
    every time."""
    def script(c, n):
        f = c.makefile("rb")
        if origin_read(f) is not None:
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        f.close()
        reset_close(c)
    SCRIPTED_ORIGIN.reset(script)
    for i in range(60):
        s = px.connect()
        s.sendall(b"GET http://127.0.0.1:%d/1 HTTP/1.1\r\nHost: x\r\n\r\n"
                  % SCRIPTED)
        st, _, body = read_response(s)
        assert st == 200 and body == b"ok", (i, st, body)
        s.sendall(b"GET http://127.0.0.2:%d/2 HTTP/1.1\r\nHost: x\r\n\r\n"
                  % O2)
        st, _, body = read_response(s)
        assert st == 200 and b"origin=o2" in body, (i, st, body)
        s.close()


def t_stale_keepalive_post_not_retried(px, **_):
    """A request with a body is not sent twice: the stale upstream's
    failure is the client's 502."""
    SCRIPTED_ORIGIN.reset(keepalive_then(lambda c: c.close()))
    s = px.connect()
    s.sendall(b"GET http://127.0.0.1:%d/1 HTTP/1.1\r\nHost: x\r\n\r\n" % SCRIPTED)
    st, _, body = read_response(s)
    assert st == 200 and body.startswith(b"conn=1 "), (st, body)
    s.sendall(b"POST http://127.0.0.1:%d/2 HTTP/1.1\r\nHost: x\r\n"
              b"Content-Length: 5\r\n\r\nhello" % SCRIPTED)
    st, _, body = read_response(s)
    assert st == 502 and b"upstream closed without a complete response" in body, \
        (st, body)
    s.close()
    time.sleep(0.3)
    assert SCRIPTED_ORIGIN.connections() == 1


def t_fresh_upstream_close_not_retried(px, **_):
    """Only a reused connection is retried: a fresh one that closes
    without answering is a 502 after one attempt."""
    def script(c, n):
        origin_read(c.makefile("rb"))
    SCRIPTED_ORIGIN.reset(script)
    st, _, body = request(px, b"GET http://127.0.0.1:%d/ HTTP/1.1\r\nHost: x\r\n\r\n"
                          % SCRIPTED)
    assert st == 502 and b"upstream closed without a complete response" in body, \
        (st, body)
    time.sleep(0.3)
    assert SCRIPTED_ORIGIN.connections() == 1


def t_stale_keepalive_retried_once(px, **_):
    """The retry is made once: when the fresh connection fails as well,
    the 502 stands."""
    def script(c, n):
        f = c.makefile("rb")
        req = origin_read(f)
        if req is not None and n == 1:
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            origin_read(f)      # the next request, left unanswered

    SCRIPTED_ORIGIN.reset(script)
    s = px.connect()
    s.sendall(b"GET http://127.0.0.1:%d/1 HTTP/1.1\r\nHost: x\r\n\r\n" % SCRIPTED)
    st, _, body = read_response(s)
    assert st == 200 and body == b"ok", (st, body)
    s.sendall(b"GET http://127.0.0.1:%d/2 HTTP/1.1\r\nHost: x\r\n\r\n" % SCRIPTED)
    st, _, body = read_response(s)
    assert st == 502, (st, body)
    s.close()
    time.sleep(0.3)
    assert SCRIPTED_ORIGIN.connections() == 2


def t_post_body_and_chunked_response(px, **_):
    s = px.connect()
    s.sendall(b"POST http://127.0.0.1:%d/p HTTP/1.1\r\nHost: x\r\n"
              b"Content-Length: 5\r\n\r\nhello" % O1)
    st, _, body = read_response(s)
    assert st == 200 and b"body=hello" in body, body
    s.sendall(b"GET http://127.0.0.1:%d/chunked HTTP/1.1\r\nHost: x\r\n\r\n" % O1)
    st, head, body = read_response(s)
    assert st == 200 and "chunked" in head.lower() and b"origin=o1" in body
    # chunked request body
    s.sendall(b"POST http://127.0.0.1:%d/c HTTP/1.1\r\nHost: x\r\n"
              b"Transfer-Encoding: chunked\r\n\r\n" % O1)
    s.sendall(b"3\r\nabc\r\n0\r\n\r\n")
    st, _, body = read_response(s)
    assert st == 200 and b"Transfer-Encoding: chunked" in body, body
    s.close()


def t_keepalive_rechecks_host(px, **_):
    """One client connection, three targets: each is checked on its own
    and gets its own upstream; the denied one gets a 403."""
    s = px.connect()
    s.sendall(b"GET http://127.0.0.1:%d/a HTTP/1.1\r\nHost: x\r\n\r\n" % O1)
    st, _, body = read_response(s)
    assert st == 200 and b"origin=o1" in body, body
    s.sendall(b"GET http://127.0.0.2:%d/b HTTP/1.1\r\nHost: x\r\n\r\n" % O2)
    st, _, body = read_response(s)
    assert st == 200 and b"origin=o2" in body, body
    # pipelined: two requests in one write, to the two origins
    s.sendall(b"GET http://127.0.0.1:%d/c HTTP/1.1\r\nHost: x\r\n\r\n"
              b"GET http://127.0.0.2:%d/d HTTP/1.1\r\nHost: x\r\n\r\n" % (O1, O2))
    st, _, body = read_response(s)
    assert st == 200 and b"origin=o1" in body and b"target=/c" in body, body
    st, _, body = read_response(s)
    assert st == 200 and b"origin=o2" in body and b"target=/d" in body, body
    # ::1 is loopback but not in the allow list (127.0.0.0/8 only)
    s.sendall(b"GET http://[::1]:%d/e HTTP/1.1\r\nHost: x\r\n\r\n" % O1)
    st, _, body = read_response(s)
    assert st == 403 and b"::1 is not allowed" in body, (st, body)
    assert expect_eof(s, 3)
    s.close()


def t_keepalive_refusals_answered(px, **_):
    """A refusal of a second request on a kept-alive connection is answered
    like the same refusal of a first request: a status and a reason, then
    the close (issue 11, item 9)."""
    cases = [
        (b"CONNECT 127.0.0.1:22 HTTP/1.1\r\n\r\n", 403,
         b"vivarium-egress: port 22 is not allowed\n"),
        (b"GET http://127.0.0.1:22/ HTTP/1.1\r\nHost: x\r\n\r\n", 403,
         b"vivarium-egress: port 22 is not allowed\n"),
        (b"GET http://127.0.0.1:%d/ HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n"
         % O1, 400, None),
        (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 400, None),
        (b"CONNECT [::1]:%d HTTP/1.1\r\n\r\n" % E1, 403,
         b"vivarium-egress: ::1 is not allowed (loopback ::1)\n"),
        (b"CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n" % CLOSED, 502, None),
    ]
    for raw, want, wbody in cases:
        s = px.connect()
        s.sendall(b"GET http://127.0.0.1:%d/first HTTP/1.1\r\nHost: x\r\n\r\n"
                  % O1)
        st, _, body = read_response(s)
        assert st == 200 and b"target=/first" in body, (st, body)
        s.sendall(raw)
        s.settimeout(5)
        try:
            st, head, body = read_response(s)
        except (AssertionError, ConnectionResetError) as e:
            raise AssertionError("no answer to %r after a kept-alive "
                                 "exchange: %s" % (raw[:40], e))
        assert st == want, (raw[:40], st, body)
        assert wbody is None or body == wbody, (raw[:40], body)
        assert body.startswith(b"vivarium-egress: ") and "Connection: close" in head
        assert expect_eof(s, 3)
        s.close()
    # pipelined: the refusal waits for the response before it, whole
    s = px.connect()
    s.sendall(b"GET http://127.0.0.1:%d/one HTTP/1.1\r\nHost: x\r\n\r\n"
              b"CONNECT 127.0.0.1:22 HTTP/1.1\r\n\r\n" % O1)
    st, _, body = read_response(s)
    assert st == 200 and b"target=/one" in body, (st, body)
    st, _, body = read_response(s)
    assert st == 403 and b"port 22" in body, (st, body)
    s.close()


def t_resolver_fair(px, **_):
    """Lookups that never answer, many from each of a few clients, do not
    hold up another client's lookup (issue 11, item 4).  The proxy's
    resolver asks a DNS server on 127.0.0.54 that reads and never answers;
    ok.test is in /etc/hosts and needs no DNS, only a resolver thread."""
    if not HAVE_UNSHARE:
        raise Skip("needs root and unshare for a private /etc/hosts")
    resolv = os.path.join(TMP, "resolv.conf")
    with open(resolv, "w") as f:
        f.write("nameserver 127.0.0.54\noptions timeout:30 attempts:1\n")
    dns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    dns.bind(("127.0.0.54", 53))       # a black hole: read, never answer
    hostile = []
    fair = Proxy(allow="127.0.0.0/8", ports=[E1], hosts=True, resolv=resolv)
    try:
        for k in range(3):
            for i in range(8):
                h = socket.create_connection(("127.0.0.1", fair.port), 5,
                                             source_address=("127.0.0.%d" % (10 + k), 0))
                h.sendall(b"CONNECT hang-%d-%d.test:%d HTTP/1.1\r\n\r\n" % (k, i, E1))
                hostile.append(h)
        time.sleep(0.3)
        t_end = time.time() + 3      # past the hostile requests' 504 at 2 s
        served = 0
        while time.time() < t_end:
            s = fair.connect()
            t0 = time.time()
            s.sendall(b"CONNECT ok.test:%d HTTP/1.1\r\n\r\n" % E1)
            head, rest = read_head(s)
            took = time.time() - t0
            assert head.startswith("HTTP/1.1 200"), (head, took)
            assert took < 1.0, "a fair client waited %.2f s" % took
            got = rest + recv_exact(s, 4 - len(rest))
            assert got == b"[e1]", got
            s.close()
            served += 1
            time.sleep(0.2)
        assert served >= 5, served
        for h in hostile:
            st, _, body = read_response(h)
            assert st == 504 and b"timed out resolving" in body, (st, body)
        # threads stay bounded: at most 4 stuck lookups per client
        tasks = len(os.listdir("/proc/%d/task" % fair.p.pid)) \
            if os.path.isdir("/proc/%d/task" % fair.p.pid) else 0
        assert tasks <= 64 + 8, tasks
    finally:
        for h in hostile:
            h.close()
        dns.close()
        fair.stop()


def t_host_addresses_refused(px, **_):
    """The host's addresses, listed in the file host_addresses names, are
    refused even inside allow_cidrs, and a change to the file is picked up
    while the proxy runs (issue 11, item 5)."""
    hf = os.path.join(TMP, "host-addrs")
    with open(hf, "w") as f:
        f.write("# the host\n127.0.0.2\n\nnot-an-address\n")
    hp = Proxy(allow="127.0.0.0/8", ports=[O1, O2, E1],
               extra={"VIVARIUM_EGRESS_HOST_ADDRESSES": hf})
    try:
        st, _, body = request(hp, b"GET http://127.0.0.2:%d/ HTTP/1.1\r\n"
                              b"Host: x\r\n\r\n" % O2)
        assert st == 403 and body == b"vivarium-egress: 127.0.0.2 is not " \
            b"allowed (an address of the proxy's host)\n", (st, body)
        st, _, body = request(hp, b"GET http://127.0.0.1:%d/ HTTP/1.1\r\n"
                              b"Host: x\r\n\r\n" % O1)
        assert st == 200 and b"origin=o1" in body, (st, body)
        # the host's addresses change: written aside and renamed, as
        # container.sh does
        with open(hf + ".new", "w") as f:
            f.write("127.0.0.1/32\n::1\n")
        os.rename(hf + ".new", hf)
        deadline = time.time() + 6
        while True:
            st, _, body = request(hp, b"CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n"
                                  % E1)
            if st == 403 or time.time() > deadline:
                break
            time.sleep(0.3)
        assert st == 403 and b"proxy's host" in body, (st, body)
        st, _, body = request(hp, b"GET http://127.0.0.2:%d/ HTTP/1.1\r\n"
                              b"Host: x\r\n\r\n" % O2)
        assert st == 200 and b"origin=o2" in body, (st, body)
        # a file that goes away keeps the list read last
        os.unlink(hf)
        time.sleep(2.5)
        st, _, body = request(hp, b"CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n"
                              % E1)
        assert st == 403, (st, body)
    finally:
        text = hp.stop()
    assert "host-addrs:4: not an address or CIDR: 'not-an-address'" in text, text


def t_port_not_allowed(px, **_):
    st, _, body = request(px, b"CONNECT 127.0.0.1:22 HTTP/1.1\r\n\r\n")
    assert st == 403 and body == b"vivarium-egress: port 22 is not allowed\n", body


def t_proxy_itself_denied(px, **_):
    # even with 127.0.0.0/8 allowed and its port listed, never itself
    px2 = Proxy(allow="127.0.0.0/8", ports=[O1])
    try:
        st, _, body = request(px2, b"CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n"
                              % px2.port)
        assert st == 403, (st, body)
    finally:
        px2.stop()


def t_denied_without_allow_list(px, denyproxy, **_):
    st, _, body = request(denyproxy, b"GET http://127.0.0.1:%d/ HTTP/1.1\r\n"
                          b"Host: x\r\n\r\n" % O1)
    assert st == 403 and b"loopback 127.0.0.0/8" in body or \
        b"own address" in body, (st, body)
    for target in (b"127.0.0.1", b"2130706433", b"0x7f.1", b"017700000001",
                   b"127.1", b"[::ffff:127.0.0.1]", b"[::127.0.0.1]",
                   b"[::1]", b"[64:ff9b::a9fe:a9fe]", b"[2002:a9fe:a9fe::1]",
                   b"169.254.169.254", b"0",
                   # IPv6 outside 2000::/3, and special ranges inside it
                   b"[fe00::1]", b"[4000::1]", b"[64:ff9b:2::1]", b"[100:0:0:1::1]",
                   b"[3fff::1]", b"[5f00::1]", b"[2001:db8::1]"):
        st, _, body = request(denyproxy, b"CONNECT %s:%d HTTP/1.1\r\n\r\n"
                              % (target, E1))
        assert st == 403, (target, st, body)
        assert body.startswith(b"vivarium-egress: ") and body.count(b"\n") == 1
    st, _, body = request(denyproxy, b"CONNECT [fe80::1%%25eth0]:%d HTTP/1.1\r\n\r\n"
                          % E1)
    assert st == 400 and b"zone" in body, body


def t_name_resolving_private(px, denyproxy, **_):
    if not HAVE_UNSHARE:
        raise Skip("needs root and unshare for a private /etc/hosts")
    st, _, body = request(denyproxy, b"CONNECT private.test:%d HTTP/1.1\r\n\r\n" % E1)
    assert st == 403, (st, body)
    assert body == b"vivarium-egress: private.test resolves to 127.0.0.1 " \
        b"(loopback 127.0.0.0/8)\n" or b"own address" in body, body
    st, _, body = request(denyproxy, b"GET http://metadata.test:%d/ HTTP/1.1\r\n"
                          b"Host: x\r\n\r\n" % O1)
    assert st == 403 and b"169.254.169.254" in body, (st, body)
    st, _, body = request(denyproxy, b"CONNECT nxdomain.invalid:%d HTTP/1.1\r\n\r\n"
                          % E1)
    assert st == 502 and b"cannot resolve" in body, (st, body)


def t_mixed_name_uses_allowed_only(px, **_):
    """mixed.test has ::1 (denied: not in the allow list) and 127.0.0.1
    (allowed); an echo server on each tells which one was dialled."""
    if not HAVE_UNSHARE:
        raise Skip("needs root and unshare for a private /etc/hosts")
    for _ in range(3):
        s = px.connect()
        s.sendall(b"CONNECT mixed.test:%d HTTP/1.1\r\n\r\n" % E1)
        head, rest = read_head(s)
        assert head.startswith("HTTP/1.1 200"), head
        got = rest + recv_exact(s, 4 - len(rest))
        assert got == b"[e1]", got   # the ::1 server would say [e6]
        s.close()


def t_malformed(px, **_):
    cases = [
        (b"GET http://u:p@127.0.0.1:%d/ HTTP/1.1\r\nHost: x\r\n\r\n" % O1, 400),
        (b"CONNECT 127.0.0.1:0%d HTTP/1.1\r\n\r\n" % E1, 400),
        (b"CONNECT 127.0.0.1:65536 HTTP/1.1\r\n\r\n", 400),
        (b"CONNECT 127.0.0.1:+443 HTTP/1.1\r\n\r\n", 400),
        (b"GET http://127.0.0.1:%d/ HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n" % O1, 400),
        (b"POST http://127.0.0.1:%d/ HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n"
         b"Transfer-Encoding: chunked\r\n\r\n" % O1, 400),
        (b"POST http://127.0.0.1:%d/ HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n"
         b"Content-Length: 1\r\n\r\n" % O1, 400),
        (b"GET http://127.0.0.1:%d/ HTTP/1.1\r\nHost: x\r\nX: a\r\n b\r\n\r\n" % O1, 400),
        (b"GET http://127.0.0.1:%d/ HTTP/1.1\nHost: x\n\n" % O1, 400),
        (b"GET http://127.0.0.1:%d/ HTTP/1.1\r\nX: a\x00b\r\n\r\n" % O1, 400),
        (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        (b"GET http://127.0.0.1:%d/ HTTP/1.1\r\n" % O1 + b"X-Pad: " + b"a" * 20000
         + b"\r\n\r\n", 431),
    ]
    for raw, want in cases:
        st, head, body = request(px, raw)
        assert st == want, (raw[:80], st, body)
        assert body.startswith(b"vivarium-egress: ") and body.endswith(b"\n") \
            and body.count(b"\n") == 1, body
        assert "Connection: close" in head
    t_http_allowed(px)      # still serving


def t_upstream_errors(px, **_):
    st, _, body = request(px, b"CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n" % CLOSED)
    assert st == 502 and b"cannot connect" in body, (st, body)
    # A listener whose accept queue is full drops SYNs: connect hangs -> 504
    full = socket.socket()
    full.bind(("127.0.0.1", TARPIT))
    full.listen(0)
    fillers = []
    for _ in range(4):
        f = socket.socket()
        f.setblocking(False)
        try:
            f.connect(("127.0.0.1", TARPIT))
        except BlockingIOError:
            pass
        fillers.append(f)
    time.sleep(0.2)
    t0 = time.time()
    st, _, body = request(px, b"CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n" % TARPIT)
    took = time.time() - t0
    assert st == 504 and b"timed out connecting" in body, (st, body)
    assert 1.5 < took < 5, took
    for f in fillers:
        f.close()
    full.close()


def t_slowloris(px, **_):
    """A client that trickles its head is cut at the header timeout (2 s)
    while other clients are served meanwhile."""
    slow = px.connect()
    slow.sendall(b"GET http://127.0.0.1:%d/ HTTP/1.1\r\n" % O1)
    t0 = time.time()
    served = 0
    cut = None
    slow.setblocking(False)
    while time.time() - t0 < 6:
        try:
            slow.sendall(b"X-a: b\r\n")
        except (BrokenPipeError, ConnectionResetError):
            cut = time.time() - t0
            break
        try:
            d = slow.recv(4096)
            if d == b"" or b" 408 " in d:
                cut = time.time() - t0
                break
        except BlockingIOError:
            pass
        ts = time.time()
        t_http_allowed(px)
        assert time.time() - ts < 1.0, "a normal client waited"
        served += 1
        time.sleep(0.2)
    slow.close()
    assert cut is not None, "slow client never cut"
    assert 1.8 <= cut <= 3.5, cut
    assert served >= 3, served


def t_caps(px, **_):
    capped = Proxy(allow="127.0.0.0/8", ports=[O1],
                   extra={"VIVARIUM_EGRESS_MAX_PER_CLIENT": "3",
                          "VIVARIUM_EGRESS_MAX_CONNECTIONS": "5"})
    try:
        time.sleep(0.3)     # let the start-up probe connection go
        held = [capped.connect() for _ in range(3)]
        time.sleep(0.2)
        st, _, body = request(capped, b"GET http://127.0.0.1:%d/ HTTP/1.1\r\n"
                              b"Host: x\r\n\r\n" % O1)
        assert st == 503 and b"from this client" in body, (st, body)
        # other clients still get in, up to the total of 5 ...
        for src in ("127.0.0.2", "127.0.0.2"):
            held.append(socket.create_connection(("127.0.0.1", capped.port), 5,
                                                 source_address=(src, 0)))
        time.sleep(0.2)
        # ... and then nobody does
        s = socket.create_connection(("127.0.0.1", capped.port), 5,
                                     source_address=("127.0.0.3", 0))
        s.sendall(b"GET http://127.0.0.1:%d/ HTTP/1.1\r\nHost: x\r\n\r\n" % O1)
        st, _, body = read_response(s)
        s.close()
        assert st == 503 and body == b"vivarium-egress: too many connections\n", \
            (st, body)
        held.pop().close()
        held.pop().close()
        held.pop().close()
        time.sleep(0.3)
        st, _, _ = request(capped, b"GET http://127.0.0.1:%d/ HTTP/1.1\r\n"
                           b"Host: x\r\n\r\n" % O1)
        assert st == 200, st
        for h in held:
            h.close()
    finally:
        capped.stop()


def cpu_ticks(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])


def t_out_of_fds(px, **_):
    """With a tiny descriptor limit the proxy refuses what it cannot hold,
    does not spin, and serves again once descriptors are free."""
    small = Proxy(allow="127.0.0.0/8", ports=[O1], ulimit=64)
    try:
        held = []
        for _ in range(120):
            try:
                held.append(small.connect(timeout=1))
            except OSError:
                break
        time.sleep(0.5)
        pid = small.p.pid
        c0 = cpu_ticks(pid)
        time.sleep(2)
        used = cpu_ticks(pid) - c0
        assert used < 50, "spinning: %d ticks in 2 s" % used   # 100 ticks = 1 CPU
        for h in held:
            h.close()
        time.sleep(0.5)
        st, _, _ = request(small, b"GET http://127.0.0.1:%d/ HTTP/1.1\r\n"
                           b"Host: x\r\n\r\n" % O1)
        assert st == 200, st
    finally:
        text = small.stop()
    assert "accept (shedding connections until descriptors free up): Too many open files" in text, text[-2000:]


def t_log_line(px, **_):
    request(px, b"GET http://127.0.0.1:%d/logme HTTP/1.1\r\nHost: x\r\n"
            b"Connection: close\r\n\r\n" % O1)
    time.sleep(0.2)
    text = px.logtext()
    m = re.search(r"client=127\.0\.0\.1:\d+ target=127\.0\.0\.1:%d addr=127\.0\.0\.1 "
                  r"verdict=allow reason=\"[^\"]+\" requests=1 up=\d+ down=\d+ ms=\d+"
                  % O1, text)
    assert m, text[-2000:]
    assert re.search(r"verdict=deny reason=\"port 22 is not allowed\"", text)


def t_user_labels(px, **_):
    """The supervisor's user labels file: a client whose address it lists
    has user=LABEL right after client= in its log lines, another client
    none; the file is read again when it is replaced, and a bad or missing
    one means no labels (said once), never a refusal."""
    labels = os.path.join(TMP, "user-labels")

    def put(text):
        with open(labels + ".new", "w") as f:
            f.write(text)
        os.rename(labels + ".new", labels)

    def get(src, path):
        s = socket.create_connection(("127.0.0.1", lp.port), 5,
                                     source_address=(src, 0))
        s.sendall(b"GET http://127.0.0.1:%d/%s HTTP/1.1\r\nHost: x\r\n"
                  b"Connection: close\r\n\r\n" % (O1, path.encode()))
        st, _, _ = read_response(s)
        s.close()
        assert st == 200, st

    # The log line names the target, not the path: each request waits
    # for its line before the next, and its user= (or "") is returned.
    def seen(src, tag):
        before = lp.logtext().count("target=127.0.0.1:%d " % O1)
        get(src, tag)
        deadline = time.time() + 5
        while lp.logtext().count("target=127.0.0.1:%d " % O1) == before:
            assert time.time() < deadline, lp.logtext()[-2000:]
            time.sleep(0.05)
        last = [l for l in lp.logtext().splitlines()
                if "target=127.0.0.1:%d " % O1 in l][-1]
        m = re.match(r"vivarium-egress: client=(\S+?):\d+( user=\S+)? "
                     r"target=", last)
        assert m, last
        assert m.group(1) == src, last
        return (m.group(2) or "").strip()

    put("# written by the test\n127.0.0.1 alice@example.org/665f0c2a9d3e4b1c8f7a6e5d\n"
        "::1 " + "b" * 24 + "\n")
    lp = Proxy(allow="127.0.0.0/8", ports=[O1],
               extra={"VIVARIUM_EGRESS_USER_LABELS": labels})
    try:
        assert seen("127.0.0.1", "a") == "user=alice@example.org/665f0c2a9d3e4b1c8f7a6e5d"
        assert seen("127.0.0.3", "b") == ""
        # Replaced: read again within a second or so.
        put("127.0.0.1 665f0c2a9d3e4b1c8f7a6e5d\n127.0.0.3 carol/7\n")
        time.sleep(1.6)
        assert seen("127.0.0.3", "c") == "user=carol/7"
        assert seen("127.0.0.1", "d") == "user=665f0c2a9d3e4b1c8f7a6e5d"
        # A bad line: the file is not taken at all, said once.
        put("127.0.0.1 alice\n127.0.0.3 car ol\n")
        time.sleep(2.5)
        assert seen("127.0.0.1", "e") == ""
        assert lp.logtext().count("not taken") == 1, lp.logtext()[-2000:]
        assert "line 2:" in lp.logtext()
        # Gone: no labels, and the proxy serves on.
        os.unlink(labels)
        time.sleep(1.6)
        assert seen("127.0.0.3", "f") == ""
        assert "log lines name no user until it exists" in lp.logtext()
        put("127.0.0.3 back\n")
        time.sleep(1.6)
        assert seen("127.0.0.3", "g") == "user=back"
    finally:
        lp.stop()
    # A file missing at start is no refusal either.
    lp = Proxy(allow="127.0.0.0/8", ports=[O1],
               extra={"VIVARIUM_EGRESS_USER_LABELS": labels + ".none"})
    try:
        assert seen("127.0.0.1", "h") == ""
    finally:
        lp.stop()


def t_config_check(px, **_):
    good = os.path.join(TMP, "good.yaml")
    bad = os.path.join(TMP, "bad.yaml")
    open(good, "w").write("listen: 127.0.0.1:3128\nallow_ports: [443]\n"
                          "allow_cidrs: [127.0.0.0/8]\nhost_addresses: none\n")
    open(bad, "w").write("allow_ports: [443, 99999]\ntimeouts:\n  header: x\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("VIVARIUM_")}
    r = subprocess.run([PROXY, "-n", "-f", good], env=env, capture_output=True,
                       text=True)
    assert r.returncode == 0 and "configuration OK" in r.stdout, r
    r = subprocess.run([PROXY, "-n", "-f", bad], env=env, capture_output=True,
                       text=True)
    assert r.returncode == 1 and "bad.yaml:1: allow_ports" in r.stderr and \
        "bad.yaml:3: timeouts.header" in r.stderr, r
    env["VIVARIUM_EGRESS_IDLE_TIMEOUT"] = "soon"
    r = subprocess.run([PROXY, "-n", "-f", good], env=env, capture_output=True,
                       text=True)
    assert r.returncode == 1 and "VIVARIUM_EGRESS_IDLE_TIMEOUT" in r.stderr, r
    del env["VIVARIUM_EGRESS_IDLE_TIMEOUT"]
    env["VIVARIUM_EGRESS_HOST_ADDRESSES"] = "none"
    # -n checks what start-up checks: a listener must be an address and a
    # port, as the proxy binds it without a lookup.
    for listen in ("nonsense:xyz", "localhost:3128", "127.0.0.1:0", "[]:3128"):
        env["VIVARIUM_EGRESS_LISTEN"] = listen
        r = subprocess.run([PROXY, "-n"], env=env, capture_output=True,
                           text=True)
        assert r.returncode == 1 and \
            'VIVARIUM_EGRESS_LISTEN="%s"' % listen in r.stderr, r
    env["VIVARIUM_EGRESS_LISTEN"] = "127.0.0.1:3128,[::1]:3128,:3129"
    r = subprocess.run([PROXY, "-n"], env=env, capture_output=True, text=True)
    assert r.returncode == 0 and "listen [::1]:3128" in r.stdout, r
    del env["VIVARIUM_EGRESS_LISTEN"]
    r = subprocess.run([PROXY, "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "usage:" in r.stdout


HOST_ADVICE = ("host_addresses: none", "VIVARIUM_EGRESS_HOST_ADDRESSES=none",
               "vivarium-egress-hosts")


def t_host_file_required(px, **_):
    """Fail closed: without a readable list of the host's addresses the
    proxy neither passes -n nor starts, and says how to write the list and
    how to run without one; none, said in words, runs without it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("VIVARIUM_")}
    port = free_port()
    env["VIVARIUM_EGRESS_LISTEN"] = "127.0.0.1:%d" % port
    empty = os.path.join(TMP, "no-host-addrs")
    with open(empty, "w") as f:
        f.write("# written by a tool that failed\n")
    good = os.path.join(TMP, "good-host-addrs")
    with open(good, "w") as f:
        f.write("192.0.2.1\n2001:db8::/32\n")
    cases = [(None, "host_addresses is not set"),
             (os.path.join(TMP, "missing"), "No such file or directory"),
             (TMP, "Is a directory"),
             (empty, "lists no address")]
    for hf, why in cases:
        if hf is None:
            env.pop("VIVARIUM_EGRESS_HOST_ADDRESSES", None)
        else:
            env["VIVARIUM_EGRESS_HOST_ADDRESSES"] = hf
        for args in (["-n"], []):
            r = subprocess.run([PROXY] + args, env=env, capture_output=True,
                               text=True, timeout=20)
            assert r.returncode == 1, (hf, args, r)
            assert why in r.stderr, (hf, args, r.stderr)
            for advice in HOST_ADVICE:
                assert advice in r.stderr, (hf, args, advice, r.stderr)
            assert "listen" not in r.stdout, r.stdout
    try:
        socket.create_connection(("127.0.0.1", port), 0.5).close()
        raise AssertionError("a proxy without its host list listened")
    except ConnectionRefusedError:
        pass
    env["VIVARIUM_EGRESS_HOST_ADDRESSES"] = good
    r = subprocess.run([PROXY, "-n"], env=env, capture_output=True, text=True)
    assert r.returncode == 0 and \
        "host_addresses %s (2 listed)" % good in r.stdout, r
    env["VIVARIUM_EGRESS_HOST_ADDRESSES"] = "none"
    r = subprocess.run([PROXY, "-n"], env=env, capture_output=True, text=True)
    assert r.returncode == 0 and "host_addresses none" in r.stdout, r


# ------------------------------------------------------------ in namespaces

def ip(*args):
    subprocess.run(["ip"] + list(args), check=True, capture_output=True)


def veth(a, b):
    """A veth pair between two namespaces, each end given as (namespace,
    device, addresses), with its addresses (IPv6 ones without duplicate
    address detection, so they are usable at once), up."""
    ip("-n", a[0], "link", "add", a[1], "type", "veth", "peer", "name",
       b[1], "netns", b[0])
    for ns, dev, addrs in (a, b):
        for addr in addrs:
            ip("-n", ns, "addr", "add", addr, "dev", dev,
               *(["nodad"] if ":" in addr else []))
        ip("-n", ns, "link", "set", dev, "up")


def stop_all(procs):
    """Terminates the processes, and kills those still there after 10 s."""
    for p in procs:
        p.terminate()
    deadline = time.time() + 10
    for p in procs:
        try:
            p.wait(max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


NS_SERVER = r"""
import socket, sys
s = socket.socket(socket.AF_INET6)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("::", 80))
s.listen(16)
while True:
    c, _ = s.accept()
    c.settimeout(5)
    try:
        c.recv(4096)
        c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n%s"
                  % (len(sys.argv[1]), sys.argv[1].encode()))
    except OSError:
        pass
    c.close()
"""

NS_CLIENT = r"""
import socket, sys, time
proxy = ("127.0.0.1", int(sys.argv[1]))
for t in sys.argv[2:]:
    kind, target = t.split("=", 1)
    try:
        if kind == "direct":
            host = target.strip("[]")
            deadline = time.time() + 10
            while True:
                try:
                    c = socket.create_connection((host, 80), 2)
                    break
                except OSError:
                    if time.time() > deadline:
                        raise
                    time.sleep(0.1)
            c.sendall(b"GET / HTTP/1.0\r\n\r\n")
        else:
            c = socket.create_connection(proxy, 5)
            c.sendall(b"GET http://%s/ HTTP/1.1\r\nHost: x\r\n"
                      b"Connection: close\r\n\r\n" % target.encode())
        c.settimeout(5)
        data = b""
        while True:
            d = c.recv(4096)
            if not d:
                break
            data += d
        head, _, body = data.partition(b"\r\n\r\n")
        print(kind, target, head.split(b" ")[1].decode(),
              body.decode().strip(), flush=True)
    except OSError as e:
        print(kind, target, "error", e, flush=True)
"""


def t_networks_before_allow(px, **_):
    """In network namespaces of its own: a proxy on two sandbox networks
    (IPv4 and IPv6, as the supervisor connects it to users' networks) and
    a routed link to a LAN service, with allow_cidrs 10.0.0.0/8 and
    fd00::/8 for that service.  The service is reached; the sandboxes on
    the proxy's networks, and the proxy's own addresses, are refused; and a
    network the proxy is connected to while it runs is refused at once,
    not at its next periodic reading."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        raise Skip("needs root and ip(8) for network namespaces")
    tag = "vpeg%d" % os.getpid()
    P, S, S2, O = (tag + x for x in ("p", "s", "t", "o"))
    procs, made = [], []
    try:
        for ns in (P, S, S2, O):
            ip("netns", "add", ns)
            made.append(ns)
            ip("-n", ns, "link", "set", "lo", "up")
        # alice's network: the proxy and her sandbox
        veth((P, "a0", ["10.77.1.254/24", "fd77:1::fe/64"]),
             (S, "a1", ["10.77.1.2/24", "fd77:1::2/64"]))
        # the LAN service, routed: not on a network of the proxy's
        veth((P, "b0", ["10.77.9.1/30", "fd77:9::1/64"]),
             (O, "b1", ["10.77.9.2/30", "fd77:9::2/64"]))
        ip("-n", O, "addr", "add", "10.78.0.2/32", "dev", "lo")
        ip("-n", O, "addr", "add", "fd78::2/128", "dev", "lo")
        ip("-n", P, "route", "add", "10.78.0.0/16", "via", "10.77.9.2")
        ip("-n", P, "-6", "route", "add", "fd78::/16", "via", "fd77:9::2")
        ip("-n", O, "route", "add", "default", "via", "10.77.9.1")
        ip("-n", O, "-6", "route", "add", "default", "via", "fd77:9::1")
        for ns, name in ((S, "alice"), (S2, "bob"), (O, "lan")):
            procs.append(subprocess.Popen(["ip", "netns", "exec", ns,
                                           sys.executable, "-c", NS_SERVER,
                                           name]))
        port = 3128
        log = open(os.path.join(TMP, "netns-proxy.log"), "w")
        env = dict(os.environ)
        env.update({"VIVARIUM_EGRESS_LISTEN": "127.0.0.1:%d" % port,
                    "VIVARIUM_EGRESS_PORTS": "80",
                    "VIVARIUM_EGRESS_ALLOW_CIDRS": "10.0.0.0/8,fd00::/8",
                    "VIVARIUM_EGRESS_HOST_ADDRESSES": "none"})
        proxy = subprocess.Popen(["ip", "netns", "exec", P, PROXY], env=env,
                                 stdout=log, stderr=subprocess.STDOUT)
        procs.append(proxy)

        def client(*targets):
            r = subprocess.run(["ip", "netns", "exec", P, sys.executable,
                                "-c", NS_CLIENT, str(port)] + list(targets),
                               capture_output=True, text=True, timeout=60)
            return {tuple(l.split(" ", 2)[:2]): l.split(" ", 2)[2]
                    for l in r.stdout.splitlines()}

        deadline = time.time() + 10
        while "ready" not in open(log.name).read():
            assert time.time() < deadline and proxy.poll() is None, \
                open(log.name).read()
            time.sleep(0.05)
        res = client("direct=10.78.0.2", "direct=10.77.1.2",
                     "direct=[fd77:1::2]", "get=10.78.0.2", "get=[fd78::2]",
                     "get=10.77.1.2", "get=[fd77:1::2]", "get=10.77.1.254",
                     "get=[fd77:1::fe]", "get=10.77.9.2")
        own = "403 vivarium-egress: %s is not allowed (a network the " \
            "proxy is on (a sandbox's, or its own))"
        assert res[("direct", "10.77.1.2")] == "200 alice", res
        assert res[("direct", "[fd77:1::2]")] == "200 alice", res
        assert res[("get", "10.78.0.2")] == "200 lan", res
        assert res[("get", "[fd78::2]")] == "200 lan", res
        for t, a in (("10.77.1.2", "10.77.1.2"),
                     ("[fd77:1::2]", "fd77:1::2"),
                     ("10.77.1.254", "10.77.1.254"),
                     ("[fd77:1::fe]", "fd77:1::fe"),
                     ("10.77.9.2", "10.77.9.2")):
            assert res[("get", t)] == own % a, (t, res)
        # bob's network, connected while the proxy runs, asked at once
        veth((P, "c0", ["10.77.2.254/24"]), (S2, "c1", ["10.77.2.2/24"]))
        res = client("get=10.77.2.2", "direct=10.77.2.2")
        assert res[("get", "10.77.2.2")] == own % "10.77.2.2", res
        assert res[("direct", "10.77.2.2")] == "200 bob", res
    finally:
        stop_all(procs)
        for ns in made:
            subprocess.run(["ip", "netns", "delete", ns], capture_output=True)
    text = open(os.path.join(TMP, "netns-proxy.log")).read()
    assert "AddressSanitizer" not in text and "runtime error" not in text, text


HOSTS_SH = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "..", "..", "egress-proxy", "hosts.sh")


def t_hosts_script(px, **_):
    """vivarium-egress-hosts (egress-proxy/hosts.sh), in a network
    namespace of its own: DIR/host-addresses lists every address and the
    extra ones, is left alone when nothing changed, is not touched when the
    extra ones are bad; with -w an address added or removed while it runs
    is in the file, or gone from it, within seconds."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        raise Skip("needs root and ip(8) for a network namespace")
    ns = "vpeh%d" % os.getpid()
    d = os.path.join(TMP, "hosts-dir", "egress")
    f = os.path.join(d, "host-addresses")
    watcher = None
    ip("netns", "add", ns)
    try:
        ip("-n", ns, "link", "set", "lo", "up")
        ip("-n", ns, "link", "add", "v0", "type", "veth", "peer", "name", "v1")
        ip("-n", ns, "addr", "add", "10.77.4.1/24", "dev", "v0")
        ip("-n", ns, "addr", "add", "fd77:4::1/64", "dev", "v0", "nodad")

        def run(*args, extra=None):
            env = {k: v for k, v in os.environ.items()
                   if not k.startswith("VIVARIUM_")}
            if extra is not None:
                env["VIVARIUM_EGRESS_HOST_EXTRA"] = extra
            return subprocess.run(["ip", "netns", "exec", ns, "sh", HOSTS_SH]
                                  + list(args), env=env, capture_output=True,
                                  text=True, timeout=30)

        def lines():
            return [l for l in open(f).read().splitlines()
                    if not l.startswith("#")]

        r = run(d, extra="203.0.113.5, 2001:db8::/32")
        assert r.returncode == 0, r
        assert lines() == ["127.0.0.1", "::1", "10.77.4.1", "fd77:4::1",
                           "203.0.113.5", "2001:db8::/32"], lines()
        assert oct(os.stat(d).st_mode & 0o777) == "0o755"
        assert oct(os.stat(f).st_mode & 0o777) == "0o644"
        ino = os.stat(f).st_ino
        r = run(d, extra="203.0.113.5, 2001:db8::/32")
        assert r.returncode == 0 and os.stat(f).st_ino == ino, "rewritten"
        r = run(d, extra="proxy.example")
        assert r.returncode == 1 and "proxy.example" in r.stderr, r
        assert os.stat(f).st_ino == ino, "a refused run touched the file"
        r = run()
        assert r.returncode == 2 and "usage" in r.stderr, r
        # the proxy takes what it writes
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("VIVARIUM_")}
        env["VIVARIUM_EGRESS_HOST_ADDRESSES"] = f
        r = subprocess.run([PROXY, "-n"], env=env, capture_output=True,
                           text=True)
        assert r.returncode == 0 and "(%d listed)" % len(lines()) in r.stdout, r

        watcher = subprocess.Popen(["ip", "netns", "exec", ns, "sh", HOSTS_SH,
                                    "-w", d], start_new_session=True,
                                   stderr=subprocess.PIPE)

        def until(cond, what):
            deadline = time.time() + 5
            while not cond():
                assert time.time() < deadline and watcher.poll() is None, \
                    (what, lines())
                time.sleep(0.1)

        until(lambda: "203.0.113.5" not in lines(), "the extras dropped")
        time.sleep(0.5)
        ip("-n", ns, "addr", "add", "10.77.5.1/24", "dev", "v0")
        until(lambda: "10.77.5.1" in lines(), "an added address")
        ip("-n", ns, "addr", "del", "10.77.4.1/24", "dev", "v0")
        until(lambda: "10.77.4.1" not in lines(), "a removed address")
    finally:
        if watcher is not None:
            os.killpg(watcher.pid, 15)
            watcher.wait(10)
        subprocess.run(["ip", "netns", "delete", ns], capture_output=True)


class Skip(Exception):
    pass


TARPIT = free_port()
RESETPORT = free_port()
SCRIPTED = free_port()
SCRIPTED_ORIGIN = None


def main():
    global SCRIPTED_ORIGIN
    with open(HOSTS, "w") as f:
        f.write("127.0.0.1 localhost\n127.0.0.1 private.test\n"
                "169.254.169.254 metadata.test\n"
                "::1 mixed.test\n127.0.0.1 mixed.test\n127.0.0.1 ok.test\n")
    serve(Origin("127.0.0.1", O1, "o1"))
    serve(Origin("127.0.0.2", O2, "o2"))
    serve(Echo("127.0.0.1", E1, "e1"))
    SCRIPTED_ORIGIN = Scripted(SCRIPTED)
    try:
        serve(Echo("::1", E1, "e6"))
    except OSError as e:
        print("note: no ::1 echo server (%s)" % e)
    ports = [80, 443, O1, O2, E1, CLOSED, TARPIT, RESETPORT, SCRIPTED]
    px = Proxy(allow="127.0.0.0/8", ports=ports, hosts=HAVE_UNSHARE)
    denyproxy = Proxy(ports=ports, hosts=HAVE_UNSHARE)
    tests = [(n, f) for n, f in globals().items() if n.startswith("t_")]
    # EGRESS_TESTS=t_a,t_b runs just those (while working on one).
    if os.environ.get("EGRESS_TESTS"):
        only = os.environ["EGRESS_TESTS"].split(",")
        tests = [(n, f) for n, f in tests if n in only]
    failed = skipped = 0
    for name, fn in tests:
        try:
            fn(px, denyproxy=denyproxy)
            print("ok      %s" % name)
        except Skip as e:
            skipped += 1
            print("skip    %s: %s" % (name, e))
        except Exception:
            failed += 1
            print("FAILED  %s\n%s" % (name, traceback.format_exc()))
    for p in (px, denyproxy):
        try:
            p.stop()
        except AssertionError as e:
            failed += 1
            print("FAILED  proxy shutdown: %s" % e)
    print("egress integration: %d passed, %d failed, %d skipped"
          % (len(tests) - failed - skipped, failed, skipped))
    if failed:
        print("logs in", TMP)
    else:
        shutil.rmtree(TMP, ignore_errors=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
