#!/bin/sh
# image/run-hardened.sh [OPTIONS] [-- PODMAN-RUN-ARGS...]: start one sandbox
# container the way vivarium runs them, for operators and for the tests
# (tests/image uses exactly this script).  Prints the container's name.
#
# What every container gets, whatever the options:
#   --read-only root, no other tmpfs than a fresh /tmp (nosuid, nodev),
#   --cap-drop ALL, no-new-privileges, uid 1000, --init (catatonit reaps
#   orphans and makes stops fast), memory (swap off), CPU and PID limits,
#   explicit nofile/nproc rlimits (Podman's defaults fail on hosts whose
#   hard nofile limit is lower), and an --internal network: no route out;
#   only the proxy given with --proxy, if any, reaches further.
#
# Options:
#   --name NAME          container name (default vivarium-sandbox)
#   --image IMAGE        default localhost/vivarium-sandbox:$IMAGE_VERSION
#   --network NET        internal network without DNS, created when missing
#                        (default vivarium-sandbox); a network that is not
#                        internal, or whose DNS server would resolve outside
#                        names, is refused.  Give the proxy as an address.
#   --workspace VOL|DIR  what to mount on /workspace: a volume name (created
#                        by Podman when missing) or an absolute host directory
#                        (created for uid 1000 when missing; default: volume
#                        NAME-workspace)
#   --socket-dir DIR     host directory mounted on /run/vivarium; the agent
#                        listens on DIR/agent.sock and on no TCP port.  DIR
#                        is created (0700, owned by uid 1000) when missing.
#                        Without it the agent listens on TCP 8000 inside the
#                        container's network.
#   --memory SIZE        default 2g      --cpus N      default 2
#   --pids N             default 128     --tmp-size S  default 256m
#   --nofile N           default 4096    --nproc N     default 1024
#                        (nproc counts every process of uid 1000 on the host,
#                        all sandboxes together: the PID limit is per sandbox)
#   --proxy URL          set http_proxy/https_proxy (and upper-case) to URL
#   --env K=V            pass one more variable to the agent (repeatable)
#   --wait SECONDS       wait until GET /health answers 200 on the socket
#                        (needs --socket-dir), print the time it took to stderr
#
# The Podman command: $PODMAN if set; with VIVARIUM_IMAGE_STORE=test, the
# tests' private storage (tests/lib/podman.sh); else podman with runc.
set -eu
cd "$(dirname "$0")/.."

name=vivarium-sandbox
version=${IMAGE_VERSION:-$(sed -n 's/^VERSION[[:space:]]*:=[[:space:]]*//p' Makefile)}
image=localhost/vivarium-sandbox:$version
network=vivarium-sandbox
workspace=
socket_dir=
memory=2g cpus=2 pids=128 tmp_size=256m nofile=4096 nproc=1024
proxy=
wait=
envs=

usage() { sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
need() { [ $# -ge 2 ] || { echo "run-hardened: $1 needs a value" >&2; exit 2; }; }

while [ $# -gt 0 ]; do
	case "$1" in
	--name)		need "$@"; name=$2; shift 2 ;;
	--image)	need "$@"; image=$2; shift 2 ;;
	--network)	need "$@"; network=$2; shift 2 ;;
	--workspace)	need "$@"; workspace=$2; shift 2 ;;
	--socket-dir)	need "$@"; socket_dir=$2; shift 2 ;;
	--memory)	need "$@"; memory=$2; shift 2 ;;
	--cpus)		need "$@"; cpus=$2; shift 2 ;;
	--pids)		need "$@"; pids=$2; shift 2 ;;
	--tmp-size)	need "$@"; tmp_size=$2; shift 2 ;;
	--nofile)	need "$@"; nofile=$2; shift 2 ;;
	--nproc)	need "$@"; nproc=$2; shift 2 ;;
	--proxy)	need "$@"; proxy=$2; shift 2 ;;
	--env)		need "$@"; envs="$envs
$2"; shift 2 ;;
	--wait)		need "$@"; wait=$2; shift 2 ;;
	-h|--help)	usage ;;
	--)		shift; break ;;
	*)		echo "run-hardened: unknown option $1 (--help)" >&2; exit 2 ;;
	esac
done

if [ -n "${PODMAN:-}" ]; then
	P() { $PODMAN "$@"; }
