#!/bin/sh
# vivarium-egress-hosts [-w] DIR: writes DIR/host-addresses, the list of
# this host's addresses that the egress proxy refuses (its host_addresses).
# A proxy in a container sees only its own interfaces, yet the host answers
# on every address it has, its public one included; the proxy does not run
# without this list (docs/egress.md, "The host's addresses").
#
# The list: every address of every interface (`ip -o addr show`, loopback
# included), then $VIVARIUM_EGRESS_HOST_EXTRA, comma-separated addresses or
# CIDRs of the host on no interface (a public address the router forwards
# to it, which hairpin NAT makes reachable).  Written aside and renamed, so
# the proxy never reads half a file, and only when it changed; DIR is made
# mode 0755 and the file 0644 (the proxy runs as another uid).
#
#   -w   keep it current: write again whenever an address is added or
#        removed (ip monitor), and every 30 s in case a change was missed.
#        Runs until killed; vivarium-egress-hosts.service runs it so.
#   -h   this text
#
# Installed by make install as vivarium-egress-hosts; egress-proxy/
# the quadlet runs it before the proxy (with egress: manage the supervisor
# writes the list itself).
set -eu

usage() {
	echo "usage: vivarium-egress-hosts [-w] DIR" >&2
	exit 2
}

watch=0
case "${1:-}" in
-w) watch=1; shift ;;
-h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
-*) usage ;;
esac
[ $# -eq 1 ] && [ -n "$1" ] || usage
DIR=$1
EXTRA=${VIVARIUM_EGRESS_HOST_EXTRA:-}

say() { echo "vivarium-egress-hosts: $*" >&2; }

command -v ip >/dev/null 2>&1 ||
    { say "no ip(8) on this host (iproute2): cannot list its addresses"; exit 1; }
for a in $(printf '%s\n' "$EXTRA" | tr ',' ' '); do
	case "$a" in
	*[!0-9a-fA-F.:/]*|'') say "VIVARIUM_EGRESS_HOST_EXTRA: \"$a\" is not an address or CIDR"; exit 1 ;;
	esac
done

# One reading of the host's addresses into DIR/host-addresses; 0, or 1
# with the reason said (the file then stays as it was).
write_list() {
	mkdir -p "$DIR" && chmod 0755 "$DIR" || return 1
	tmp=$DIR/.host-addresses.$$
	if ! {
		echo "# the host's addresses, written by vivarium-egress-hosts"
		ip -o addr show | awk '{ sub("/.*", "", $4); print $4 }'
		printf '%s\n' "$EXTRA" | tr ',' '\n' | sed 's/^ *//; s/ *$//; /^$/d'
	} >"$tmp"; then
		rm -f "$tmp"
		say "could not write $tmp"
		return 1
	fi
	# A host always has an address (loopback at least): none means ip
	# failed, and an empty list would not be taken by the proxy anyway.
	if [ "$(grep -vc '^#' "$tmp")" -eq 0 ]; then
		rm -f "$tmp"
		say "ip -o addr show listed no address"
		return 1
	fi
	chmod 0644 "$tmp"
	if cmp -s "$tmp" "$DIR/host-addresses"; then
		rm -f "$tmp"	# unchanged: the proxy need not read it again
	else
		mv -f "$tmp" "$DIR/host-addresses"
	fi
}

write_list || exit 1
[ "$watch" = 1 ] || exit 0

# ip monitor prints a line at each address change, and is restarted every
# 30 s: each round writes the list as it starts and again at every change,
# so a change lost while it restarts waits 30 s at most.
while :; do
	timeout 30 ip -o monitor address 2>/dev/null | {
		write_list || :
		while read -r _; do
			write_list || :
		done
	}
done
