#!/bin/sh
# tests/deploy/run-smoke.sh: `make run` (supervisor/run.sh) against the
# tests' private Podman prints what to paste into LibreChat, and what it
# prints works: `make smoke` (supervisor/smoke.sh) with that URL and token
# passes; with a wrong token, a dead port or a user the config refuses it
# fails and says what to do.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/podman.sh
. tests/deploy/lib.sh
vp_start || exit 1

D=$(mktemp -d /tmp/vdeploy.XXXXXX)
STATE=/run/vdp-$$
port=$(t_port)
user=$(vp_name smoke)
# No token here: run.sh makes one in VIVARIUM_TOKEN_FILE and hands it over.
cat >"$D/supervisor.yaml" <<YAML
listen: 127.0.0.1:$port
state_dir: $STATE
image: $(t_image)
provisioning: allowlist
users:
  $user:
YAML
runpid=""
cleanup() {
	if [ -n "$runpid" ]; then
		kill -TERM "$runpid" 2>/dev/null
		wait "$runpid" 2>/dev/null
	fi
	VIVARIUM_SUPERVISOR_TOKEN=0123456789abcdef0123 bin/vivariumctl \
	    -f "$D/supervisor.yaml" remove-user --purge "$user" >/dev/null 2>&1
	rm -rf "$D" "$STATE"
}
vp_on_exit cleanup

env VIVARIUM_TOKEN_FILE="$D/token" VIVARIUM_EGRESS=0 VIVARIUM_RUN_DIR="$D/run" \
    VIVARIUM_SUPERVISOR_CONFIG="$D/supervisor.yaml" BIN=bin \
    supervisor/run.sh >"$D/out" 2>"$D/err" &
runpid=$!
if ! t_wait_for '^=====.*=====$' "$D/out" 60 || ! t_wait_for 'make smoke' "$D/out" 5; then
	t_fail "make run prints the paste block" "$(cat "$D/err" "$D/out")"
	t_done run-smoke
	exit 1
fi
t_ok "make run prints the paste block"
t_check "the token file was made, mode 0600" \
    test "$(stat -c %a "$D/token")" = 600 -a -s "$D/token"
tok=$(cat "$D/token")
t_grep ".env line carries the token file's token" "^VIVARIUM_TOKEN=$tok\$" "$D/out"
t_grep "the MCP URL is the listen address" "url: http://127.0.0.1:$port/mcp\$" "$D/out"
t_grep "allowedAddresses names host:port" "^    - \"127.0.0.1:$port\"\$" "$D/out"
t_grep "the entry sends the token from .env" 'Authorization: "Bearer ${VIVARIUM_TOKEN}"' "$D/out"
t_grep "the entry sends the user id" 'X-User-ID: "{{LIBRECHAT_USER_ID}}"' "$D/out"
t_grep "... and the user's name, for people" 'X-User-Name: "{{LIBRECHAT_USER_EMAIL}}"' "$D/out"
t_grep "loopback: says how to serve a LibreChat container" \
    "VIVARIUM_SUPERVISOR_LISTEN=0.0.0.0:$port make run" "$D/out"
t_grep "says to restart LibreChat" "restart LibreChat" "$D/out"
t_grep "... and to pick the server in a chat or an agent" "MCP servers menu.*agent" "$D/out"
t_grep "says where file links point and that loopback is this machine only" \
    "public_url" "$D/out"
t_grep "... with the default it would use" "default, http://127.0.0.1:$port, opens only" "$D/out"
t_grep "names make smoke with the URL" "make smoke VIVARIUM_URL=http://127.0.0.1:$port" "$D/out"

# The block is valid YAML with what LibreChat needs (python3-yaml when
# present; the stack of the test group has no yaml module otherwise).
sed -n '/^mcpServers:/,/^$/p' "$D/out" | head -n 20 >"$D/entry.yaml"
if python3 -c 'import yaml' 2>/dev/null; then
	t_check "the entry parses as YAML" python3 -c '
import sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
v = d["mcpServers"]["vivarium"]
assert v["type"] == "streamable-http" and v["requiresOAuth"] is False, v
assert d["mcpSettings"]["allowedAddresses"] == ["127.0.0.1:" + sys.argv[2]], d
' "$D/entry.yaml" "$port"
fi

smoke() { env -u VIVARIUM_SUPERVISOR_TOKEN VIVARIUM_SMOKE_USER="$user" "$@" supervisor/smoke.sh; }
if smoke VIVARIUM_URL="http://127.0.0.1:$port" VIVARIUM_TOKEN_FILE="$D/token" >"$D/smoke" 2>&1; then
	t_ok "make smoke passes with the printed URL and token"
else
	t_fail "make smoke passes with the printed URL and token" "$(cat "$D/smoke" "$D/err")"
fi
t_grep "smoke reports each probe" "ok    run_python printed 42" "$D/smoke"

echo wrong-token-wrong-token >"$D/bad"
smoke VIVARIUM_URL="http://127.0.0.1:$port" VIVARIUM_TOKEN_FILE="$D/bad" >"$D/smoke" 2>&1
t_check "smoke fails with a wrong token" test $? = 1
t_grep "... and says the token is refused, and where it came from" \
    "refused the token.*\|$D/bad" "$D/smoke"
t_grep "... and where LibreChat needs it" "VIVARIUM_TOKEN" "$D/smoke"

VIVARIUM_SMOKE_USER=not-listed env -u VIVARIUM_SUPERVISOR_TOKEN VIVARIUM_URL="http://127.0.0.1:$port" \
    VIVARIUM_TOKEN_FILE="$D/token" supervisor/smoke.sh >"$D/smoke" 2>&1
t_check "smoke fails for a user the config refuses" test $? = 1
t_grep "... and names the user" 'does not serve user "not-listed"' "$D/smoke"
t_grep "... and how to add one" 'vivariumctl add-user not-listed' "$D/smoke"

dead=$(t_port)
smoke VIVARIUM_URL="http://127.0.0.1:$dead" VIVARIUM_TOKEN_FILE="$D/token" >"$D/smoke" 2>&1
t_check "smoke fails when nothing listens" test $? = 1
t_grep "... and asks whether the supervisor runs" "Is the supervisor running" "$D/smoke"

smoke VIVARIUM_URL="http://127.0.0.1:$port" VIVARIUM_TOKEN_FILE="$D/none" HOME="$D" >"$D/smoke" 2>&1
rc=$?
if [ ! -r /etc/vivarium/token ] && [ ! -r /var/lib/vivarium/token ]; then
	t_check "smoke without any token fails" test $rc = 1
	t_grep "... and says where a token comes from" "no token found" "$D/smoke"
fi

t_done run-smoke
