"""tests/image/mhd-client.py PORT SECRET: header checks against a running
vivarium-agent (TCP, VIVARIUM_AGENT_SECRET=SECRET, VIVARIUM_USER_HEADER=
X-User-Id) with the libmicrohttpd of the machine it runs on.  Prints that
library's version, then one line per check; exits 1 when one fails."""
import ctypes
import socket
import sys

port, secret = int(sys.argv[1]), sys.argv[2].encode()
lib = ctypes.CDLL("libmicrohttpd.so.12")
lib.MHD_get_version.restype = ctypes.c_char_p
print("libmicrohttpd", lib.MHD_get_version().decode())

BODY = (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":'
        b'{"protocolVersion":"2025-06-18","capabilities":{},'
        b'"clientInfo":{"name":"mhd-client","version":"0"}}}')


def post(auth, user):
    head = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Authorization: Bearer " + auth + b"\r\n"
            b"X-User-Id: " + user + b"\r\n"
            b"Content-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\n"
            b"Connection: close\r\n"
            b"Content-Length: " + str(len(BODY)).encode() + b"\r\n\r\n")
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(head + BODY)
    got = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        got += d
    s.close()
    status = int(got.split(b" ", 2)[1]) if got.startswith(b"HTTP/") else 0
    return status, got.decode("utf-8", "replace")


fails = 0


def check(name, ok, detail):
    global fails
    print(("ok - " if ok else "not ok - ") + name)
    if not ok:
        fails += 1
        print("  " + detail[-600:].replace("\n", "\n  "))


st, out = post(secret, b"alice")
check("a request with the right headers is served", st == 200, out)
# Refused either way: libmicrohttpd 1.x answers 400 to a NUL in any
# header itself; on 0.9 the agent sees it (401, or 400 naming the NUL).
st, out = post(secret + b"\0evil", b"alice")
check("an Authorization header cut by a NUL is refused", st in (400, 401), out)
st, out = post(secret, b"alice\0bob")
check("a user header cut by a NUL is refused",
      st == 400 and ("NUL" in out or "invalid character" in out), out)
st, out = post(secret, b"bob")
check("and the next good request is served", st == 200, out)
sys.exit(1 if fails else 0)
