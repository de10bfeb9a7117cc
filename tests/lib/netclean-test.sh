#!/bin/sh
# tests/lib/netclean-test.sh: the test-netclean suite.  Makes on the host
# what a dead container leaves (a network namespace with a veth on a
# bridge, nat and forward rules) once inside the tests' subnet pool and
# once outside it, plus a namespace in the pool that a process still uses;
# in the tests' storage, a container killed with its conmon and a network
# no container uses; runs tests/lib/netclean.sh, and checks that exactly
# the pool's dead state went.  Everything is named uniquely and removed at
# exit; no traffic is sent.
set -u
cd "$(dirname "$0")/../.." || exit 1
if [ "$(id -u)" != 0 ]; then
	echo "test-netclean: needs root (network namespaces, iptables); skipped"
	exit 0
fi
. tests/lib/podman.sh
. tests/deploy/lib.sh
vp_env

tag=$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
pool=${VP_SUBNET_POOL%.*.*}	# 10.213
other=10.214
[ "$pool" != "$other" ] || other=10.215
# Podman's names: netns-<uuid>, NETAVARK-<13 upper-case hex>.
uuid() { od -An -N16 -tx1 /dev/urandom | tr -d ' \n' |
    sed 's/^\(.\{8\}\)\(.\{4\}\)\(.\{4\}\)\(.\{4\}\)\(.\{12\}\)$/\1-\2-\3-\4-\5/'; }
chainname() { echo "NETAVARK-$(od -An -N7 -tx1 /dev/urandom | tr -d ' \n' | cut -c1-13 | tr a-f A-F)"; }
NS_DEAD=netns-$(uuid)
NS_OTHER=netns-$(uuid)
NS_BUSY=netns-$(uuid)
BR_DEAD=vtc${tag}d
BR_OTHER=vtc${tag}o
BR_EMPTY=vtc${tag}e
CH_DEAD=$(chainname)
CH_OTHER=$(chainname)
NET_DEAD=$pool.250.0/24
NET_EMPTY=$pool.251.0/24
NET_OTHER=$other.250.0/24
KILLED=vivtest-nc-$tag
UNUSED=vivtest-ncnet-$tag

busy_pid=
cleanup() {
	[ -z "$busy_pid" ] || kill "$busy_pid" 2>/dev/null
	for n in "$NS_DEAD" "$NS_OTHER" "$NS_BUSY"; do
		ip netns delete "$n" 2>/dev/null
	done
	for b in "$BR_DEAD" "$BR_OTHER" "$BR_EMPTY" "vtc${tag}b"; do
		ip link delete "$b" 2>/dev/null
	done
	for net in "$NET_DEAD" "$NET_OTHER"; do
		iptables -t nat -D POSTROUTING -s "$net" -j "$CH_DEAD" 2>/dev/null
		iptables -t nat -D POSTROUTING -s "$net" -j "$CH_OTHER" 2>/dev/null
		iptables -D NETAVARK_FORWARD -s "$net" -j ACCEPT 2>/dev/null
	done
	for c in "$CH_DEAD" "$CH_OTHER"; do
		iptables -t nat -F "$c" 2>/dev/null && iptables -t nat -X "$c" 2>/dev/null
	done
	[ -z "$made_fwd" ] || iptables -X NETAVARK_FORWARD 2>/dev/null
	vpodman rm -f -t 0 "$KILLED" >/dev/null 2>&1
	vpodman network rm -f "$UNUSED" >/dev/null 2>&1
}
made_fwd=
trap cleanup EXIT
trap 'exit 1' INT TERM

# NS BRIDGE NET: a namespace with a veth on a bridge of NET (.1 on the
# bridge, .2 in the namespace), as netavark makes them.
dead() {
	ip link add "$2" type bridge &&
	ip addr add "${3%.0/24}.1/24" dev "$2" &&
	ip link set "$2" up &&
	ip netns add "$1" &&
	ip link add "vh$tag$4" type veth peer name eth0 netns "$1" &&
	ip link set "vh$tag$4" master "$2" up &&
	ip -n "$1" addr add "${3%.0/24}.2/24" dev eth0 &&
	ip -n "$1" link set eth0 up
}
if ! dead "$NS_DEAD" "$BR_DEAD" "$NET_DEAD" d || ! dead "$NS_OTHER" "$BR_OTHER" "$NET_OTHER" o; then
	echo "test-netclean: could not make the namespaces" >&2
	exit 1
fi
# In the pool but in use: a process lives in it.
dead "$NS_BUSY" "vtc${tag}b" "$pool.252.0/24" b || exit 1
ip netns exec "$NS_BUSY" sleep 300 &
busy_pid=$!
# A bridge of the pool with nothing on it.
ip link add "$BR_EMPTY" type bridge && ip addr add "${NET_EMPTY%.0/24}.1/24" dev "$BR_EMPTY" || exit 1

