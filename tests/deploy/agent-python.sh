#!/bin/sh
# tests/deploy/agent-python.sh: the standalone agent on a host says at start
# what its Python lacks, with the install line, and keeps serving.
#   - a python3 without the data stack (Debian's, started with -S: no
#     dist-packages) is named with each missing module and its package;
#     plain Python still runs;
#   - a runner that is not on VIVARIUM_PYTHONPATH is named;
#   - Debian's python3 with the test packages says nothing;
#   - the answer kept in VIVARIUM_PYCHECK_CACHE (as the image does) is
#     used without starting Python while it answers for that interpreter,
#     PYTHONPATH and question, and asked again otherwise.
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

# A python3 that counts its starts, for the kept answer.
printf '#!/bin/sh\necho x >>"%s/starts"\nexec /usr/bin/python3 "$@"\n' "$D" \
    >"$D/bin/counted"
chmod +x "$D/bin/counted"
starts() { [ -f "$D/starts" ] && wc -l <"$D/starts" | tr -d ' ' || echo 0; }
C="$D/pycheck"
VIVARIUM_WORKDIR="$D/ws" VIVARIUM_PYTHON="$D/bin/counted" \
    VIVARIUM_PYCHECK_CACHE="$C" "$BIN/vivarium-agent" --pycheck >"$D/ask" 2>&1
t_eq "--pycheck: exit 0 with the stack there" "$?" 0
t_grep "... prints the instructions' line" "^Installed: pandas, numpy, matplotlib" "$D/ask"
t_eq "... asked Python once" "$(starts)" 1
t_grep "... and kept the answer, with its key" "^vivarium-pycheck 1 [0-9a-f]\{16\}$" "$C"
agent kept VIVARIUM_PYTHON="$D/bin/counted" VIVARIUM_PYCHECK_CACHE="$C"
t_eq "a start with the kept answer starts no Python" "$(starts)" 1
stop
agent otherpath VIVARIUM_PYTHON="$D/bin/counted" VIVARIUM_PYCHECK_CACHE="$C" \
    PYTHONPATH="$D/empty"
t_eq "another PYTHONPATH asks again" "$(starts)" 2
stop
printf 'vivarium-pycheck 1 0000000000000000\n|3\n' >"$C"
agent stale VIVARIUM_PYTHON="$D/bin/counted" VIVARIUM_PYCHECK_CACHE="$C"
t_eq "another key asks again" "$(starts)" 3
stop
t_grep "... and keeps the new answer" "|3\\.[0-9]" "$C"
agent kept2 VIVARIUM_PYTHON="$D/bin/counted" VIVARIUM_PYCHECK_CACHE="$C"
t_eq "... used by the next start" "$(starts)" 3
stop
VIVARIUM_WORKDIR="$D/ws" VIVARIUM_PYTHON="$D/bin/python3" \
    "$BIN/vivarium-agent" --pycheck >"$D/ask2" 2>&1
t_eq "--pycheck: exit 1 without the data stack" "$?" 1

t_done agent-python
