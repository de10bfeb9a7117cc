# tests/egress/container-client.py PROXY_HOST PROXY_PORT CASE...: runs inside
# a container on an internal network (tests/egress/container.sh).  Each CASE
# is NAME=KIND:TARGET with KIND one of
#   get      GET http://TARGET/hello.txt through the proxy
#   connect  CONNECT TARGET through the proxy, then GET /hello.txt in the tunnel
#   direct   connect to TARGET without the proxy
# TARGET may use the word SELF for this container's own address.  Prints one
# line per case: NAME STATUS FIRST-BODY-LINE (STATUS "error" when no answer).
import socket
import sys

PROXY = (sys.argv[1], int(sys.argv[2]))


def read_all(s):
    data = b""
    while True:
        try:
            chunk = s.recv(65536)
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    return data


def parse(data):
    head, _, body = data.partition(b"\r\n\r\n")
    parts = head.split(b"\r\n", 1)[0].split(b" ")
    status = parts[1].decode() if len(parts) > 1 else "error"
    first = body.split(b"\n", 1)[0].decode(errors="replace").strip()
    return status, first


def self_addr():
    with socket.create_connection(PROXY, timeout=5) as s:
        return s.getsockname()[0]


def run(kind, target):
    if kind == "direct":
        host, port = target.rsplit(":", 1)
        try:
            with socket.create_connection((host, int(port)), timeout=3) as s:
                s.sendall(b"GET /hello.txt HTTP/1.0\r\n\r\n")
                return parse(read_all(s))
        except OSError as e:
            return "error", type(e).__name__
    with socket.create_connection(PROXY, timeout=10) as s:
        s.settimeout(10)
        if kind == "get":
            s.sendall(("GET http://%s/hello.txt HTTP/1.1\r\nHost: %s\r\n"
                       "Connection: close\r\n\r\n" % (target, target)).encode())
            return parse(read_all(s))
        s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n"
                   % (target, target)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = s.recv(1)
            if not chunk:
                break
            head += chunk
        status, _ = parse(head)
        if status != "200":
            return status, parse(head + read_all(s))[1]
        s.sendall(("GET /hello.txt HTTP/1.0\r\nHost: %s\r\n\r\n"
                   % target).encode())
        inner, first = parse(read_all(s))
        return status, "%s %s" % (inner, first)


def main():
    me = self_addr()
    for case in sys.argv[3:]:
        name, spec = case.split("=", 1)
        kind, target = spec.split(":", 1)
        status, first = run(kind, target.replace("SELF", me))
        print(name, status, first, flush=True)


main()
