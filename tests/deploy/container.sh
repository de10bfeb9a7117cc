#!/bin/sh
# tests/deploy/container.sh: LibreChat in a container reaches the supervisor
# the two documented ways, tested with a client inside a container on a
# network of its own (tests/deploy/mcp_client.py in the sandbox image,
# standing in for LibreChat's API container):
#   1. the supervisor on the host, listening on 0.0.0.0 (make run with
#      VIVARIUM_SUPERVISOR_LISTEN): the container names the host
#      host.containers.internal (Podman) or host.docker.internal (Docker's
#      host-gateway, here mapped by hand to the same gateway address);
#      the token is required there; a loopback-only supervisor is not
#      reachable at all (why the wiring is needed);
#   2. the supervisor in a container (deploy/quadlet/vivarium-supervisor.
#      container, the podman command quadlet makes of it) on a network the
#      client joins: http://vivarium-supervisor:8787/mcp by name, and its
#      published port on the host's loopback for make smoke.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/podman.sh
. tests/deploy/lib.sh
BIN=${BIN:-bin}
IMAGE=$(t_image)
vp_start || exit 1
D=$(mktemp -d /tmp/vdc.XXXXXX)
chmod 0755 "$D"
tag=$(vp_name c)
net=$tag-lc
users=""
runpid=""
cleanup() {
	[ -z "$runpid" ] || { kill -TERM "$runpid" 2>/dev/null; wait "$runpid" 2>/dev/null; }
	vpodman rm -f -v -t 0 "$tag-sv" >/dev/null 2>&1
	for u in $users; do
		VIVARIUM_SUPERVISOR_TOKEN=0123456789abcdef0123 "$BIN/vivariumctl" \
		    -f "$D/etc/vivarium/supervisor.yaml" remove-user --purge "$u" >/dev/null 2>&1
	done
	vpodman network rm -f "$net" "$tag-front" >/dev/null 2>&1
	rm -rf "$D"
}
vp_on_exit cleanup
vpodman network create "$net" >/dev/null || { t_fail "network $net"; t_done container; exit 1; }
gw=$(vpodman network inspect "$net" --format '{{range .Subnets}}{{.Gateway}}{{end}}')

# HOSTNAME URL TOKEN USER [podman run options]: the client in a container
# on its own network; output in $D/client.
client() {
	_h=$1 _url=$2 _tok=$3 _u=$4; shift 4
	vpodman run --rm --network "$net" "$@" --entrypoint python3 \
	    -v "$PWD/tests/deploy/mcp_client.py:/c.py:ro" "$IMAGE" /c.py \
	    "$_url" "$_tok" "$_u" >"$D/client" 2>&1
}

mkdir -p "$D/etc/vivarium" "$D/state/vivarium"
od -An -N32 -tx1 /dev/urandom | tr -d ' \n' >"$D/etc/vivarium/token"
TOK=$(cat "$D/etc/vivarium/token")

# ---------------------------------------------------------------- 1. host
port=$(t_port)
cat >"$D/etc/vivarium/supervisor.yaml" <<YAML
listen: 127.0.0.1:$port
token_file: $D/etc/vivarium/token
state_dir: $D/state/vivarium
image: $IMAGE
YAML
u1=$tag-host
users="$users $u1"
env VIVARIUM_SUPERVISOR_TOKEN="$TOK" VIVARIUM_EGRESS=0 VIVARIUM_RUN_DIR="$D/run" \
    VIVARIUM_SUPERVISOR_CONFIG="$D/etc/vivarium/supervisor.yaml" BIN="$BIN" \
    VIVARIUM_SUPERVISOR_LISTEN="0.0.0.0:$port" supervisor/run.sh >"$D/out" 2>"$D/err" &
runpid=$!
if t_wait_for 'make smoke' "$D/out" 60; then
	t_ok "make run on 0.0.0.0 prints the paste block"
else
	t_fail "make run on 0.0.0.0 prints the paste block" "$(cat "$D/err" "$D/out")"
fi
t_grep "... with the entry for LibreChat in Docker" "url: http://host.docker.internal:$port/mcp" "$D/out"
t_grep "... and its allowedAddresses" "    - \"host.docker.internal:$port\"" "$D/out"
t_grep "... and the Podman name" "host.containers.internal" "$D/out"

if client x "http://host.containers.internal:$port/mcp" "$TOK" "$u1"; then
	t_ok "a container reaches the host's supervisor at host.containers.internal"
else
	t_fail "a container reaches the host's supervisor at host.containers.internal" "$(cat "$D/client" "$D/err")"
fi
t_grep "... and runs a call in the user's sandbox" "run_python: exit code: 0.*sum 42" "$D/client"
if client x "http://host.docker.internal:$port/mcp" "$TOK" "$u1" \
    --add-host "host.docker.internal:$gw"; then
	t_ok "... and as host.docker.internal (Docker's host-gateway)"
else
	t_fail "... and as host.docker.internal (Docker's host-gateway)" "$(cat "$D/client")"
fi
client x "http://host.containers.internal:$port/mcp" - "$u1"
t_grep "without the token it is refused (401)" "error: HTTP 401" "$D/client"
client x "http://host.containers.internal:$port/mcp" "${TOK}x" "$u1"
t_grep "with a wrong token too" "error: HTTP 401" "$D/client"
kill -TERM "$runpid"; wait "$runpid" 2>/dev/null; runpid=""

