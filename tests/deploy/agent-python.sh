#!/bin/sh
# tests/deploy/agent-python.sh: the standalone agent on a host says at start
# what its Python lacks, with the install line, and keeps serving.
#   - a python3 without the data stack (Debian's, started with -S: no
#     dist-packages) is named with each missing module and its package;
#     plain Python still runs;
#   - a runner that is not on VIVARIUM_PYTHONPATH is named;
#   - Debian's python3 with the test packages says nothing.
set -u
cd "$(dirname "$0")/../.."
. tests/deploy/lib.sh
BIN=${BIN:-bin}
D=$(mktemp -d /tmp/vapy.XXXXXX)
pid=""
trap '[ -z "$pid" ] || kill "$pid" 2>/dev/null; rm -rf "$D"' EXIT
mkdir -p "$D/ws" "$D/bin" "$D/empty"
printf '#!/bin/sh\nexec /usr/bin/python3 -S "$@"\n' >"$D/bin/python3"
chmod +x "$D/bin/python3"

# LOG [VAR=VALUE...]: start the agent, wait until it serves, log in $D/LOG.
agent() {
	_log=$1; shift
	port=$(t_port)
	env "$@" VIVARIUM_WORKDIR="$D/ws" VIVARIUM_HOST=127.0.0.1 \
	    VIVARIUM_PORT="$port" VIVARIUM_WARM=0 VIVARIUM_SWEEP=0 \
	    "$BIN/vivarium-agent" >"$D/$_log" 2>&1 &
	pid=$!
	t_wait_for "serving workspace" "$D/$_log" 20
}
stop() { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; pid=""; }

agent bare VIVARIUM_PYTHON="$D/bin/python3"
t_grep "a bare python3: named, with its version" "$D/bin/python3 (Python 3[.0-9]*) lacks" "$D/bare"
t_grep "... each module of the data stack" "lacks numpy, pandas, matplotlib, cloudpickle, PIL" "$D/bare"
t_grep "... and the install line" "apt-get install python3-numpy python3-pandas python3-matplotlib python3-cloudpickle python3-pil" "$D/bare"
t_grep "... and VIVARIUM_PYTHON" "or set VIVARIUM_PYTHON" "$D/bare"
curl -s --max-time 60 -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' \
    --data-binary '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_python","arguments":{"code":"print(6 * 7)"}}}' \
    "http://127.0.0.1:$port/mcp" >"$D/run"
t_grep "... and it keeps serving: plain Python runs" "exit code: 0.*42" "$D/run"
stop

agent norunner VIVARIUM_PYTHON=/usr/bin/python3 VIVARIUM_PYTHONPATH="$D/empty"
t_grep "a missing runner is named, with where to point" \
    "the runner (python package vivarium) is not where.*VIVARIUM_PYTHONPATH" "$D/norunner"
stop

agent full VIVARIUM_PYTHON=/usr/bin/python3
if grep -q "lacks\|not where" "$D/full"; then
	t_fail "Debian's python3 with the stack: no warning" "$(cat "$D/full")"
else
	t_ok "Debian's python3 with the stack: no warning"
fi
stop

t_done agent-python
