#!/bin/sh
# tests/egress/libs.sh PROGRAM...: fails when an egress proxy binary loads a
# library it never calls.  The proxy faces the internet; libmicrohttpd,
# jansson and GnuTLS (which libmicrohttpd pulls in) are the agent's and
# the supervisor's, and came along when every program linked all of
# common/.  The common/ archive keeps them out; this keeps it that way.
fail=0
for prog in "$@"; do
	libs=$(ldd "$prog") || { echo "FAILED: ldd $prog" >&2; exit 1; }
	bad=$(printf '%s\n' "$libs" | grep -E 'lib(microhttpd|jansson|gnutls)' |
	    awk '{ print $1 }' | tr '\n' ' ')
	if [ -n "$bad" ]; then
		echo "FAILED: $prog loads $bad(see egress-proxy/module.mk)" >&2
		fail=1
	else
		echo "ok: $prog loads no libmicrohttpd, jansson or gnutls"
	fi
done
exit $fail
