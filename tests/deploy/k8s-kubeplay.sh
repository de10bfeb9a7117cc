#!/bin/sh
# tests/deploy/k8s-kubeplay.sh: the two Deployments of deploy/kubernetes/
# through `podman kube play` (Podman 4.3.1) on the tests' image, as
# tests/deploy/k8s-kubeplay.mjs adapts them: a smoke test that the image
# and the specs fit together (commands, users, read-only roots, mounts,
# the init container's copy of the link key, the Secret in the
# environment), not a kubelet's behaviour (docs/kubernetes.md).
#   the egress proxy: listens where its ConfigMap says, runs as 1000:1000
#     with a read-only root, no capabilities, no-new-privileges and 512 MiB,
#     and refuses a private address, the metadata address and a port
#     allow_ports does not list;
#   the supervisor: its init container copies the key from the Secret's
#     volume to a 0600 file of uid 1000, and the supervisor serves /health
#     as 1000:1000 with a read-only root, takes the token from the Secret
#     and answers a call 503 while no API server answers; vivariumctl
#     runs beside it with the same configuration.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/podman.sh
. tests/deploy/lib.sh
IMAGE=$(t_image)
vp_env
D=$(mktemp -d /tmp/vkp.XXXXXX)
chmod 0755 "$D"
tag=$(vp_name kp)
TOKEN=$(openssl rand -hex 16)
KEY=$(openssl rand -hex 32)
# Unnamed volumes (64 hex digits), to see that the run leaves none.
anon_volumes() {
	vpodman volume ls -q 2>/dev/null | grep -E '^[0-9a-f]{64}$' | sort
}
anon_before=$(anon_volumes)
cleanup() {
	for f in egress supervisor; do
		[ -f "$D/$f.yaml" ] && vpodman kube down "$D/$f.yaml" >/dev/null 2>&1
	done
	# kube down leaves the volumes it made (ConfigMaps, emptyDirs) behind.
	for v in $(vpodman volume ls -q 2>/dev/null | grep "^$tag-"); do
		vpodman volume rm -f "$v" >/dev/null 2>&1
	done
	[ -z "${keySecret-}" ] || vpodman secret rm "$keySecret" "$tokenSecret" >/dev/null 2>&1
	rm -rf "$D"
	D=
}
trap '[ -z "$D" ] || cleanup' EXIT

if ! node tests/deploy/k8s-kubeplay.mjs "$tag" "$IMAGE" "$D" 2>"$D/err"; then
	t_fail "the Deployments adapted for kube play" "$(cat "$D/err")"
	t_done k8s-kubeplay
	exit 1
fi
. "$D/names.sh"

# NAME PATTERN: wait up to 10 s for container NAME's log to match.
logs_match() {
	_i=0
	while vpodman logs "$1" >"$D/log" 2>&1; ! grep -q -e "$2" "$D/log" && [ $_i -lt 50 ]; do
		_i=$((_i + 1)); sleep 0.2
	done
	grep -q -e "$2" "$D/log"
}
# NAME WHAT: the container runs as the manifests say.
runs_as() {
	_got=$(vpodman inspect "$1" --format 'user={{.Config.User}} ro={{.HostConfig.ReadonlyRootfs}} caps={{.EffectiveCaps}} sec={{.HostConfig.SecurityOpt}} mem={{.HostConfig.Memory}}' 2>&1)
	if [ "$_got" = "$2" ]; then t_ok "$1 runs as $2"
	else t_fail "$1 runs as $2" "$_got"; fi
}

# ---------------------------------------------------------------- egress
c=$tag-vivarium-egress-pod-0-egress
t_check "kube play: the egress proxy's Deployment" vpodman kube play "$D/egress.yaml"
if logs_match "$c" 'listening on 0.0.0.0:3128'; then
	t_ok "the proxy listens on its ConfigMap's address"
else
	t_fail "the proxy listens on its ConfigMap's address" "$(cat "$D/log")"
fi
runs_as "$c" 'user=1000:1000 ro=true caps=[] sec=[no-new-privileges] mem=536870912'
vpodman exec "$c" python3 -c '
import socket
for t in ["10.0.0.1:443", "169.254.169.254:80", "93.184.215.14:22"]:
    s = socket.create_connection(("127.0.0.1", 3128), timeout=5)
    s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (t, t)).encode())
    print(t, s.recv(200).decode().splitlines()[0])
