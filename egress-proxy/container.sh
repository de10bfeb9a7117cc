#!/bin/sh
# egress-proxy/container.sh [ensure|host-addrs|remove]: the egress proxy as a container
# of the Podman service on $VIVARIUM_PODMAN_SOCKET (default
# /run/podman/podman.sock).  `make run` calls it before the supervisor.
#
# ensure (the default), idempotent:
#   - network $VIVARIUM_EGRESS_NETWORK (vivarium-egress): a normal bridge
#     network, the proxy's way out; created when missing (DNS off: the
#     proxy resolves through the host's resolvers), refused when internal;
#   - container $VIVARIUM_EGRESS_CONTAINER (vivarium-egress) from the
#     sandbox image with entrypoint vivarium-egress listening on
#     0.0.0.0:$VIVARIUM_EGRESS_PORT (3128): read-only root, no capabilities,
#     no-new-privileges, memory, pids and nofile limits, init, labels
#     io.vivarium.managed=true and io.vivarium.role=egress;
#   - a running container with the same spec is left alone, a stopped one is
#     started, one made from another image or with another configuration
#     (the io.vivarium.egress-spec label) is replaced, and the replacement is
#     connected to the other networks the old one was on (users' networks,
#     where the supervisor put it), at the same addresses;
#   - writes the host's own addresses (every interface's, from `ip addr`,
#     plus $VIVARIUM_EGRESS_HOST_EXTRA) to $VIVARIUM_EGRESS_HOST_DIR/
#     host-addresses with egress-proxy/hosts.sh, which the container reads
#     (bind-mounted read-only) and refuses as targets, re-reading it
#     whenever it changes; the proxy does not start without it;
#   - before it makes a container, checks the configuration with the
#     proxy's own -n in a one-off container (no network, removed at once),
#     so a configuration the proxy refuses fails here with its words and
#     never becomes a restart loop (each restart of a container with a
#     user namespace leaks a network namespace in Podman 4.3.1);
#   - waits until the proxy logs that it is ready; if it exits instead,
#     prints its log, removes it (no restart loop) and fails;
#   - after it removes a proxy, deletes what Podman 4.3.1 left of it on
#     the host (drop_leaked below).
# host-addrs: only rewrite the host address file (run.sh does every 30 s,
#   so an address the host gains later is refused within seconds).
# remove: remove the container and the network (if nothing else uses it),
#   and the network's bridge if Podman left it.
#
# Environment:
#   VIVARIUM_PODMAN_SOCKET     the Podman service's socket
#   VIVARIUM_EGRESS_IMAGE      image; else $VIVARIUM_SANDBOX_IMAGE; else
#                              localhost/vivarium-sandbox:<Makefile VERSION>
#   VIVARIUM_EGRESS_CONTAINER  container name, vivarium-egress
#   VIVARIUM_EGRESS_NETWORK    network name, vivarium-egress
#   VIVARIUM_EGRESS_BRIDGE     the network's bridge on the host, vivegress0
#                              (15 characters at most)
#   VIVARIUM_EGRESS_PORT       listening port, 3128
#   VIVARIUM_EGRESS_CONFIG     a YAML file on the host (docs/egress.md),
#                              bind-mounted read-only; its `listen` is
#                              overridden by the port above
#   VIVARIUM_EGRESS_HOST_DIR   where the host address file is written,
#                              ${VIVARIUM_RUN_DIR:-/run/vivarium}/egress
#   VIVARIUM_EGRESS_HOST_EXTRA addresses or CIDRs of the host that are on no
#                              interface (a public address NATed to it),
#                              comma-separated
#   VIVARIUM_EGRESS_UID_BASE   run as root: the proxy's own host ids, a user
#                              namespace mapping its ids 0-65535 to this
#                              range, 1000000000 (the supervisor's uid_base:
#                              slot 0 is the proxy's, sandboxes start at 1);
#                              0: no user namespace (uid 1000 of the host)
#   VIVARIUM_EGRESS_MEMORY, _PIDS, _NOFILE
#                              limits: 512m, 256, 16384 (about three
#                              descriptors per connection: keep NOFILE above
#                              3 x limits.connections)
#   VIVARIUM_EGRESS_PORTS, _ALLOW_CIDRS, _HEADER_TIMEOUT, _CONNECT_TIMEOUT,
#   _IDLE_TIMEOUT, _MAX_CONNECTIONS, _MAX_PER_CLIENT, _MAX_HEADER_BYTES,
#   _RESOLVER_THREADS, _WORKERS, _VERBOSE
#                              passed to the proxy when set (they override
#                              the file; docs/egress.md)
#
# The runtime is the service's own (`make run`'s service uses runc); the
# container is created through the podman CLI in remote mode.
set -eu

