#!/bin/sh
# supervisor/smoke.sh (make smoke): is the running supervisor usable the way
# LibreChat uses it?  Three probes, each reported in one line, and on the
# first failure what to do about it:
#   1. GET  /health                          the process serves
#   2. POST /mcp initialize                  the token and the user header
#   3. POST /mcp tools/call run_python       a sandbox starts and runs code
#
# Environment:
#   VIVARIUM_URL                the supervisor, http://127.0.0.1:8787
#   VIVARIUM_SUPERVISOR_TOKEN   the token; else the first line of
#                               $VIVARIUM_TOKEN_FILE, else of the first of
#                               /etc/vivarium/token, /var/lib/vivarium/token,
#                               ${XDG_CONFIG_HOME:-~/.config}/vivarium/token
#   VIVARIUM_SMOKE_USER         the user the probe runs as, smoke
# Exit status: 0 when all three passed, 1 otherwise.
set -u
URL=${VIVARIUM_URL:-http://127.0.0.1:8787}
URL=${URL%/}
URL=${URL%/mcp}
USER_ID=${VIVARIUM_SMOKE_USER:-smoke}
TMP=$(mktemp -d /tmp/vivarium-smoke.XXXXXX) || exit 1
trap 'rm -rf "$TMP"' EXIT

ok() { echo "smoke: ok    $*"; }
bad() {
	echo "smoke: FAIL  $1" >&2
	shift
	for l in "$@"; do echo "             $l" >&2; done
	exit 1
}

tokfile=""
tok=${VIVARIUM_SUPERVISOR_TOKEN:-}
if [ -z "$tok" ]; then
	for f in ${VIVARIUM_TOKEN_FILE:-} /etc/vivarium/token \
	    /var/lib/vivarium/token "${XDG_CONFIG_HOME:-$HOME/.config}/vivarium/token"; do
		if [ -r "$f" ] && [ -s "$f" ]; then
			tokfile=$f
			break
		fi
	done
	[ -n "$tokfile" ] || bad "no token found" \
	    "set VIVARIUM_SUPERVISOR_TOKEN, or VIVARIUM_TOKEN_FILE to the file named by" \
	    "token_file in the supervisor's config (make run and make install: /etc/vivarium/token)"
	tok=$(head -n 1 "$tokfile")
fi
tokwhere=${tokfile:-VIVARIUM_SUPERVISOR_TOKEN}

# 1. /health
code=$(curl -sS --max-time 5 -o "$TMP/body" -w '%{http_code}' "$URL/health" 2>"$TMP/err")
if [ $? -ne 0 ]; then
	bad "nothing answers at $URL ($(tr -d '\n' <"$TMP/err"))" \
	    "Is the supervisor running? \`make run\`, or \`systemctl status vivarium-supervisor\`." \
	    "Is VIVARIUM_URL its listen address (vivarium-supervisor -n prints it)?"
fi
[ "$code" = 200 ] || bad "$URL/health answered HTTP $code, not 200" \
    "Something else listens there: check the port in the supervisor's listen:."
ok "$URL/health answers"

# POST ONE-JSON-RPC-BODY: the reply's body in $TMP/body, the status printed.
mcp() {
	curl -sS --max-time "$2" -o "$TMP/body" -w '%{http_code}' \
	    -H 'Content-Type: application/json' \
	    -H 'Accept: application/json, text/event-stream' \
	    -H "Authorization: Bearer $tok" -H "X-User-ID: $USER_ID" \
	    --data-binary "$1" "$URL/mcp" 2>"$TMP/err"
}
# What the supervisor said, for the operator: its error message when it
# gave one, else the start of the body.
said() {
	sed -n 's/.*"message" *: *"\(\([^"\\]\|\\.\)*\)".*/\1/p' "$TMP/body" |
	    head -n 1 | sed 's/\\"/"/g' | grep . || head -c 300 "$TMP/body"
}

# 2. initialize
code=$(mcp '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"vivarium-smoke","version":"1"}}}' 90)
case "$code" in
200) ;;
401) bad "the supervisor refused the token (HTTP 401)" \
    "The token from $tokwhere is not the supervisor's: compare it with the file" \
    "its config names in token_file (or VIVARIUM_SUPERVISOR_TOKEN in its environment)." \
    "LibreChat needs the same value in its .env as VIVARIUM_TOKEN." ;;
000) bad "initialize got no answer ($(tr -d '\n' <"$TMP/err"))" \
    "The supervisor stopped answering; look at its log." ;;
*)	msg=$(said)
	case "$msg" in
	*"has no sandbox here"*)
		bad "the supervisor does not serve user \"$USER_ID\" (HTTP $code): $msg" \
		    "Its provisioning (allowlist or manual) leaves this user out: probe as a" \
		    "user it serves, VIVARIUM_SMOKE_USER=<user> make smoke, or add this one" \
		    "(users: in the config, or \`vivariumctl add-user $USER_ID\`)." ;;
	esac
	bad "initialize failed with HTTP $code: $msg" \
    "A 502/503 names the sandbox's trouble: is Podman running (podman.socket)," \
    "and is the image built (make image)? The supervisor's log says more." ;;
esac
grep -q '"serverInfo"' "$TMP/body" || bad "initialize answered without serverInfo: $(said)"
ok "initialize as user $USER_ID (token from $tokwhere)"

# 3. run_python: a cold start, then the code.
t0=$(date +%s)
code=$(mcp '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_python","arguments":{"code":"print(6 * 7)"}}}' 120)
t1=$(date +%s)
[ "$code" = 200 ] || bad "run_python failed with HTTP $code: $(said)" \
    "The sandbox could not be started or reached; the supervisor's log and" \
    "\`vivariumctl status $USER_ID\` say why."
if ! grep -q 'exit code: 0' "$TMP/body" || ! grep -q '42' "$TMP/body"; then
	bad "run_python ran but did not print 42: $(head -c 400 "$TMP/body")" \
	    "The sandbox's Python is broken: rebuild the image (make image FORCE=1)."
fi
ok "run_python printed 42 in $((t1 - t0)) s"
echo "smoke: all good: LibreChat can use $URL/mcp"