iptables -S NETAVARK_FORWARD >/dev/null 2>&1 || { iptables -N NETAVARK_FORWARD && made_fwd=1; }
for x in "$CH_DEAD $NET_DEAD" "$CH_OTHER $NET_OTHER"; do
	set -- $x
	iptables -t nat -N "$1" &&
	iptables -t nat -A "$1" -d "$2" -j ACCEPT &&
	iptables -t nat -A "$1" ! -d 224.0.0.0/4 -j MASQUERADE &&
	iptables -t nat -A POSTROUTING -s "$2" -j "$1" &&
	iptables -A NETAVARK_FORWARD -s "$2" -j ACCEPT || exit 1
done

# A test container killed with its conmon, as at a session's end: it still
# shows as running.  And a network no container uses.
IMAGE=$(t_image)
killed_ns=
if vpodman image exists "$IMAGE"; then
	vpodman network create "$UNUSED" >/dev/null || exit 1
	vpodman run -d --name "$KILLED" --image-volume ignore --ipc none \
	    --entrypoint sleep "$IMAGE" 300 >/dev/null || exit 1
	killed_ns=$(vpodman inspect --format '{{.NetworkSettings.SandboxKey}}' "$KILLED")
	kpid=$(vpodman inspect --format '{{.State.Pid}}' "$KILLED")
	kill -9 "$(vpodman inspect --format '{{.State.ConmonPid}}' "$KILLED")" "$kpid"
	i=0
	while [ -d "/proc/$kpid" ] && ! grep -q ') Z' "/proc/$kpid/stat" 2>/dev/null &&
	    [ $i -lt 50 ]; do
		sleep 0.1; i=$((i + 1))
	done
	st=$(vpodman inspect --format '{{.State.Status}}' "$KILLED")
	echo "# killed $KILLED ($killed_ns), which shows as $st"
else
	echo "# $IMAGE is not in the test storage: no killed container (make image-for-tests)"
fi

out=$(tests/lib/netclean.sh 2>&1)
echo "$out" | sed 's/^/# /'
has_ns() { ip netns list | awk '{ print $1 }' | grep -qx "$1"; }
has_link() { ip link show "$1" >/dev/null 2>&1; }
nat_rule() { iptables -t nat -S POSTROUTING | grep -q -- "-s $1 -j $2\$"; }
has_chain() { iptables -t nat -S "$1" >/dev/null 2>&1; }
fwd_rule() { iptables -S NETAVARK_FORWARD | grep -q -- "-s $1 -j ACCEPT"; }

t_check "the dead namespace in the pool is deleted" sh -c '! ip netns list | grep -q "^$1"' - "$NS_DEAD"
t_check "... and its bridge ($BR_DEAD)" sh -c '! ip link show "$1" >/dev/null 2>&1' - "$BR_DEAD"
t_check "an empty bridge of the pool is deleted ($BR_EMPTY)" sh -c '! ip link show "$1" >/dev/null 2>&1' - "$BR_EMPTY"
t_check "the pool's nat jump is deleted" sh -c '! iptables -t nat -S POSTROUTING | grep -q -- "-j $1\$"' - "$CH_DEAD"
t_check "... and its chain" sh -c '! iptables -t nat -S "$1" >/dev/null 2>&1' - "$CH_DEAD"
t_check "... and its forward rule" sh -c '! iptables -S NETAVARK_FORWARD | grep -q -- "-s $1 -j"' - "$NET_DEAD"
t_check "a namespace outside the pool is kept" has_ns "$NS_OTHER"
t_check "... and its bridge" has_link "$BR_OTHER"
t_check "... and its nat jump" nat_rule "$NET_OTHER" "$CH_OTHER"
t_check "... and its chain" has_chain "$CH_OTHER"
t_check "... and its forward rule" fwd_rule "$NET_OTHER"
t_check "a namespace of the pool that a process uses is kept" has_ns "$NS_BUSY"
t_check "... and the bridge with its address" has_link "vtc${tag}b"
if [ -n "$killed_ns" ]; then
	gone_ctr() { ! vpodman container exists "$KILLED"; }
	gone_net() { ! vpodman network exists "$UNUSED"; }
	t_check "a killed test container is removed" gone_ctr
	t_check "... and its network namespace with it (${killed_ns##*/})" test ! -e "$killed_ns"
	t_check "a network no container uses is removed" gone_net
fi
t_check "what it deleted is said" sh -c 'echo "$1" | grep -q "deleted network namespace $2" &&
    echo "$1" | grep -q "deleted nat chain $3" &&
    { [ -z "$4" ] || echo "$1" | grep -q "removed test container $4"; }' - \
    "$out" "$NS_DEAD" "$CH_DEAD" "${killed_ns:+$KILLED}"

t_done test-netclean