cd "$(dirname "$0")/.."
SOCK=${VIVARIUM_PODMAN_SOCKET:-/run/podman/podman.sock}
VERSION=$(sed -n 's/^VERSION[[:space:]]*:=[[:space:]]*//p' Makefile)
IMAGE=${VIVARIUM_EGRESS_IMAGE:-${VIVARIUM_SANDBOX_IMAGE:-localhost/vivarium-sandbox:$VERSION}}
NAME=${VIVARIUM_EGRESS_CONTAINER:-vivarium-egress}
NET=${VIVARIUM_EGRESS_NETWORK:-vivarium-egress}
BRIDGE=${VIVARIUM_EGRESS_BRIDGE:-vivegress0}
PORT=${VIVARIUM_EGRESS_PORT:-3128}
CONF=${VIVARIUM_EGRESS_CONFIG:-}
MEMORY=${VIVARIUM_EGRESS_MEMORY:-512m}
PIDS=${VIVARIUM_EGRESS_PIDS:-256}
NOFILE=${VIVARIUM_EGRESS_NOFILE:-16384}
UID_BASE=${VIVARIUM_EGRESS_UID_BASE:-1000000000}
HOSTDIR=${VIVARIUM_EGRESS_HOST_DIR:-${VIVARIUM_RUN_DIR:-/run/vivarium}/egress}
HOSTEXTRA=${VIVARIUM_EGRESS_HOST_EXTRA:-}

say() { echo "egress: $*" >&2; }
die() { say "$*"; exit 1; }
P() { podman --remote --url "unix://$SOCK" "$@"; }

