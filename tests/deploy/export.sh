#!/bin/sh
# tests/deploy/export.sh: vivariumctl export / import round-trip a user's
# workspace with its namespace store, against the tests' Podman: what user
# A's runs left (a file, a variable, an import) is what user B's next run
# starts with after `export A | import B`.  Import refuses a user who has a
# workspace unless --replace (which really replaces), refuses input that is
# not a tar before changing anything, and export names an unknown user.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/podman.sh
. tests/deploy/lib.sh
BIN=${BIN:-bin}
vp_start || exit 1
D=$(mktemp -d /tmp/vexp.XXXXXX)
STATE=/run/vde-$$
tag=$(vp_name x)
A=$tag-a B=$tag-b C=$tag-c
cat >"$D/sv.yaml" <<YAML
token: 0123456789abcdef0123
state_dir: $STATE
image: $(t_image)
YAML
ctl() { "$BIN/vivariumctl" -f "$D/sv.yaml" "$@"; }
cleanup() {
	ctl remove-user --purge "$A" "$B" "$C" >/dev/null 2>&1
	rm -rf "$D" "$STATE"
}
vp_on_exit cleanup

# USER CODE: run_python on the user's agent socket; the text in $D/run.
run() {
	python3 -c 'import json,sys; print(json.dumps({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_python","arguments":{"code":sys.argv[1]}}}))' "$2" >"$D/req"
	curl -s --max-time 120 --unix-socket "$STATE/users/$1/agent.sock" \
	    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
	    --data-binary @"$D/req" http://d/mcp |
	    python3 -c 'import json,sys; t=sys.stdin.read(); t=[l[5:] for l in t.splitlines() if l.startswith("data:")][-1] if t.startswith("event") or "data:" in t[:20] else t; print("\n".join(c.get("text","") for c in json.loads(t)["result"]["content"]))' >"$D/run" 2>&1
}

t_check "add-user A" ctl add-user "$A"
run "$A" 'import statistics as st
x = 41
open("notes.txt", "w").write("kept")'
t_grep "A's run worked" "exit code: 0" "$D/run"

ctl export "$A" >"$D/a.tar" 2>"$D/err"
t_check "export A exits 0" test $? = 0
tar -tf "$D/a.tar" >"$D/list" 2>&1
t_grep "the tar holds A's file" "notes.txt" "$D/list"
t_grep "... and the namespace store" ".vivarium/namespace.store" "$D/list"

ctl import "$B" <"$D/a.tar" >"$D/out" 2>&1
t_check "import into a new user B exits 0" test $? = 0
t_grep "... and says so" "workspace imported" "$D/out"
run "$B" 'print(x + 1, open("notes.txt").read(), st.mean([1, 3]))'
t_grep "B's first run has A's variable, file and import" "42 kept 2" "$D/run"
t_grep "... restored from the store" "namespace: restored" "$D/run"
run "$B" 'open("mine.txt", "w").write("b")'
t_grep "B may write its imported workspace" "exit code: 0" "$D/run"

ctl import "$B" <"$D/a.tar" >"$D/out" 2>&1
t_check "import over B's workspace is refused" test $? = 1
t_grep "... saying why and what --replace does" "already has a sandbox.*--replace" "$D/out"
run "$B" 'import os; print(sorted(f for f in os.listdir(".") if not f.startswith(".")))'
t_grep "... and B is untouched" "\['mine.txt', 'notes.txt'\]" "$D/run"

ctl import --replace "$B" <"$D/a.tar" >"$D/out" 2>&1
t_check "import --replace exits 0" test $? = 0
run "$B" 'import os; print(sorted(f for f in os.listdir(".") if not f.startswith(".")), x)'
t_grep "--replace replaces: B's own file is gone, A's state is there" "\['notes.txt'\] 41" "$D/run"

echo "not a tar at all" | ctl import "$C" >"$D/out" 2>&1
t_check "import of something that is not a tar fails" test $? = 1
t_grep "... saying so" "not a tar file" "$D/out"
ctl status "$C" >/dev/null 2>&1
t_check "... before making the user" test $? = 3
size=$(stat -c %s "$D/a.tar")
head -c $((size / 2)) "$D/a.tar" | ctl import "$C" >"$D/out" 2>&1
t_check "a cut-off tar fails" test $? = 1
t_grep "... saying it ends early and what to do" "ends early.*import --replace" "$D/out"
# One bit of the last member's header (its mode field) flipped.
python3 -c 'import sys, tarfile
off = tarfile.open(sys.argv[1]).getmembers()[-1].offset
b = bytearray(open(sys.argv[1], "rb").read()); b[off + 100] ^= 1
sys.stdout.buffer.write(b)' \
    "$D/a.tar" >"$D/bad.tar"
ctl import --replace "$C" <"$D/bad.tar" >"$D/out" 2>&1
t_check "a corrupt header fails" test $? = 1
t_grep "... saying where" "corrupt at byte" "$D/out"

ctl export "$tag-nobody" >"$D/none.tar" 2>"$D/out"
t_check "export of an unknown user exits 3" test $? = 3
t_grep "... naming it" "no such user" "$D/out"

t_done export
