# tests/host/mcp.py USER TOOL [ARGS_JSON]: one MCP tool call to the
# installed supervisor, as LibreChat makes it (the token from
# /etc/vivarium/token, the user in X-User-ID), run inside the box with the
# box's python3.  Prints the result's text, then "structured: <json>" when
# it has structuredContent.  Exit 1 on an HTTP or transport error, 2 when
# the tool reported an error.  VIVARIUM_URL overrides the address.
import json
import os
import sys
import urllib.error
import urllib.request

url = os.environ.get("VIVARIUM_URL", "http://127.0.0.1:8787/mcp")
user, tool = sys.argv[1], sys.argv[2]
args = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
with open("/etc/vivarium/token") as f:
    token = f.readline().strip()


def call(msg_id, method, params):
    body = json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method,
                       "params": params}).encode()
    req = urllib.request.Request(url, data=body, headers={
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "Authorization": "Bearer " + token, "X-User-ID": user})
    try:
        with urllib.request.urlopen(req, timeout=300) as r:
            text = r.read().decode()
            ctype = r.headers.get("Content-Type", "")
    except urllib.error.HTTPError as e:
        print("error: HTTP %d: %s" % (e.code, e.read().decode()[:300]))
        sys.exit(1)
    except OSError as e:
        print("error: %s" % e)
        sys.exit(1)
    if ctype.startswith("text/event-stream"):
        data = [l[5:].strip() for l in text.splitlines()
                if l.startswith("data:")]
        text = data[-1]
    return json.loads(text)


call(1, "initialize", {"protocolVersion": "2025-03-26", "capabilities": {},
                       "clientInfo": {"name": "test-host", "version": "1"}})
r = call(2, "tools/call", {"name": tool, "arguments": args})
if "error" in r:
    print("error: %s" % json.dumps(r["error"]))
    sys.exit(1)
res = r["result"]
print("\n".join(c.get("text", "") for c in res.get("content", [])))
if "structuredContent" in res:
    print("structured: %s" % json.dumps(res["structuredContent"]))
sys.exit(2 if res.get("isError") else 0)