api() {	# METHOD PATH [BODY]: prints the body, then the status on a line
	if [ $# -ge 3 ]; then
		curl -sS --max-time 30 --unix-socket "$SOCK" -X "$1" \
		    -H 'Content-Type: application/json' --data-binary "$3" \
		    -w '\n%{http_code}\n' "http://d/v4.0.0/libpod$2"
	else
		curl -sS --max-time 30 --unix-socket "$SOCK" -X "$1" \
		    -w '\n%{http_code}\n' "http://d/v4.0.0/libpod$2"
	fi
}

check_args() {
	case "$PORT" in
	''|*[!0-9]*) die "VIVARIUM_EGRESS_PORT=\"$PORT\": expected a port number" ;;
	esac
	[ "$PORT" -ge 1 ] && [ "$PORT" -le 65535 ] ||
	    die "VIVARIUM_EGRESS_PORT=$PORT: expected 1 to 65535"
	case "$NOFILE" in
	''|*[!0-9]*) die "VIVARIUM_EGRESS_NOFILE=\"$NOFILE\": expected a number" ;;
	esac
	[ ${#BRIDGE} -le 15 ] || die "VIVARIUM_EGRESS_BRIDGE=$BRIDGE: 15 characters at most"
	if [ -n "$CONF" ]; then
		case "$CONF" in
		/*) ;;
		*) CONF=$(pwd)/$CONF ;;
		esac
		[ -r "$CONF" ] || die "VIVARIUM_EGRESS_CONFIG=$CONF: not readable"
	fi
	[ "$(curl -s --max-time 5 --unix-socket "$SOCK" http://d/_ping 2>/dev/null)" = OK ] ||
	    die "no Podman service answers on $SOCK"
}

ensure_network() {
	if P network exists "$NET"; then
		[ "$(P network inspect --format '{{.Internal}}' "$NET")" = false ] ||
		    die "network $NET is internal: the proxy needs a way out (remove it)"
		return 0
	fi
	# Through the API: the CLI of Podman 4.3 cannot name the bridge, and
	# Podman's own choice (podmanN) may be taken by another storage.
	body=$(printf '{"name": "%s", "driver": "bridge", "network_interface": "%s", "internal": false, "dns_enabled": false, "labels": {"io.vivarium.managed": "true", "io.vivarium.role": "egress"}}' \
	    "$NET" "$BRIDGE")
	out=$(api POST /networks/create "$body")
	case "$(printf '%s\n' "$out" | tail -n 1)" in
	200|201) say "made network $NET (bridge $BRIDGE)" ;;
	409) ;;	# made meanwhile by another caller
	*) die "could not create network $NET: $(printf '%s\n' "$out" | sed '$d')" ;;
	esac
}

# Every option of the container, one a line; its hash is the spec label.
create_args() {
	printf '%s\n' --label io.vivarium.managed=true \
	    --label io.vivarium.role=egress \
	    --network "$NET" \
	    --entrypoint /usr/local/bin/vivarium-egress \
	    --user 1000:1000 --workdir / --image-volume ignore \
	    --read-only --read-only-tmpfs=false \
	    --cap-drop ALL --security-opt no-new-privileges \
	    --memory "$MEMORY" --memory-swap "$MEMORY" --pids-limit "$PIDS" \
	    --ulimit "nofile=$NOFILE:$NOFILE" --ulimit nproc=4096:4096 \
	    --init --restart always --stop-timeout 5 \
	    --env "VIVARIUM_EGRESS_LISTEN=0.0.0.0:$PORT" \
	    --volume "$HOSTDIR:/run/vivarium-host:ro" \
	    --env VIVARIUM_EGRESS_HOST_ADDRESSES=/run/vivarium-host/host-addresses
	# Its own host ids, none of any sandbox's: an escape from the proxy
	# is not uid 1000 of the host (often a person).  No /dev/shm (it
	# needs none), or Podman 4.3.1 could leave it mounted on the host and
	# not remove the container (docs/egress.md).
	if [ "$(id -u)" = 0 ] && [ "$UID_BASE" != 0 ]; then
		printf '%s\n' --uidmap "0:$UID_BASE:65536" \
		    --gidmap "0:$UID_BASE:65536" --ipc none
	fi
	for v in PORTS ALLOW_CIDRS HEADER_TIMEOUT CONNECT_TIMEOUT IDLE_TIMEOUT \
	    MAX_CONNECTIONS MAX_PER_CLIENT MAX_HEADER_BYTES RESOLVER_THREADS \
	    WORKERS VERBOSE; do
		eval "val=\${VIVARIUM_EGRESS_$v-}"
		# shellcheck disable=SC2154
		[ -z "$val" ] || printf '%s\n' --env "VIVARIUM_EGRESS_$v=$val"
	done
	if [ -n "$CONF" ]; then
		printf '%s\n' --volume "$CONF:/etc/vivarium/egress.yaml:ro" \
		    --env VIVARIUM_EGRESS_CONFIG=/etc/vivarium/egress.yaml
	fi
}

# check_config OPTION...: the proxy's -n on the container's options (those
# of create_args), in a one-off container of the same image, user and files
# but no network, restart policy or labels.
check_config() {
	skip=
	for a do
		shift
		if [ -n "$skip" ]; then skip=; continue; fi
		case $a in
		--restart|--network|--label|--stop-timeout) skip=1; continue ;;
		esac
		set -- "$@" "$a"
	done
	rc=0
	out=$(P run --rm --network none "$@" "$IMAGE" -n 2>&1) || rc=$?
	case $rc in
	0) ;;
	1) die "the proxy refuses this configuration (no container made):
$(printf '%s\n' "$out" | sed 's/^/  /')" ;;
	*) die "could not run the proxy's configuration check (exit $rc):
$(printf '%s\n' "$out" | sed 's/^/  /')" ;;
	esac
}

spec_hash() {
	{
		echo "image $1"
		create_args
		[ -z "$CONF" ] || sha256sum <"$CONF"
	} | sha256sum | cut -c1-32
}

# Only the proxy is ever on its network, so a veth still on the bridge
# once it is removed is one Podman 4.3.1 left behind: each restart of a
# container with a user namespace leaves a network namespace and its veth
# (and the stale bridge keeps the network's subnet routed to it after the
# network is gone).  Those namespaces, and a bridge with no ports left
# once the network is removed, are deleted.  Root only.
drop_leaked() {
	[ "$(id -u)" = 0 ] && command -v ip >/dev/null 2>&1 || return 0
	# While the proxy exists, a namespace on the bridge with no process
	# in it may be its own, between two restarts: deleting it would leave
	# Podman a container it can neither start nor remove.
	! P container exists "$NAME" || return 0
	# "7: veth0@if2: <...> ... link-netns netns-<uuid>": the host's end,
	# and the namespace of the other (which may have no name left).
	ip -o link show master "$BRIDGE" 2>/dev/null |
	    sed -n 's/^[0-9]*: \([^@:]*\)[@:].*/\1 &/p' |
	    while read -r dev line; do
		ns=$(printf '%s\n' "$line" | sed -n 's/.* link-netns \(netns-[0-9a-f-]*\).*/\1/p')
		if [ -n "$ns" ] && [ -e "/run/netns/$ns" ]; then
			[ -z "$(ip netns pids "$ns" 2>/dev/null)" ] || continue
			ip netns delete "$ns" 2>/dev/null || :
		fi
		# Deleting one end deletes the pair, whoever still holds
		# the namespace (the Podman service may, until it exits).
		if ip link delete "$dev" 2>/dev/null; then
			say "deleted $dev${ns:+ and $ns}, left on $BRIDGE by Podman"
		fi
	done
	if [ "${1:-}" = bridge ] && ip link show "$BRIDGE" >/dev/null 2>&1 &&
	    [ -z "$(ip -o link show master "$BRIDGE" 2>/dev/null)" ]; then
		ip link delete "$BRIDGE" 2>/dev/null && say "deleted bridge $BRIDGE, left by Podman"
	fi
	return 0
}

# remove_proxy TIMEOUT: removes the container, again while Podman says it
# is still there (a removal can race with a restart of its policy's);
# fails with Podman's last words.
remove_proxy() {
	i=0
	while P container exists "$NAME"; do
		if [ $i -ge 20 ]; then
			say "could not remove $NAME: ${rm_err:-Podman still lists it}"
			return 1
		fi
		rm_err=$(P rm -f -t "$1" "$NAME" 2>&1 >/dev/null) || sleep 0.25
		i=$((i + 1))
	done
	return 0
}

# The proxy's "ready" lines: it logs one when every thread runs.
ready_count() {
	P logs "$NAME" 2>&1 | grep -c ': ready: ' || :
}

# Until the proxy logs a ready line more than $1 (lines from an earlier
# run stay in the log); fails with the log if it does not, at once when
# its restart policy has restarted it.
wait_ready() {
	i=0
	r0=$(P inspect --format '{{.RestartCount}}' "$NAME" 2>/dev/null || echo 0)
	while [ "$(ready_count)" -le "$1" ]; do
		st=$(P inspect --format '{{.State.Status}} {{.RestartCount}}' "$NAME" 2>/dev/null || echo missing 0)
		i=$((i + 1))
		# Restarted by its policy: it exited before it listened.
		if [ $i -gt 100 ] || [ "${st#* }" != "$r0" ] ||
		    { [ $i -gt 10 ] && [ "${st% *}" != running ]; }; then
			st=${st% *}
			P logs "$NAME" >&2 2>&1 || :
			# Removed, so that its restart policy does not loop it
			# (a stop can race with a restart); its log is above.
			remove_proxy 1 ||
			    die "container $NAME did not start (state $st)"
			drop_leaked
			die "container $NAME did not start (state $st); removed it"
		fi
		sleep 0.1
	done
}

# The host's addresses, one a line, for the proxy to refuse: in its
# container it sees only its own interfaces, yet the host answers on every
# address it has (its public one included).  egress-proxy/hosts.sh (the
# installed vivarium-egress-hosts) writes it aside and renames it, so the
# proxy never reads half a file; the directory is what is mounted, so the
# container sees each new file.  The proxy does not start without it.
write_host_addrs() {
	VIVARIUM_EGRESS_HOST_EXTRA=$HOSTEXTRA egress-proxy/hosts.sh "$HOSTDIR" ||
	    die "could not write the host's addresses to $HOSTDIR/host-addresses"
}

cmd_ensure() {
	check_args
	write_host_addrs
	img=$(P image inspect --format '{{.Id}}' "$IMAGE" 2>/dev/null) ||
	    die "no image $IMAGE on $SOCK (make image)"
	ensure_network
	spec=$(spec_hash "$img")
	keep=
	if P container exists "$NAME"; then
		have=$(P inspect --format '{{index .Config.Labels "io.vivarium.egress-spec"}} {{.State.Status}}' "$NAME")
		if [ "${have% *}" = "$spec" ]; then
			case "${have#* }" in
			running)
				say "$NAME is running"
				return 0 ;;
			*)
				say "starting $NAME (was ${have#* })"
				n=$(ready_count)
				P start "$NAME" >/dev/null
				wait_ready "$n"
				return 0 ;;
			esac
		fi
		say "replacing $NAME (image or configuration changed)"
		# The networks the supervisor connected it to (each user's, at
		# a fixed address), to connect the new one the same way.
		keep=$(P inspect --format '{{range $k, $v := .NetworkSettings.Networks}}{{$k}} {{$v.IPAddress}}{{println}}{{end}}' "$NAME")
		remove_proxy 5 || die "could not replace $NAME"
		drop_leaked
	fi
	# One option a line: values may hold spaces, never newlines.
	old_ifs=$IFS
	IFS='
