#!/bin/sh
# tests/deploy/quadlet.sh: every unit we ship, through the real quadlet
# generator (Debian trixie's, scripts/quadlet) with -dryrun, as the system
# and as a user: deploy/quadlet/* as committed and as make install writes
# them, and the per-user templates as `vivariumctl render` fills them (with
# and without the egress proxy's address).  Each must convert without an
# error or warning, and the podman command it becomes must carry the
# settings that make the container what it claims to be.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/podman.sh
. tests/deploy/lib.sh
BIN=${BIN:-bin}
D=$(mktemp -d /tmp/vquad.XXXXXX)
trap 'rm -rf "$D"' EXIT
TOK=0123456789abcdef0123

if ! scripts/quadlet -version >"$D/v" 2>&1; then
	t_fail "the quadlet generator runs" "$(cat "$D/v")"
	t_done quadlet
	exit 1
fi
t_ok "the quadlet generator runs (Podman $(cat "$D/v"))"

# NAME DIR [-user]: dry-run DIR; output in $D/NAME.out, messages in .err.
gen() {
	QUADLET_UNIT_DIRS=$2 scripts/quadlet -dryrun ${3-} >"$D/$1.out" 2>"$D/$1.err"
	_rc=$?
	# "Loading source unit file" is the only line a clean run prints.
	if [ $_rc -eq 0 ] && ! grep -v 'Loading source unit file' "$D/$1.err" | grep -q .; then
		t_ok "$1: converts cleanly"
	else
		t_fail "$1: converts cleanly" "$(cat "$D/$1.err")"
	fi
}
# NAME SERVICE FLAG...: the ExecStart of SERVICE in NAME's output has
# every FLAG (fixed strings).
has() {
	_n=$1 _s=$2; shift 2
	sed -n "/^---$_s---\$/,/^---/p" "$D/$_n.out" | grep '^ExecStart=' >"$D/exec"
	if [ ! -s "$D/exec" ]; then
		t_fail "$_n: $_s is generated" "$(cat "$D/$_n.out")"
		return
	fi
	_miss=""
	for f in "$@"; do grep -qF -- "$f" "$D/exec" || _miss="$_miss [$f]"; done
	if [ -z "$_miss" ]; then t_ok "$_n: $_s runs with $*"
	else t_fail "$_n: $_s runs with every setting" "missing:$_miss
$(cat "$D/exec")"; fi
}

# The egress proxy's settings, as the supervisor gives them (supervisor/egress.c).
EGRESS="--name vivarium-egress|--network vivarium-egress|--read-only|--cap-drop all|--security-opt=no-new-privileges|--user 1000:1000|--entrypoint=/usr/local/bin/vivarium-egress|--init|--memory=512m|--pids-limit=256|--ulimit=nofile=16384:16384|VIVARIUM_EGRESS_LISTEN=0.0.0.0:3128|io.vivarium.role=egress|--uidmap 0:1000000000:65536|--gidmap 0:1000000000:65536|--ipc=none|-v %t/vivarium/egress:/run/vivarium-host:ro|VIVARIUM_EGRESS_HOST_ADDRESSES=/run/vivarium-host/host-addresses"
SUPERVISOR="--name vivarium-supervisor|--network vivarium-front|--read-only|--cap-drop all|--cap-add cap_chown --cap-add cap_dac_override --cap-add cap_fowner|--security-opt=no-new-privileges|--publish 127.0.0.1:8787:8787|/podman/podman.sock:/run/podman/podman.sock|--entrypoint=/usr/local/bin/vivarium-supervisor|-f %E/vivarium/supervisor.yaml"
check_deploy() {	# NAME
	_cd=$1
	IFS='|'; set -- $EGRESS; unset IFS
	has "$_cd" vivarium-egress.service "$@"
	IFS='|'; set -- $SUPERVISOR; unset IFS
	has "$_cd" vivarium-supervisor.service "$@"
	has "$_cd" vivarium-egress-network.service "network create" "--disable-dns" "vivarium-egress"
	has "$_cd" vivarium-front-network.service "network create" "vivarium-front"
	if sed -n '/^---vivarium-egress-network.service---$/,/^---/p' "$D/$_cd.out" |
	    grep '^ExecStart=' | grep -q -- --internal; then
		t_fail "$_cd: the egress network is not internal (the proxy's way out)"
	else
		t_ok "$_cd: the egress network is not internal (the proxy's way out)"
	fi
}

