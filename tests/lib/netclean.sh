#!/bin/sh
# tests/lib/netclean.sh: deletes what dead test containers left on the host
# in the tests' own subnet pool ($VP_SUBNET_POOL, 10.213.0.0/16), before
# `make test` runs its suites.
#
# A container that dies without Podman's cleanup (its conmon killed when a
# session ends, or restarted by its policy while it has a user namespace:
# Podman 4.3.1) never has its network torn down.  Its network namespace
# stays mounted in /run/netns, with a veth on its network's bridge, the
# bridge keeps its address and route, and netavark's iptables rules for
# the subnet stay.  On a machine that runs the tests day after day these
# pile up: the host's address list grows, and a later network given the
# same subnet (or the same name: netavark names its chain after the
# network) meets a stale MASQUERADE rule that rewrites traffic between two
# containers on one bridge, which then never connects.
#
# Only when nothing of the tests runs (no container of the tests' storage
# whose process lives, no service on it), and only what is the tests':
#   - containers of the tests' storage that show as running but whose
#     process is gone (removed: Podman then tears their network down);
#   - networks of the tests' storage that no container uses (prune);
#   - network namespaces named netns-* with no process and an address in
#     the pool;
#   - bridges with an address in the pool, no port left, and not the
#     bridge of a network in $VP_ROOT/networks;
#   - in the nat table, POSTROUTING's jumps for pool subnets and the
#     NETAVARK-<hash> chains they lead to, and NETAVARK_FORWARD's rules
#     for pool subnets (netavark adds them again at the next start).
# Root only; anything else is left alone.  Prints what it deletes.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/podman.sh

[ "$(id -u)" = 0 ] || exit 0
command -v ip >/dev/null 2>&1 || exit 0
vp_env >/dev/null 2>&1 || exit 0
pool=${VP_SUBNET_POOL%.*.*}.	# "10.213."
case $pool in
*[!0-9.]*|.) echo "netclean: VP_SUBNET_POOL=$VP_SUBNET_POOL: not a /16 base; nothing done" >&2; exit 0 ;;
esac
re=$(printf '%s' "$pool" | sed 's/\./\\./g')	# for sed and grep
say() { echo "netclean: $*"; }
in_pool() { case $1 in "$pool"*) return 0 ;; esac; return 1; }

if ps -eo args 2>/dev/null | grep -q "^podman .*--root $VP_ROOT/storage .*system service"; then
	say "a Podman service of the tests runs: nothing done"
	exit 0
fi
# A container whose conmon was killed still shows as running.  Removing it
# is what tears its network down, as Podman would have; one whose process
# lives is a test running now.
dead=
for id in $(vpodman ps -a -q 2>/dev/null); do
	# status pid name (a name has no blank or colon)
	# shellcheck disable=SC2046
	set -- $(vpodman inspect --format '{{.State.Status}} {{.State.Pid}} {{.Name}}' "$id" 2>/dev/null)
	case ${1:-} in		# empty: gone meanwhile
	running|stopping|paused) ;;
	*) continue ;;	# created, exited: no process, no network
	esac
	# A zombie is dead too (PID 1 may not reap what conmon left).
	if [ "${2:-0}" -gt 0 ] && [ -r "/proc/$2/stat" ] &&
	    [ "$(sed 's/.*) \(.\).*/\1/' "/proc/$2/stat")" != Z ]; then
		say "containers of the tests run: nothing done"
		exit 0
	fi
	dead="$dead $id:$3"
done
for d in $dead; do
	id=${d%%:*} name=${d#*:}
	# The first try can fail while Podman's state still says running
	# ("could not be stopped ... state improper"); it fixes the state.
	if vpodman rm -f -t 0 "$id" >/dev/null 2>&1 ||
	    { sleep 1; err=$(vpodman rm -f -t 0 "$id" 2>&1 >/dev/null); }; then
		say "removed test container $name (its process was gone)"
	else
		say "could not remove test container $name: $(printf '%s\n' "$err" | tail -n 1)"
	fi
done
# Networks no container uses: every test removes its own at exit, so
# these are from killed runs, each holding a subnet of the pool (256).
# The default network (vivarium-test) is never pruned.
for n in $(vpodman network prune -f 2>/dev/null); do
	say "removed network $n (no container used it)"
done

# Network namespaces.
gone=0
for f in /run/netns/netns-*; do
	[ -e "$f" ] || continue
	ns=${f##*/}
	[ -z "$(ip netns pids "$ns" 2>/dev/null)" ] || continue
	addr=$(ip -n "$ns" -o -4 addr show 2>/dev/null | awk '$2 != "lo" { sub("/.*", "", $4); print $4; exit }')
	[ -n "$addr" ] && in_pool "$addr" || continue
	ip netns delete "$ns" 2>/dev/null || continue
	say "deleted network namespace $ns ($addr)"
	gone=$((gone + 1))
done
# The kernel frees a namespace, and its veths, a moment later.
[ "$gone" = 0 ] || sleep 1

# Bridges.  Their veths went with the namespaces (once nothing holds them).
live=$(sed -n 's/.*"network_interface": *"\([^"]*\)".*/\1/p' "$VP_ROOT"/networks/*.json 2>/dev/null)
ip -o -4 addr show 2>/dev/null | awk '{ sub("/.*", "", $4); print $2, $4 }' |
    while read -r dev addr; do
	in_pool "$addr" || continue
	printf '%s\n' "$live" | grep -qx "$dev" && continue
	ip -d link show "$dev" 2>/dev/null | grep -q ' bridge ' || continue
	[ -z "$(ip -o link show master "$dev" 2>/dev/null)" ] || continue
	ip link delete "$dev" 2>/dev/null && say "deleted bridge $dev ($addr)"
done

# iptables (absent on some hosts: then there is nothing to do).
command -v iptables >/dev/null 2>&1 || exit 0
iptables -t nat -S POSTROUTING 2>/dev/null |
    sed -n "s/^-A POSTROUTING -s \\(${re}[0-9.]*\\/[0-9]*\\) -j \\(NETAVARK-[0-9A-F]*\\)\$/\\1 \\2/p" |
    while read -r net chain; do
	iptables -t nat -D POSTROUTING -s "$net" -j "$chain" 2>/dev/null &&
	    say "deleted nat POSTROUTING -s $net -j $chain"
done
# Chains no rule jumps to any more.
for chain in $(iptables -t nat -S 2>/dev/null | sed -n 's/^-N \(NETAVARK-[0-9A-F]\{13\}\)$/\1/p'); do
	iptables -t nat -S 2>/dev/null | grep -q -- "-j $chain\$" && continue
	# Only a chain of pool subnets (its ACCEPT lines name them).
	iptables -t nat -S "$chain" 2>/dev/null | grep -- '-d [0-9].* -j ACCEPT$' |
	    grep -v -- "-d $re" | grep -q . && continue
	iptables -t nat -F "$chain" 2>/dev/null && iptables -t nat -X "$chain" 2>/dev/null &&
	    say "deleted nat chain $chain"
done
iptables -S NETAVARK_FORWARD 2>/dev/null |
    sed -n "s/^-A NETAVARK_FORWARD \\(.*-[sd] $re.*\\)\$/\\1/p" |
    while read -r rule; do
	# shellcheck disable=SC2086
	eval "iptables -D NETAVARK_FORWARD $rule" 2>/dev/null &&
	    say "deleted NETAVARK_FORWARD $rule"
done
exit 0
