#!/bin/sh
# tests/kubeplay/run.sh: the test-kubeplay suite.  No Kubernetes can run
# here, but `podman kube play` runs Pod and PVC YAML: this takes exactly the
# objects `vivariumctl render --kubernetes USER` prints (what the backend
# would POST), drops what kube play cannot take (the NetworkPolicy), plays
# them in the tests' private Podman with the sandbox image, and reaches the
# agent at the Pod's IP and agent_port with the per-sandbox secret, as the
# supervisor does in a cluster: run_python, the securityContext seen from
# inside, then `kube down` and a new play of the Pod alone (the claim is
# kept, as the backend's idle stop keeps it) with the files and the
# namespace still there.  tests/kubeplay/README.md says what kube play
# (Podman 4.3.1) honours and what it ignores.
#
# Expects bin/vivariumctl, the image in the test storage (make
# image-for-tests; VIVARIUM_SANDBOX_IMAGE or IMAGE_VERSION pick the tag) and
# tests/e2e's node_modules (the MCP SDK client).
set -eu
cd "$(dirname "$0")/../.."
. tests/lib/podman.sh
vp_start

VERSION=${IMAGE_VERSION:-$(sed -n 's/^VERSION[[:space:]]*:=[[:space:]]*//p' Makefile)}
IMAGE=${VIVARIUM_SANDBOX_IMAGE:-localhost/vivarium-sandbox:$VERSION}
BIN=${BIN:-bin}
fails=0
ok() { echo "ok - $*"; }
notok() { echo "not ok - $*"; fails=$((fails + 1)); }
note() { echo "# $*"; }
# kube play starts containers: from $VP_RUN, as vpodman does for run/start.
kplay() { (cd "$VP_RUN" && vpodman kube "$@"); }

if ! vpodman image exists "$IMAGE"; then
	echo "test-kubeplay: $IMAGE is not in the test storage: run \`make image-for-tests\`" >&2
	exit 1
fi
podver=$(vpodman version --format '{{.Client.Version}}')
note "image $IMAGE, podman $podver"
tmp=$(mktemp -d)
vp_on_exit "rm -rf $tmp"

# ---------------------------------------------------------------- render
# A user of our own, a port and a uid base of our own: suites run beside
# each other on this storage, and kube play publishes containerPorts on the
# host (see the README).
rnd=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
user=kplay-$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
port=$((20000 + rnd % 20000))
uid_base=$((200000 + (rnd / 20000) % 500 * 1000))
od -An -N32 -tx1 /dev/urandom | tr -d ' \n' >"$tmp/link.key"
chmod 600 "$tmp/link.key"
cat >"$tmp/supervisor.yaml" <<EOF
listen: 127.0.0.1:8799
token: kubeplay-token-0123456789abcdef
backend: kubernetes
state_dir: $tmp/state
image: $IMAGE
links:
  key_file: $tmp/link.key
kubernetes:
  namespace: vivarium-kubeplay
  agent_port: $port
  uid_base: $uid_base
  # The uid path: kube play 4.3.1 is no kubelet, and its handling of
  # hostUsers says nothing of a node's (tests/kubeplay/README.md).
  user_namespace: false
  egress_proxy: 127.0.0.1:3128
EOF
if ! "$BIN/vivariumctl" -f "$tmp/supervisor.yaml" render --kubernetes "$user" \
    >"$tmp/rendered.yaml" 2>"$tmp/render.err"; then
	notok "vivariumctl render --kubernetes $user: $(cat "$tmp/render.err")"
	exit 1
fi
# Split the stream (JSON documents between --- lines) into what kube play
# gets, and the facts the checks need.
node - "$tmp" <<'EOF' || { notok "the rendered stream is not PVC, NetworkPolicy, Pod"; exit 1; }
const fs = require('fs');
const dir = process.argv[2];
const docs = fs.readFileSync(`${dir}/rendered.yaml`, 'utf8').split(/^---$/m)
  .filter((s) => s.trim()).map((s) => JSON.parse(s));
