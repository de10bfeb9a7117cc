#!/bin/sh
# tests/rootless/run.sh: the test-rootless suite.  The supervisor as an
# ordinary user against that user's own rootless Podman, as an operator
# without root would run it.  Run as root: it makes the user.
#
#   1. A user of its own (useradd: a subordinate uid/gid range in
#      /etc/subuid and /etc/subgid), its XDG_RUNTIME_DIR /run/user/<uid>
#      (no logind here to make it), a containers.conf (runc: crun fails on
#      these cgroup-v1 hosts) and a storage.conf (native overlay, which
#      rootless Podman has on kernels from 5.13; vfs would copy the 2 GB
#      image per layer) in its home under /var/tmp.
#   2. The sandbox image copied from the tests' root storage
#      (tests/lib/podman.sh) into the user's: `podman save | podman load`.
#      The root storage is only read.
#   3. /dev/net/tun opened to everyone (0666) while the test runs:
#      slirp4netns, rootless Podman's way out, needs it and these machines
#      have it 0600.  Its mode is restored at exit.
#   4. As the user: its `podman system service` on
#      $XDG_RUNTIME_DIR/podman/podman.sock, an origin web server (python3
#      -m http.server in the same image) on a normal network, and the
#      settings of the real egress proxy, which the supervisor makes
#      (egress: manage; allowed to reach the origin's private subnet and
#      its port 8000).
#   5. As the user: tests/rootless/rootless.test.mjs, the MCP SDK client
#      against the supervisor (tests/supervisor/lib.mjs) on that socket.
# Everything it made (the user and its subordinate ranges, its processes,
# directories and storage) is removed at exit, on failure too.
#
# Environment: VIVARIUM_SUPERVISOR_BIN, VIVARIUM_CTL_BIN (the programs),
# VIVARIUM_SANDBOX_IMAGE or IMAGE_VERSION (the image in the root storage).
set -eu
cd "$(dirname "$0")/../.."
REPO=$(pwd)
. tests/lib/podman.sh

say() { echo "rootless: $*" >&2; }
die() { say "$*"; exit 1; }

[ "$(id -u)" = 0 ] || die "run as root: the test makes a user of its own"
for c in useradd userdel setpriv newuidmap newgidmap slirp4netns podman node; do
	command -v "$c" >/dev/null 2>&1 || die "$c is missing (scripts/deps podman rootless test)"
done
VERSION=${IMAGE_VERSION:-$(sed -n 's/^VERSION[[:space:]]*:=[[:space:]]*//p' Makefile)}
IMAGE=${VIVARIUM_SANDBOX_IMAGE:-localhost/vivarium-sandbox:$VERSION}
SV_BIN=${VIVARIUM_SUPERVISOR_BIN:-$REPO/bin/vivarium-supervisor}
CTL_BIN=${VIVARIUM_CTL_BIN:-$REPO/bin/vivariumctl}
vp_env
vpodman image exists "$IMAGE" ||
    die "$IMAGE is not in the test storage: run make image-for-tests"
if [ ! -d tests/e2e/node_modules/@modelcontextprotocol/sdk ]; then
	(cd tests/e2e && npm ci --no-audit --no-fund --loglevel=error)
fi

t0=$(date +%s)
tag=$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
NAME=vivrl-$tag
HOMED=""
RUNU=""
UIDN=""
svc_pid=""
tun_mode=""
made_run_user=""