' >"$D/refused" 2>&1
if [ "$(grep -c ' HTTP/1.1 403 ' "$D/refused")" = 3 ]; then
	t_ok "private, metadata and other ports refused through it"
else
	t_fail "private, metadata and other ports refused through it" "$(cat "$D/refused")"
fi

# ---------------------------------------------------------------- supervisor
# The Secrets as Podman 4.3.1 reads them: for an env secretKeyRef a JSON
# object of base64 values; for a volume a Secret whose data it writes out
# as it stands (not decoded).  The service account's files: stand-ins.
printf '{"%s":"%s"}' "$tokenKey" "$(printf %s "$TOKEN" | base64 -w0)" >"$D/token.json"
printf 'apiVersion: v1\nkind: Secret\nmetadata: {name: %s}\ndata: {link.key: "%s"}\n' \
    "$keySecret" "$KEY" >"$D/key.yaml"
mkdir -p "$D/sa"
echo stand-in-token >"$D/sa/token"
echo vivarium >"$D/sa/namespace"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$D/sa/key" -out "$D/sa/ca.crt" \
    -subj /CN=stand-in -days 1 >/dev/null 2>&1
chmod -R a+rX "$D/sa"
vpodman secret create "$tokenSecret" "$D/token.json" >/dev/null &&
    vpodman secret create "$keySecret" "$D/key.yaml" >/dev/null ||
    t_fail "podman secrets for the Secrets"
s=$tag-vivarium-supervisor-pod-0-supervisor
t_check "kube play: the supervisor's Deployment" vpodman kube play "$D/supervisor.yaml"
i=0
while ! vpodman exec "$s" python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/health')" \
    >"$D/health" 2>&1 && [ $i -lt 50 ]; do
	i=$((i + 1)); sleep 0.2
done
if [ $i -lt 50 ]; then t_ok "the supervisor serves /health on $port"
else t_fail "the supervisor serves /health on $port" "$(cat "$D/health"; vpodman logs "$s" 2>&1 | tail -20)"; fi
runs_as "$s" 'user=1000:1000 ro=true caps=[] sec=[no-new-privileges] mem=536870912'
got=$(vpodman exec "$s" sh -c "stat -c '%a %u' $keyFile; cat $keyFile" 2>&1)
if [ "$got" = "600 1000
$KEY" ]; then t_ok "the init container copied the Secret's key to a 0600 file of uid 1000"
else t_fail "the init container copied the Secret's key to a 0600 file of uid 1000" "$got"; fi
# The token from the Secret: a call with it passes the token check and
# meets the API server that is not there (503); a wrong one is 401.
call() {
	vpodman exec "$s" python3 -c "
import sys, urllib.request, urllib.error
r = urllib.request.Request('http://127.0.0.1:$port/mcp', method='POST',
    data=b'{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}',
    headers={'Authorization': 'Bearer ' + sys.argv[1], 'X-User-ID': 'alice',
             'Content-Type': 'application/json', 'Accept': 'application/json, text/event-stream'})
try: print(urllib.request.urlopen(r, timeout=60).status)
except urllib.error.HTTPError as e: print(e.code)
" "$1" 2>&1
}
got="$(call "$TOKEN") $(call wrong-token-0123456789)"
if [ "$got" = "503 401" ]; then t_ok "the token comes from the Secret (503 without an API server; a wrong one 401)"
else t_fail "the token comes from the Secret (503 without an API server; a wrong one 401)" "$got
$(vpodman logs "$s" 2>&1 | tail -10)"; fi
# vivariumctl in the same container, as `kubectl exec` runs it: the
# Pod's configuration and environment, the same API server.
vpodman exec "$s" vivariumctl -f /etc/vivarium/supervisor.yaml status alice >"$D/ctl" 2>&1
rc=$?
if [ $rc = 4 ] && grep -q 'not reachable' "$D/ctl"; then
	t_ok "vivariumctl in the supervisor's container reads its configuration (exit 4: no API server)"
else
	t_fail "vivariumctl in the supervisor's container reads its configuration (exit 4: no API server)" "exit $rc: $(cat "$D/ctl")"
fi
# Taken down here rather than at exit, to check what it leaves.
cleanup
left=$(anon_volumes | grep -vxF -e "$anon_before" -e '' || true)
if [ -z "$left" ]; then t_ok "kube down and the cleanup leave no unnamed volume behind"
else t_fail "kube down and the cleanup leave no unnamed volume behind" "$left"; fi
t_done k8s-kubeplay