mkdir -p "$D/deploy"
cp deploy/quadlet/* "$D/deploy/"
gen deploy "$D/deploy"
check_deploy deploy
gen deploy-user "$D/deploy" -user
check_deploy deploy-user

# As make install writes them: the image of this version.
V=${IMAGE_VERSION:-$(sed -n 's/^VERSION[[:space:]]*:=[[:space:]]*//p' Makefile)}
make --no-print-directory install DESTDIR="$D/stage" VERSION="$V" >"$D/install.log" 2>&1 ||
    t_fail "make install" "$(cat "$D/install.log")"
gen installed "$D/stage/usr/local/share/vivarium/quadlet"
has installed vivarium-egress.service "localhost/vivarium-sandbox:$V"

# The per-user templates, filled by vivariumctl render.
mkdir -p "$D/plain"
printf 'token: %s\nstate_dir: /var/lib/vivarium\nimage: localhost/vivarium-sandbox:0.1.0\n' \
    "$TOK" >"$D/plain.yaml"
t_check "vivariumctl renders alice" "$BIN/vivariumctl" -f "$D/plain.yaml" render alice "$D/plain"
gen templates "$D/plain"
gen templates-user "$D/plain" -user
has templates vivarium-alice.service "--name vivarium-alice" "--network vivarium-alice" \
    "--read-only" "--cap-drop all" "--security-opt=no-new-privileges" "--user 1000:1000" \
    "--memory=2048m" "--cpus=2.00" "--pids-limit=128" "-v vivarium-alice-workspace:/workspace" \
    "-v /var/lib/vivarium/users/alice:/run/vivarium:rw" "--init" \
    "--http-proxy=false" "--stop-timeout=5" "--label io.vivarium.user=alice" \
    "--label io.vivarium.ids=shared" "VIVARIUM_SOCKET=/run/vivarium/agent.sock" \
    "VIVARIUM_PORT=off"
has templates vivarium-alice-network.service "--internal" "--disable-dns" "isolate=true" \
    "--label io.vivarium.user=alice" "--interface-name=viv" "vivarium-alice"
# The workspace volume carries the supervisor's labels (the uninstaller
# and `vivariumctl list` find volumes by them).
has templates vivarium-alice-workspace-volume.service "volume create" \
    "--label io.vivarium.managed=true" "--label io.vivarium.user=alice" \
    "vivarium-alice-workspace"
# Under gVisor, the runtime and its scaled pids limit, as the supervisor's.
mkdir -p "$D/runsc"
printf 'sandbox:\n  runtime: runsc\n' | cat "$D/plain.yaml" - >"$D/runsc.yaml"
t_check "vivariumctl renders alice for gVisor" "$BIN/vivariumctl" -f "$D/runsc.yaml" render alice "$D/runsc"
gen templates-runsc "$D/runsc"
has templates-runsc vivarium-alice.service "--runtime=runsc" "--pids-limit=1536"

# With the egress proxy: its address on alice's network, from Podman.
vp_start || exit 1
net=vivarium-$(vp_name q)
u=${net#vivarium-}
vp_on_exit "vpodman network rm -f $net >/dev/null 2>&1"
vpodman network create --internal --subnet 10.213.250.0/24 "$net" >/dev/null
mkdir -p "$D/egress"
printf 'egress:\n  container: vivarium-egress\n  port: 3128\n' | cat "$D/plain.yaml" - >"$D/egress.yaml"
t_check "vivariumctl renders a user with the egress proxy" \
    "$BIN/vivariumctl" -f "$D/egress.yaml" render "$u" "$D/egress"
gen templates-egress "$D/egress"
has templates-egress "vivarium-$u.service" "http_proxy=http://10.213.250.254:3128" \
    "https_proxy=http://10.213.250.254:3128" "--network $net"

# The check itself can fail: a key quadlet does not know.
mkdir -p "$D/bad"
cp deploy/quadlet/vivarium-egress.network "$D/bad/"
sed 's/^ReadOnly=true/ReadOnlyy=true/' deploy/quadlet/vivarium-egress.container >"$D/bad/vivarium-egress.container"
QUADLET_UNIT_DIRS=$D/bad scripts/quadlet -dryrun >/dev/null 2>"$D/bad.err"
rc=$?
t_check "a misspelt key fails the generator" test $rc -ne 0
t_grep "... and it names the key" "unsupported key 'ReadOnlyy'" "$D/bad.err"

t_done quadlet
