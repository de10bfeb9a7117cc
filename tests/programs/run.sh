#!/bin/sh
# tests/programs/run.sh BINDIR VERSION: the four programs take their options
# alike.  -h/--help: the usage on stdout, exit 0; -V/--version: "NAME
# VERSION", exit 0; a bad option or argument: the usage on stderr, exit 2;
# every usage in one layout (usage: line, Options:, the same -h and -V
# lines).  And -n checks what start-up checks: a listen address start-up
# would refuse fails the check.
bin=${1:?usage: run.sh BINDIR VERSION}
version=${2:?usage: run.sh BINDIR VERSION}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0

ok() { pass=$((pass + 1)); echo "ok      $1"; }
bad() { fail=$((fail + 1)); echo "FAILED  $1" >&2; }

# run NAME ARGS...: status in $rc, output in $tmp/out and $tmp/err
run() {
	prog=$1
	shift
	"$bin/$prog" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}

# FILE NAME: the layout every usage follows (on stderr, after getopt's
# own line saying what was wrong).
check_usage() {
	grep -q "^usage: $2 \[-h[a-zA-Z]*\]" "$1" &&
	grep -qx 'Options:' "$1" &&
	grep -qx '  -h, --help     print this text and exit' "$1" &&
	grep -qx '  -V, --version  print the version and exit' "$1"
}

for p in vivarium-agent vivarium-supervisor vivariumctl vivarium-egress; do
	for h in -h --help; do
		run $p $h
		if [ $rc = 0 ] && check_usage "$tmp/out" $p && [ ! -s "$tmp/err" ]
		then ok "$p $h"
		else bad "$p $h: exit $rc, $(head -c 200 "$tmp/out" "$tmp/err")"
		fi
	done
	for v in -V --version; do
		run $p $v
		if [ $rc = 0 ] && [ "$(cat "$tmp/out")" = "$p $version" ]
		then ok "$p $v"
		else bad "$p $v: exit $rc, '$(cat "$tmp/out")'"
		fi
	done
	for o in -Z --bogus; do
		run $p $o
		if [ $rc = 2 ] && [ ! -s "$tmp/out" ] && check_usage "$tmp/err" $p
		then ok "$p $o exits 2 with the usage on stderr"
		else bad "$p $o: exit $rc, $(head -c 200 "$tmp/err")"
		fi
	done
done
# vivariumctl takes a command; the others take no operand.
for p in vivarium-agent vivarium-supervisor vivarium-egress; do
	run $p stray
	if [ $rc = 2 ] && check_usage "$tmp/err" $p
	then ok "$p stray exits 2"
	else bad "$p stray: exit $rc"
	fi
done
run vivariumctl
if [ $rc = 2 ] && check_usage "$tmp/err" vivariumctl
then ok "vivariumctl without a command exits 2"
else bad "vivariumctl without a command: exit $rc"
fi

# -n: only the variables set here.
clean() { env -i PATH="$PATH" "$@"; }
printf 'token: 0123456789abcdef0123\nstate_dir: %s/state\n' "$tmp" \
    >"$tmp/sv.yaml"
for listen in nonsense:xyz localhost:8787 127.0.0.1:0 127.0.0.1; do
	clean VIVARIUM_SUPERVISOR_LISTEN=$listen \
	    "$bin/vivarium-supervisor" -n -f "$tmp/sv.yaml" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ $rc = 1 ] && grep -q "VIVARIUM_SUPERVISOR_LISTEN=\"$listen\"" "$tmp/err"
	then ok "vivarium-supervisor -n refuses listen $listen"
	else bad "vivarium-supervisor -n with listen $listen: exit $rc"
	fi
	clean VIVARIUM_EGRESS_LISTEN=$listen VIVARIUM_EGRESS_HOST_ADDRESSES=none \
	    "$bin/vivarium-egress" -n >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ $rc = 1 ] && grep -q "VIVARIUM_EGRESS_LISTEN=\"$listen\"" "$tmp/err"
	then ok "vivarium-egress -n refuses listen $listen"
	else bad "vivarium-egress -n with listen $listen: exit $rc"
	fi
done
clean VIVARIUM_SUPERVISOR_LISTEN='[::1]:8787' "$bin/vivarium-supervisor" -n \
    -f "$tmp/sv.yaml" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc = 0 ] && grep -q 'configuration OK.*listen ::1:8787' "$tmp/out"
then ok "vivarium-supervisor -n takes [::1]:8787"
else bad "vivarium-supervisor -n with [::1]:8787: exit $rc $(cat "$tmp/err")"
fi
clean VIVARIUM_EGRESS_LISTEN='127.0.0.1:3128,[::1]:3128' \
    VIVARIUM_EGRESS_HOST_ADDRESSES=none "$bin/vivarium-egress" -n >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc = 0 ] && grep -q 'configuration OK' "$tmp/out"
then ok "vivarium-egress -n takes 127.0.0.1:3128,[::1]:3128"
else bad "vivarium-egress -n with two listeners: exit $rc $(cat "$tmp/err")"
fi

echo "programs: $pass passed, $fail failed"
[ $fail = 0 ]