# ---------------------------------------------------------------- cleanup
cleanup() {
	rc=$?
	set +e
	if [ -n "$UIDN" ]; then
		# Containers first (as the user, through its own podman), then
		# the service, then whatever of the user's is left (conmon,
		# slirp4netns, the rootless pause process): all of them
		# processes of a user this test made, each killed by its pid.
		[ -z "$svc_pid" ] || as_user podman rm -a -f -t 0 >/dev/null 2>&1
		[ -z "$svc_pid" ] || kill -TERM "$svc_pid" 2>/dev/null
		i=0
		while [ -n "$svc_pid" ] && kill -0 "$svc_pid" 2>/dev/null && [ $i -lt 50 ]; do
			sleep 0.1; i=$((i + 1))
		done
		for p in $(ps -o pid= -u "$UIDN" 2>/dev/null); do
			kill -KILL "$p" 2>/dev/null
		done
		i=0
		while [ -n "$(ps -o pid= -u "$UIDN" 2>/dev/null)" ] && [ $i -lt 50 ]; do
			sleep 0.1; i=$((i + 1))
		done
		userdel "$NAME" 2>/dev/null || say "userdel $NAME failed"
		# userdel leaves the subordinate ranges on some shadow versions.
		for f in /etc/subuid /etc/subgid; do
			if grep -q "^$NAME:" "$f" 2>/dev/null; then
				sed -i "/^$NAME:/d" "$f"
			fi
		done
		grep -q "^$NAME:" /etc/group 2>/dev/null && groupdel "$NAME" 2>/dev/null
	fi
	[ -z "$RUNU" ] || rm -rf "$RUNU"
	[ -z "$made_run_user" ] || rmdir /run/user 2>/dev/null
	[ -z "$HOMED" ] || rm -rf "$HOMED"
	[ -z "$tun_mode" ] || chmod "$tun_mode" /dev/net/tun
	say "cleaned up ($(( $(date +%s) - t0 )) s in all)"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

# as_user CMD...: CMD as the test user, in its home (it may not be able
# to reach this checkout), with only the environment a login would give it
# (no root's CONTAINERS_* settings).
as_user() {
	setpriv --reuid="$UIDN" --regid="$GIDN" --init-groups env -i \
	    HOME="$HOMED" USER="$NAME" LOGNAME="$NAME" \
	    XDG_RUNTIME_DIR="$RUNU" PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin \
	    LANG=C.UTF-8 ${AS_USER_ENV:-} sh -c 'cd "$HOME" && exec "$@"' as_user "$@"
}

# ---------------------------------------------------------------- the user
HOMED=$(mktemp -d /var/tmp/vivrl.XXXXXX)
chmod 0755 "$HOMED"
useradd --home-dir "$HOMED" --no-create-home --user-group \
    --shell /usr/sbin/nologin --comment "vivarium rootless test" "$NAME"
UIDN=$(id -u "$NAME")
GIDN=$(id -g "$NAME")
chown "$UIDN:$GIDN" "$HOMED"
grep -q "^$NAME:" /etc/subuid && grep -q "^$NAME:" /etc/subgid ||
    die "useradd gave $NAME no range in /etc/subuid and /etc/subgid (SUB_UID_COUNT in /etc/login.defs)"
say "user $NAME (uid $UIDN), subordinate uids $(sed -n "s/^$NAME://p" /etc/subuid)"
RUNU=/run/user/$UIDN
if [ ! -d /run/user ]; then
	mkdir /run/user
	made_run_user=1
fi
install -d -m 0700 -o "$UIDN" -g "$GIDN" "$RUNU"

mode=$(stat -c %a /dev/net/tun)
if [ "$mode" != 666 ]; then
	tun_mode=$mode
	chmod 0666 /dev/net/tun
fi

as_user mkdir -p "$HOMED/.config/containers" "$HOMED/storage"
as_user sh -c "cat >'$HOMED/.config/containers/storage.conf'" <<EOF
[storage]
driver = "overlay"
graphroot = "$HOMED/storage"
runroot = "$RUNU/containers"
EOF
as_user sh -c "cat >'$HOMED/.config/containers/containers.conf'" <<EOF
[containers]
default_ulimits = ["nofile=4096:4096", "nproc=4096:4096"]
log_driver = "k8s-file"

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
drv=$(as_user podman info --format '{{.Store.GraphDriverName}} {{.Host.Security.Rootless}}' 2>"$HOMED/info.err") ||
    die "podman info as $NAME failed: $(cat "$HOMED/info.err")"
[ "$drv" = "overlay true" ] || die "podman as $NAME: \"$drv\", expected \"overlay true\""

s=$(date +%s)
vpodman save "$IMAGE" | as_user podman load -q >/dev/null
say "image copied into $NAME's storage in $(( $(date +%s) - s )) s"

# ---------------------------------------------------------------- Podman
SOCK=$RUNU/podman/podman.sock
as_user mkdir -p "$RUNU/podman"
as_user podman system service --time 0 "unix://$SOCK" \
    >"$HOMED/service.log" 2>&1 </dev/null &
svc_pid=$!
i=0
until [ "$(curl -s --max-time 2 --unix-socket "$SOCK" http://d/_ping 2>/dev/null)" = OK ]; do
	i=$((i + 1))
	if [ $i -gt 300 ] || ! kill -0 "$svc_pid" 2>/dev/null; then
		cat "$HOMED/service.log" >&2
		die "the user's podman service did not answer on $SOCK"
	fi
	sleep 0.1
done

# ---------------------------------------------------------------- egress
# The origin: a web server on a normal network, a private address that the
# proxy is told to allow.  The sandboxes' networks are internal: they can
# reach it only through the proxy.
P() { as_user podman --remote --url "unix://$SOCK" "$@"; }
P network create --disable-dns vrl-origin >/dev/null
P run -d --name vrl-origin --network vrl-origin --user 1000:1000 \
    --entrypoint sh "$IMAGE" -c 'mkdir -p /tmp/o && echo hello-rootless >/tmp/o/hello.txt &&
    cd /tmp/o && exec python3 -m http.server 8000' >/dev/null
ORIGIN_IP=$(P inspect -f '{{(index .NetworkSettings.Networks "vrl-origin").IPAddress}}' vrl-origin)
ORIGIN_NET=$(P network inspect -f '{{range .Subnets}}{{.Subnet}}{{end}}' vrl-origin)
# The internet too, when this host reaches it: the proxy's own way out is
# then rootless Podman's (slirp4netns).  These machines resolve
# deb.debian.org to a documentation address (203.0.113.80) that the proxy
# rightly refuses as not public, so exactly that address is allowed too.
internet=0
allow=$ORIGIN_NET
net_ip=$(getent ahostsv4 deb.debian.org 2>/dev/null | awk 'NR == 1 { print $1 }')
if [ -n "$net_ip" ] && curl -s -o /dev/null --max-time 10 http://deb.debian.org/debian/; then
	internet=1
	allow=$allow,$net_ip/32
fi
# The proxy's settings; the supervisor makes the proxy (egress: manage).
printf 'allow_ports: [80, 443, 8000]\nallow_cidrs: [%s]\nverbose: yes\n' \
    "$(echo "$allow" | sed 's/,/, /g')" >"$HOMED/egress.yaml"
chmod 0644 "$HOMED/egress.yaml"

# The user may not be able to reach this checkout (a clone under a 0700
# directory: /root, mktemp -d's): it runs copies, in its home, of the
# programs and of what the test reads.
SRC=$HOMED/src
mkdir -p "$SRC/tests" "$SRC/bin"
cp Makefile "$SRC/"
cp -R tests/lib tests/e2e tests/supervisor tests/rootless "$SRC/tests/"
cp "$SV_BIN" "$SRC/bin/vivarium-supervisor"
cp "$CTL_BIN" "$SRC/bin/vivariumctl"
chmod -R a+rX "$SRC"

say "ready in $(( $(date +%s) - t0 )) s; running the client as $NAME"
AS_USER_ENV="VIVARIUM_PODMAN_SOCKET=$SOCK VIVARIUM_SANDBOX_IMAGE=$IMAGE
    VIVARIUM_SUPERVISOR_BIN=$SRC/bin/vivarium-supervisor VIVARIUM_CTL_BIN=$SRC/bin/vivariumctl
    VRL_ORIGIN=$ORIGIN_IP:8000 VRL_EGRESS=vivarium-egress VRL_INTERNET=$internet
    VRL_EGRESS_CONFIG=$HOMED/egress.yaml"
rc=0
as_user node --test --test-concurrency=1 "$SRC/tests/rootless/rootless.test.mjs" || rc=$?
AS_USER_ENV=""
exit $rc