# Loopback only: the container's host.containers.internal is not it.
port2=$(t_port)
env -u VIVARIUM_SUPERVISOR_LISTEN VIVARIUM_SUPERVISOR_TOKEN="$TOK" \
    VIVARIUM_PODMAN_SOCKET="$VP_SOCKET" VIVARIUM_SUPERVISOR_LISTEN="127.0.0.1:$port2" \
    "$BIN/vivarium-supervisor" -f "$D/etc/vivarium/supervisor.yaml" >"$D/lo.log" 2>&1 &
runpid=$!
t_wait_for "listening on" "$D/lo.log" 10
client x "http://host.containers.internal:$port2/mcp" "$TOK" "$u1"
t_grep "a loopback-only supervisor is out of the container's reach" "error: .*[Cc]onnection refused" "$D/client"
kill -TERM "$runpid"; wait "$runpid" 2>/dev/null; runpid=""

# ---------------------------------------------------------------- 2. container
# The podman command quadlet makes of the unit, run on the tests' Podman:
# systemd's specifiers filled in, systemd-only flags dropped, our names.
mkdir -p "$D/q"
cp deploy/quadlet/vivarium-supervisor.container deploy/quadlet/vivarium-front.network "$D/q/"
QUADLET_UNIT_DIRS=$D/q scripts/quadlet -dryrun >"$D/q.out" 2>"$D/q.err" ||
    t_fail "quadlet converts the supervisor" "$(cat "$D/q.err")"
sport=$(t_port)
args=$(sed -n '/^---vivarium-supervisor.service---$/,/^---/p' "$D/q.out" |
    sed -n 's|^ExecStart=/usr/bin/podman run ||p' |
    sed -e 's| --cidfile=%t/%N.cid||; s| --cgroups=split||; s| --sdnotify=conmon||' \
	-e "s|%t/podman/podman.sock|$VP_SOCKET|; s|%E|$D/etc|g; s|%S|$D/state|g" \
	-e "s|--name vivarium-supervisor|--name $tag-sv|" \
	-e "s|--network vivarium-front|--network $tag-front|" \
	-e "s|127.0.0.1:8787:8787|127.0.0.1:$sport:8787|" \
	-e "s| localhost/vivarium-sandbox:[^ ]*| $IMAGE|")
case "$args" in
*"$tag-sv"*"$tag-front"*"$IMAGE -f $D/etc/vivarium/supervisor.yaml") t_ok "the quadlet's podman command, adapted" ;;
*) t_fail "the quadlet's podman command, adapted" "$args" ;;
esac
vpodman network create "$tag-front" >/dev/null
# shellcheck disable=SC2086
if vpodman run $args >"$D/sv.id" 2>"$D/sv.err"; then
	t_ok "the supervisor container starts"
else
	t_fail "the supervisor container starts" "$(cat "$D/sv.err")"
fi
i=0
until vpodman logs "$tag-sv" 2>&1 | grep -q "listening on" || [ $i -ge 100 ]; do
	i=$((i + 1)); sleep 0.1
done
vpodman logs "$tag-sv" >"$D/sv.log" 2>&1
t_grep "... and listens" "listening on http://0.0.0.0:8787/" "$D/sv.log"
# The image's VOLUME /workspace is the sandboxes': the supervisor's
# container must not get an anonymous volume there, which outlives it.
mounts=$(vpodman inspect -f '{{range .Mounts}}{{.Type}}:{{.Destination}} {{end}}' "$tag-sv" 2>&1)
case " $mounts" in
*" volume:"*) t_fail "... with no anonymous volume (--image-volume=ignore)" "$mounts" ;;
*) t_ok "... with no anonymous volume (--image-volume=ignore)" ;;
esac
u2=$tag-ctr
users="$users $u2"
vpodman network connect "$tag-front" "$(vpodman ps -q -f "name=^$tag-sv\$")" >/dev/null 2>&1 || :
# LibreChat's container joins the front network: Network=vivarium-front.network.
if vpodman run --rm --network "$tag-front" --entrypoint python3 \
    -v "$PWD/tests/deploy/mcp_client.py:/c.py:ro" "$IMAGE" /c.py \
    "http://$tag-sv:8787/mcp" "$TOK" "$u2" >"$D/client" 2>&1; then
	t_ok "a container on the front network reaches the supervisor by name"
else
	t_fail "a container on the front network reaches the supervisor by name" \
	    "$(cat "$D/client"; vpodman logs "$tag-sv" 2>&1 | tail -20)"
fi
t_grep "... and runs a call in a sandbox the containerised supervisor made" \
    "run_python: exit code: 0.*sum 42" "$D/client"
t_check "... whose agent socket is in the shared state directory" \
    test -S "$D/state/vivarium/users/$u2/agent.sock"
if env -u VIVARIUM_SUPERVISOR_TOKEN VIVARIUM_URL="http://127.0.0.1:$sport" \
    VIVARIUM_TOKEN_FILE="$D/etc/vivarium/token" VIVARIUM_SMOKE_USER="$u2" \
    supervisor/smoke.sh >"$D/smoke" 2>&1; then
	t_ok "make smoke passes through its published port"
else
	t_fail "make smoke passes through its published port" "$(cat "$D/smoke")"
fi

t_done container
