# tests/deploy/mcp_client.py URL TOKEN USER: a minimal MCP client over
# streamable HTTP, run inside a container the way LibreChat's would call
# the supervisor: initialize, then run_python.  Prints one line per step
# ("initialize: <server name>", "run_python: <text>") or "error: ..." and
# exits 1.  Only the standard library: it runs in the sandbox image.
import json
import sys
import urllib.error
import urllib.request

url, token, user = sys.argv[1], sys.argv[2], sys.argv[3]


def call(msg_id, method, params):
    body = json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method,
                       "params": params}).encode()
    headers = {"Content-Type": "application/json",
               "Accept": "application/json, text/event-stream",
               "X-User-ID": user}
    if token != "-":
        headers["Authorization"] = "Bearer " + token
    req = urllib.request.Request(url, data=body, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            text = r.read().decode()
            ctype = r.headers.get("Content-Type", "")
    except urllib.error.HTTPError as e:
        print("error: HTTP %d: %s" % (e.code, e.read().decode()[:300]))
        sys.exit(1)
    except OSError as e:
        print("error: %s" % e)
        sys.exit(1)
    if ctype.startswith("text/event-stream"):
        data = [l[5:].strip() for l in text.splitlines() if l.startswith("data:")]
        text = data[-1]
    return json.loads(text)


r = call(1, "initialize", {"protocolVersion": "2025-03-26", "capabilities": {},
                           "clientInfo": {"name": "container-client", "version": "1"}})
print("initialize: %s" % r["result"]["serverInfo"]["name"])
r = call(2, "tools/call", {"name": "run_python",
                           "arguments": {"code": "import socket\nprint('sum', 20 + 22)"}})
print("run_python: %s" % " ".join(c.get("text", "") for c in r["result"]["content"]).replace("\n", " | "))