'
	# shellcheck disable=SC2046
	set -- $(create_args)
	IFS=$old_ifs
	check_config "$@"
	P create --name "$NAME" --label "io.vivarium.egress-spec=$spec" \
	    "$@" "$IMAGE" >/dev/null
	P start "$NAME" >/dev/null
	wait_ready 0
	say "$NAME is running ($IMAGE, port $PORT, network $NET)"
	printf '%s\n' "${keep:-}" | while read -r knet kip; do
		[ -n "$knet" ] && [ "$knet" != "$NET" ] || continue
		if P network connect ${kip:+--ip "$kip"} "$knet" "$NAME" >/dev/null 2>&1; then
			say "reconnected $NAME to $knet${kip:+ at $kip}"
		else
			say "could not reconnect $NAME to $knet (the supervisor does at the next sandbox start)"
		fi
	done
}

cmd_remove() {
	if P container exists "$NAME"; then
		remove_proxy 5 || exit 1
		say "removed $NAME"
		drop_leaked
	fi
	if P network exists "$NET"; then
		if P network rm "$NET" >/dev/null 2>&1; then
			say "removed network $NET"
			drop_leaked bridge
		else
			say "network $NET is still in use; left"
		fi
	fi
}

case "${1:-ensure}" in
ensure)	cmd_ensure ;;
host-addrs) write_host_addrs ;;
remove)	cmd_remove ;;
*)	echo "usage: egress-proxy/container.sh [ensure|host-addrs|remove]" >&2; exit 2 ;;
esac
