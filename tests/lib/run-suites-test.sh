#!/bin/sh
# tests/lib/run-suites-test.sh: the test-run-suites suite.  Runs
# scripts/run-suites on a Makefile of its own (suites that pass, fail, or
# wait for the background command) and checks what it prints and what it
# leaves: the summary, a failed suite's lines again at the end, the
# background command's end (ok, or failed with its output), a background
# command still running at the end stopped with its whole process group,
# and VIVARIUM_BUILD_AHEAD=0.  Needs nothing but sh, make and procps.
set -u
cd "$(dirname "$0")/../.." || exit 1
root=$PWD
d=$(mktemp -d "${TMPDIR:-/tmp}/vivarium-rs.XXXXXX") || exit 1
trap 'rm -rf "$d"' EXIT
fails=0 n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); echo "not ok $n - $*"; fails=$((fails + 1)); }
# has FILE TEXT WHAT: FILE holds the line TEXT (a fixed string).
has() {
	if grep -qxF -- "$2" "$1"; then ok "$3"; else notok "$3: no line '$2' in:"; sed 's/^/#   /' "$1" | head -n 30; fi
}

cat >"$d/Makefile" <<'EOF'
# Suites for tests/lib/run-suites-test.sh.
pass:
	@echo pass-line
fail:
	@echo fail-line-1; echo "not ok 1 - the broken thing"; echo after-not-ok; exit 1
# Waits until the background shell ($(D)/bg.pid) has ended.
waitbg:
	@i=0; while [ ! -s $(D)/bg.pid ] || kill -0 $$(cat $(D)/bg.pid) 2>/dev/null; do \
		i=$$((i + 1)); [ $$i -lt 600 ] || { echo "the background never ended"; exit 1; }; \
		sleep 0.1; done
EOF
rs() { VIVARIUM_FAIL_TAIL=5 "$root/scripts/run-suites" "$@" >"$d/out" 2>&1; }
M="make -s -C $d D=$d"

# Suites in turn, the failed one's lines and checks again at the end.
if rs "$M" pass fail pass; then notok "run-suites exits 0 when a suite failed"
else ok "run-suites exits non-zero when a suite failed"; fi
has "$d/out" "suites: 2 passed, 1 failed" "the summary counts suites"
has "$d/out" "failed suites: fail" "the failed suites are named"
has "$d/out" "---- the failed checks of fail" "a failed suite's checks are shown again"
[ "$(grep -c '^fail-line-1$' "$d/out")" = 2 ] && ok "a failed suite's output is shown again at the end" ||
    { notok "a failed suite's output is not shown twice"; sed 's/^/#   /' "$d/out"; }

# A background command that ends badly: said once, with its output.
rm -f "$d/bg.pid"
rs -b "echo \$\$ >$d/bg.pid; echo bg-output; exit 3" "$M" waitbg pass
rc=$?
[ "$rc" = 0 ] && ok "a failed background command does not fail the suites" ||
    notok "run-suites exited $rc over a failed background command"
has "$d/out" "bg-output" "the failed background command's output is shown"
if grep -q "^==== in the background: FAILED, exit 3 (" "$d/out" &&
    [ "$(grep -c '^==== in the background: ' "$d/out")" = 2 ]; then
	ok "the background command's failure is said once, with its exit status"
else
	notok "the background command's end is not said once:"; sed 's/^/#   /' "$d/out"
fi

# One that ends well.
rm -f "$d/bg.pid"
rs -b "echo \$\$ >$d/bg.pid" "$M" waitbg pass
if grep -q "^==== in the background: ok (" "$d/out" && ! grep -q FAILED "$d/out"; then
	ok "a background command that succeeded is said to be ok"
else
	notok "no ok for the background command:"; sed 's/^/#   /' "$d/out"
fi

# One still running when the suites end: stopped, with what it started.
rm -f "$d/bg.pid"
rs -b "echo \$\$ >$d/bg.pid; sleep 300 & sleep 300; wait" "$M" pass
has "$d/out" "==== in the background: still running, stopped" "a background command still running at the end is stopped"
pg=$(cat "$d/bg.pid" 2>/dev/null)
left=
i=0
while [ -n "$pg" ] && left=$(pgrep -g "$pg") && [ $i -lt 50 ]; do
	i=$((i + 1)); sleep 0.1
done
if [ -z "$pg" ]; then
	notok "the background command never ran"
elif [ -n "$left" ]; then
	notok "processes of the background command outlived the run: $left"
	kill -- "-$pg" 2>/dev/null
else
	ok "no process of the background command is left (process group $pg)"
fi

# Turned off.
rm -f "$d/bg.pid"
VIVARIUM_BUILD_AHEAD=0 rs -b "echo \$\$ >$d/bg.pid" "$M" pass
if [ ! -e "$d/bg.pid" ] && ! grep -q "in the background" "$d/out"; then
	ok "VIVARIUM_BUILD_AHEAD=0 runs no background command"
else
	notok "VIVARIUM_BUILD_AHEAD=0 still ran the background command"
fi

echo "1..$n"
[ "$fails" = 0 ]
