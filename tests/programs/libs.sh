#!/bin/sh
# tests/programs/libs.sh BINDIR: each program loads exactly the libraries
# its own code calls (its ELF NEEDED entries; libc's own libm aside), no
# more.  The programs link
# common/ and the supervisor's backends as archives, so a library comes in
# only with a module that calls it: the egress proxy faces the internet and
# has no business loading libmicrohttpd, jansson or GnuTLS, and vivariumctl
# serves no HTTP.  A sanitizer build's own runtimes are left out.
bin=${1:?usage: libs.sh BINDIR}
fail=0

# PROGRAM: its libraries, sorted, sonames without versions.
expect() {
	case $1 in
	vivarium-agent)      echo "c jansson microhttpd png16" ;;
	vivarium-egress)     echo "c yaml-0" ;;
	vivarium-supervisor) echo "c curl jansson microhttpd yaml-0" ;;
	vivariumctl)         echo "c curl jansson yaml-0" ;;
	esac
}

for prog in vivarium-agent vivarium-egress vivarium-supervisor vivariumctl; do
	[ -x "$bin/$prog" ] || { echo "FAILED  $bin/$prog: not built" >&2; fail=1; continue; }
	got=$(readelf -d "$bin/$prog" | sed -n 's/.*(NEEDED).*\[lib\([^]]*\)\.so[.0-9]*\]/\1/p' |
	    grep -v -E '^(asan|ubsan|stdc\+\+|gcc_s|m|pthread|dl|rt)$' | sort | tr '\n' ' ' |
	    sed 's/ $//')
	want=$(expect "$prog")
	if [ "$got" = "$want" ]; then
		echo "ok      $prog loads $want"
	else
		echo "FAILED  $prog loads '$got', should load '$want' (each program links only what it calls: see its module.mk)" >&2
		fail=1
	fi
done
exit $fail