const kinds = docs.map((d) => d.kind).join(',');
if (kinds !== 'PersistentVolumeClaim,NetworkPolicy,Pod') { console.error(kinds); process.exit(1); }
const [pvc, , pod] = docs;
const c = pod.spec.containers[0];
const env = Object.fromEntries(c.env.map((e) => [e.name, e.value]));
const yaml = (list) => list.map((d) => `---\n${JSON.stringify(d, null, 1)}\n`).join('');
fs.writeFileSync(`${dir}/play.yaml`, yaml([pvc, pod]));
fs.writeFileSync(`${dir}/pod.yaml`, yaml([pod]));
fs.writeFileSync(`${dir}/facts`, [
  `pod=${pod.metadata.name}`, `claim=${pvc.metadata.name}`,
  `uid=${pod.spec.securityContext.runAsUser}`, `gid=${pod.spec.securityContext.runAsGroup}`,
  `fsgroup=${pod.spec.securityContext.fsGroup}`, `agent_port=${c.ports[0].containerPort}`,
  `secret=${env.VIVARIUM_AGENT_SECRET}`, `envport=${env.VIVARIUM_PORT}`, `envhost=${env.VIVARIUM_HOST}`,
  `memory=${c.resources.limits.memory}`, `cpu=${c.resources.limits.cpu}`,
  `grace=${pod.spec.terminationGracePeriodSeconds}`, ''].join('\n'));
EOF
. "$tmp/facts"
ok "render --kubernetes $user: PVC $claim, NetworkPolicy, Pod $pod"
note "dropped the NetworkPolicy: kube play takes no such kind (alone it is refused, in a stream skipped), so nothing enforces it here"
[ "$uid" = "$uid_base" ] && [ "$gid" = "$uid" ] && [ "$fsgroup" = "$uid" ] ||
	notok "the Pod's uid/gid/fsGroup $uid/$gid/$fsgroup are not uid_base $uid_base (slot 0)"
[ "$agent_port" = "$port" ] && [ "$envport" = "$port" ] && [ "$envhost" = 0.0.0.0 ] ||
	notok "the agent's port/env do not follow agent_port $port ($agent_port, $envhost:$envport)"

vp_on_exit "vpodman volume rm -f $claim"
vp_on_exit "cd $VP_RUN && vpodman kube down $tmp/pod.yaml"