elif [ "${VIVARIUM_IMAGE_STORE:-system}" = test ]; then
	. tests/lib/podman.sh
	vp_env
	P() { vpodman "$@"; }
elif command -v runc >/dev/null 2>&1; then
	P() { podman --runtime runc "$@"; }
else
	P() { podman "$@"; }
fi

if ! P network exists "$network"; then
	P network create --internal --disable-dns --opt isolate=true \
	    --label io.vivarium.role=sandbox-network \
	    "$network" >/dev/null
elif [ "$(P network inspect --format '{{.Internal}}' "$network")" != true ]; then
	echo "run-hardened: network $network is not internal; refusing it" >&2
	exit 1
elif [ "$(P network inspect --format '{{.DNSEnabled}}' "$network")" = true ]; then
	# aardvark-dns answers names from the outside world even on an
	# internal network: a channel out that needs no route.
	echo "run-hardened: network $network has DNS enabled, which resolves" \
	    "outside names; refusing it (create it with --disable-dns)" >&2
	exit 1
fi

[ -n "$workspace" ] || workspace=$name-workspace
case "$workspace" in
/*)	if [ ! -d "$workspace" ]; then
		mkdir -p -m 0750 "$workspace"
		chown 1000:1000 "$workspace"
	fi
	mount="type=bind,source=$workspace,destination=/workspace" ;;
*)	mount="type=volume,source=$workspace,destination=/workspace" ;;
esac

set -- --mount "$mount" "$@"
if [ -n "$socket_dir" ]; then
	case "$socket_dir" in
	/*) ;;
	*) echo "run-hardened: --socket-dir needs an absolute path" >&2; exit 2 ;;
	esac
	if [ ! -d "$socket_dir" ]; then
		mkdir -p -m 0700 "$socket_dir"
		chown 1000:1000 "$socket_dir"
	fi
	rm -f "$socket_dir/agent.sock"
	set -- --mount "type=bind,source=$socket_dir,destination=/run/vivarium" \
	    --env VIVARIUM_SOCKET=/run/vivarium/agent.sock --env VIVARIUM_PORT=off "$@"
fi
if [ -n "$proxy" ]; then
	set -- --env "http_proxy=$proxy" --env "https_proxy=$proxy" \
	    --env "HTTP_PROXY=$proxy" --env "HTTPS_PROXY=$proxy" "$@"
fi
# One --env per line of $envs (values may hold spaces).
while IFS= read -r kv; do
	[ -n "$kv" ] && set -- --env "$kv" "$@"
done <<EOF
$envs
EOF

t0=$(date +%s%N)
P run --detach --name "$name" \
    --label io.vivarium.role=sandbox \
    --user 1000:1000 \
    --read-only --read-only-tmpfs=false \
    --tmpfs "/tmp:rw,nosuid,nodev,size=$tmp_size,mode=1777" \
    --cap-drop ALL --security-opt no-new-privileges \
    --init \
    --memory "$memory" --memory-swap "$memory" \
    --cpus "$cpus" --pids-limit "$pids" \
    --ulimit "nofile=$nofile:$nofile" --ulimit "nproc=$nproc:$nproc" \
    --network "$network" \
    --stop-timeout 5 \
    "$@" "$image" >/dev/null
echo "$name"

[ -n "$wait" ] || exit 0
if [ -z "$socket_dir" ]; then
	echo "run-hardened: --wait needs --socket-dir" >&2
	exit 2
fi
deadline=$(( $(date +%s) + wait ))
while :; do
	code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 \
	    --unix-socket "$socket_dir/agent.sock" http://sandbox/health 2>/dev/null || true)
	if [ "$code" = 200 ]; then
		ms=$(( ($(date +%s%N) - t0) / 1000000 ))
		echo "run-hardened: $name ready in ${ms} ms (start to GET /health 200)" >&2
		exit 0
	fi
	state=$(P inspect --format '{{.State.Status}}' "$name" 2>/dev/null || echo gone)
	if [ "$state" != running ] && [ "$state" != created ] && [ "$state" != configured ]; then
		echo "run-hardened: $name is $state before it answered; its log:" >&2
		P logs "$name" >&2 2>&1 || true
		exit 1
	fi
	if [ "$(date +%s)" -ge "$deadline" ]; then
		echo "run-hardened: $name did not answer GET /health within ${wait}s" >&2
		P logs --tail 20 "$name" >&2 2>&1 || true
		exit 1
	fi
	sleep 0.02
done
