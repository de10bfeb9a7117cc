#!/bin/sh
# tests/bench/run.sh MAKE [BENCH...]: the test-bench suite.  Runs every
# benchmark (or those named) once in its short mode (VIVARIUM_BENCH_SHORT=1:
# one round, tiny sizes), so that a benchmark that breaks is seen at the
# next make test, not months later.  A benchmark fails here when it exits non-zero, when it does not
# print each of its figure lines (the table below), or when a figure is
# not a number.  A missed target is not a failure: short runs measure
# nothing worth a target, and the benchmarks print them anyway.  TAP on
# stdout, each benchmark's output as comments.
set -u
cd "$(dirname "$0")/../.." || exit 1
make=${1:-make}
[ $# -gt 0 ] && shift
export VIVARIUM_BENCH_SHORT=1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vivarium-test-bench.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

# Each benchmark, then the lines (extended regexps) its output must have:
# one per figure it prints, so that a benchmark cut short shows.
figures() {
	case "$1" in
	bench-namespace) cat <<'EOF'
^  store round trip +[0-9.]+ ms
^  naive round trip +[0-9.]+ ms
^  target: store round trip <= [0-9]+ ms: (met|MISSED)$
EOF
	;;
	bench-images) cat <<'EOF'
^chart\.png .*\| [0-9]+x[0-9]+ +[0-9]+ +[0-9.]+ palette
^total returned: before [0-9]+ bytes, after [0-9]+ bytes
EOF
	;;
	bench-run) cat <<'EOF'
^print\(1\) +[0-9.]+ +[0-9.]+ +[0-9.]+x +[0-9]+x
^print\(df\.shape\).* +[0-9.]+ +[0-9.]+ +[0-9.]+x +[0-9]+x
^print\(1\), pd/np/plt.* +[0-9.]+ +[0-9.]+ +[0-9.]+x +[0-9]+x
EOF
	;;
	bench-egress) cat <<'EOF'
^vivarium-egress +[0-9]+ \[
^CONNECT rate vivarium/tinyproxy: +[0-9.]+x
^tunnel throughput vivarium/direct: +[0-9]+%
^memory per idle tunnel: +[0-9.]+ KB
EOF
	;;
	bench-supervisor) cat <<'EOF'
^\(a\) a new user's first call .* p50 [0-9.]+ ms .* added p50 -?[0-9.]+ ms .*target within 300 ms: (met|MISSED)$
^\(b\) warm run_python.* p50 [0-9.]+ ms .* paired differences -?[0-9.]+ ms; target 1 ms: (met|MISSED)$
^\(c\) a returning user's .* p50 [0-9.]+ ms .* added p50 -?[0-9.]+ ms .*target within 150 ms: (met|MISSED)$
^\(d\) .*: [1-9][0-9]* ok, [0-9]+ errors, [0-9]+ requests/s
EOF
	;;
	bench-files) cat <<'EOF'
^\(a\) upload .* ratio [0-9]+%; target
^\(b\) download .* ratio [0-9]+%; target
^\(d\) loopback ceiling: .* [0-9]+ MiB/s .*supervisor is [0-9]+% of it$
^\(e\) upload ceiling: .* [0-9]+ MiB/s .* [0-9]+% of the direct write; .*supervisor is [0-9]+% of it$
^\(c\) memory during the upload: .*peak
^\(c\) memory during the download: .*peak
^\(f\) CPU time per transfer \(medians\): upload supervisor [0-9.]+ s, agent [0-9.]+ s; download supervisor [0-9.]+ s, agent [0-9.]+ s$
EOF
	;;
	bench-gvisor) cat <<'EOF'
^\(a\) cold first call.* runsc/runc [0-9.]+$
^\(b\) warm run_python.* runsc/runc [0-9.]+$
^\(c\) import pandas.* runsc/runc [0-9.]+$
EOF
	;;
	*)	echo '[0-9]' ;;	# one not listed here: a number at least
	esac
}

[ $# -gt 0 ] || set -- bench-namespace bench-images bench-run bench-egress \
    bench-supervisor bench-files bench-gvisor
n=0 failed=0
for b; do
	n=$((n + 1))
	if [ "$b" = bench-gvisor ] && [ ! -x /usr/bin/runsc ]; then
		echo "ok $n - $b # SKIP runsc is not installed (scripts/deps gvisor)"
		continue
	fi
	log=$tmp/$b.log
	start=$(date +%s)
	$make --no-print-directory "$b" >"$log" 2>&1
	rc=$?
	secs=$(( $(date +%s) - start ))
	sed 's/^/# /' "$log"
	why=""
	if [ "$rc" != 0 ]; then
		why="exit status $rc"
	elif grep -Eqw 'NaN|Infinity|undefined' "$log"; then
		why="a figure is not a number: $(grep -Ew 'NaN|Infinity|undefined' "$log" | head -n 1)"
	else
		why=$(figures "$b" | while IFS= read -r re; do
			grep -Eq -- "$re" "$log" || { echo "no line matches /$re/"; break; }
		done)
	fi
	if [ -z "$why" ]; then
		echo "ok $n - $b (${secs}s)"
	else
		failed=$((failed + 1))
		echo "not ok $n - $b (${secs}s): $why"
		tail -n 8 "$log" | sed 's/^/#   /'
	fi
done
echo "1..$n"
[ "$failed" = 0 ]