# Waits for the Pod's agent; prints its address (the Pod's IP) or fails.
pod_url() {
	_infra=$(vpodman pod inspect "$pod" --format '{{.InfraContainerID}}') || return 1
	_ip=$(vpodman inspect "$_infra" --format \
	    '{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}' | awk '{print $1}')
	[ -n "$_ip" ] || return 1
	_end=$(( $(date +%s) + 60 ))
	while [ "$(date +%s)" -lt "$_end" ]; do
		if [ "$(curl -s --max-time 2 "http://$_ip:$port/health")" = ok ]; then
			echo "http://$_ip:$port"
			return 0
		fi
		sleep 0.2
	done
	return 1
}

# ---------------------------------------------------------------- play
if ! kplay play "$tmp/play.yaml" >"$tmp/play.out" 2>&1; then
	notok "kube play of the PVC and the Pod: $(cat "$tmp/play.out")"
	exit 1
fi
ok "kube play took the PVC (a volume $claim) and the Pod"
vpodman volume exists "$claim" || notok "no volume $claim from the claim"
ctr=$pod-sandbox
# fsGroup: the kubelet gives the volume's root to the group and makes it
# group-writable and setgid; kube play ignores fsGroup, and Podman gives
# a new volume the owner and mode of the image's /workspace (1000, 0750).
# Done by hand here, as the kubelet would, before the first call.
mnt=$(vpodman volume inspect "$claim" --format '{{.Mountpoint}}')
note "podman gave the new volume $(stat -c '%u:%g %a' "$mnt") (the image's /workspace); fsGroup is ignored, so: chgrp $fsgroup, chmod 2770 as the kubelet does"
chgrp "$fsgroup" "$mnt" && chmod 2770 "$mnt"

if ! url=$(pod_url); then
	notok "the agent in $pod never answered /health at the Pod's IP, port $port"
	vpodman logs "$ctr" 2>&1 | tail -20 | sed 's/^/#   /'
	exit 1
fi
ok "the agent answers at the Pod's IP and agent_port ($url/health), as PID 1 of its container"

# From outside: what Podman made of the Pod's fields.
insp() { vpodman inspect "$ctr" --format "$1"; }
[ "$(insp '{{.Config.User}}')" = "$uid:$gid" ] && ok "runAsUser/runAsGroup: the container's user is $uid:$gid" ||
	notok "the container's user is $(insp '{{.Config.User}}'), not $uid:$gid"
[ "$(insp '{{.HostConfig.ReadonlyRootfs}}')" = true ] && ok "readOnlyRootFilesystem: a read-only root" ||
	notok "the root file system is not read-only"
insp '{{json .HostConfig.SecurityOpt}}' | grep -q no-new-privileges && ok "allowPrivilegeEscalation: false: no-new-privileges" ||
	notok "no no-new-privileges: $(insp '{{json .HostConfig.SecurityOpt}}')"
[ "$(insp '{{.HostConfig.Memory}}')" = "$memory" ] && ok "limits.memory: $memory bytes" ||
	notok "memory limit $(insp '{{.HostConfig.Memory}}'), not $memory"
[ "$(insp '{{.HostConfig.RestartPolicy.Name}}')" = always ] && ok "restartPolicy: Always" ||
	notok "restart policy $(insp '{{.HostConfig.RestartPolicy.Name}}')"
labels=$(vpodman pod inspect "$pod" --format '{{json .Labels}}')
echo "$labels" | grep -q "\"vivarium.io/user\":\"$user\"" && ok "the Pod's labels carry the user" ||
	notok "labels: $labels"
note "ignored by kube play $podver: readinessProbe (healthcheck $(insp '{{json .Config.Healthcheck}}')), terminationGracePeriodSeconds $grace (stop timeout $(insp '{{.Config.StopTimeout}}')), ephemeral-storage, runAsNonRoot, seccompProfile (Podman's default filter applies anyway), automountServiceAccountToken, enableServiceLinks, the namespace"
note "published on the host by kube play: $(vpodman port "$ctr" | tr '\n' ' ')(Kubernetes publishes no containerPort without a hostPort; here the secret is all that guards it)"

token=kept-$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')
KP_UID=$uid KP_TOKEN=$token KP_PODMAN=$podver node tests/kubeplay/check.mjs "$url" "$secret" first ||
	fails=$((fails + 1))
vpodman logs "$ctr" 2>&1 | grep -q "$secret" && notok "the secret is in the agent's log" ||
	ok "the secret is not in the agent's log"

# ---------------------------------------------------------------- again
# Idle stop: the backend deletes the Pod and keeps the claim; the next
# request makes the Pod alone.  (kube play refuses a PVC whose volume
# exists, so the Pod alone is also all it can take again.)
if ! kplay down "$tmp/pod.yaml" >"$tmp/down.out" 2>&1; then
	notok "kube down: $(cat "$tmp/down.out")"
fi
vpodman pod exists "$pod" && notok "the Pod is still there after kube down"
vpodman volume exists "$claim" && ok "kube down removed the Pod and kept the claim's volume" ||
	notok "kube down removed the volume $claim"
if kplay play "$tmp/play.yaml" >"$tmp/replay.out" 2>&1; then
	notok "kube play took the PVC again although its volume exists"
	kplay down "$tmp/pod.yaml" >/dev/null 2>&1 || :
else
	note "kube play again with the PVC: $(tail -1 "$tmp/replay.out") (so the Pod is played alone)"
fi
if ! kplay play "$tmp/pod.yaml" >"$tmp/play2.out" 2>&1; then
	notok "kube play of the Pod alone: $(cat "$tmp/play2.out")"
	exit 1
fi
if ! url=$(pod_url); then
	notok "the new Pod's agent never answered /health"
	vpodman logs "$ctr" 2>&1 | tail -20 | sed 's/^/#   /'
	exit 1
fi
ok "the Pod played again answers at $url"
KP_UID=$uid KP_TOKEN=$token KP_PODMAN=$podver node tests/kubeplay/check.mjs "$url" "$secret" again ||
	fails=$((fails + 1))
owner=$(stat -c '%u' "$mnt/kept.txt" 2>/dev/null || echo none)
[ "$owner" = "$uid" ] && ok "the files on the volume belong to the Pod's uid $uid" ||
	notok "kept.txt is owned by $owner, not $uid"

echo "# test-kubeplay: $fails failure(s)"
[ "$fails" -eq 0 ]
