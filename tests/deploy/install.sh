#!/bin/sh
# tests/deploy/install.sh: make install / make uninstall.
#   1. DESTDIR staging: every file in its place, the unit and the config name
#      the installed paths (never DESTDIR), the token is private, a second
#      install keeps the operator's config and token, uninstall removes all
#      but the config and the state and says so, PURGE=1 refuses without
#      CONFIRM=yes and then removes them too; the unit passes systemd-analyze
#      verify.
#   2. PREFIX/CONFDIR into a scratch tree, then the installed programs run
#      from there: the supervisor with its installed config against the
#      tests' Podman answers vivarium-smoke (a real sandbox, a real
#      run_python); vivariumctl renders from the installed templates; the
#      installed agent runs Python with the installed runner.
#   3. make uninstall of that install, pointed at this test's own Podman
#      objects (the sandbox and egress proxy the supervisor made, images
#      and build layers made here; VIVARIUM_UNINSTALL_*): it names them and
#      keeps them; PURGE=1 refuses without CONFIRM=yes, and when Podman
#      does not answer; then it removes them, the config and the state,
#      and nothing else (another object with a vivarium label stays).
set -u
cd "$(dirname "$0")/../.."
. tests/lib/podman.sh
. tests/deploy/lib.sh
MAKE=${MAKE:-make}
D=$(mktemp -d /tmp/vinst.XXXXXX)
STATE=/run/vdi-$$
pids=""
cleanup() {
	for p in $pids; do kill -TERM "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	[ -z "${user:-}" ] || VIVARIUM_SUPERVISOR_TOKEN=0123456789abcdef0123 \
	    "$P/bin/vivariumctl" -f "$D/p/etc/vivarium/supervisor.yaml" \
	    remove-user --purge "$user" >/dev/null 2>&1
	rm -rf "$D" "$STATE"
}

# ---------------------------------------------------------------- DESTDIR
S=$D/stage
V=${IMAGE_VERSION:-$(sed -n 's/^VERSION[[:space:]]*:=[[:space:]]*//p' Makefile)}
MAKE="$MAKE VERSION=$V"
$MAKE --no-print-directory install DESTDIR="$S" >"$D/log" 2>&1 ||
    t_fail "make install DESTDIR=..." "$(cat "$D/log")"
for f in bin/vivarium-supervisor bin/vivariumctl bin/vivarium-agent \
    bin/vivarium-egress bin/vivarium-egress-hosts bin/vivarium-smoke; do
	t_check "installs $f, executable" test -x "$S/usr/local/$f"
done
for f in lib/vivarium/python/vivarium/_runner.py \
    lib/vivarium/python/vivarium_charts/__init__.py \
    share/vivarium/templates/vivarium-user.container \
    share/vivarium/templates/vivarium-user.network \
    share/vivarium/templates/vivarium-user.volume \
    share/vivarium/examples/supervisor.yaml.example \
    share/vivarium/examples/librechat.yaml.example \
    share/vivarium/examples/egress.yaml.example \
    lib/systemd/system/vivarium-supervisor.service \
    lib/systemd/system/vivarium-egress-hosts.service; do
	t_check "installs $f" test -f "$S/usr/local/$f"
done
unit=$S/usr/local/lib/systemd/system/vivarium-supervisor.service
t_grep "the unit runs the installed supervisor" \
    '^ExecStart=/usr/local/bin/vivarium-supervisor -f /etc/vivarium/supervisor.yaml$' "$unit"
t_check "no installed file names DESTDIR" sh -c "! grep -rl '$S' '$S'"
t_grep "the config names the installed token" '^token_file: /etc/vivarium/token$' "$S/etc/vivarium/supervisor.yaml"
t_grep "the config names this version's image" \
    "^image: localhost/vivarium-sandbox:$V\$" \
    "$S/etc/vivarium/supervisor.yaml"
t_check "the token is 64 hex digits, mode 0600" sh -c "
    test \"\$(stat -c %a '$S/etc/vivarium/token')\" = 600 &&
    grep -qx '[0-9a-f]\{64\}' '$S/etc/vivarium/token'"
# The proxy does not run without the host's addresses: the installed
# writer makes the list, which the config names at its container path.
t_check "the installed vivarium-egress-hosts lists the host's addresses" \
    sh -c '"$1" "$2" && grep -qx 127.0.0.1 "$2/host-addresses"' - \
    "$S/usr/local/bin/vivarium-egress-hosts" "$D/hosts"
t_check "the egress config passes vivarium-egress -n with that list" \
    env VIVARIUM_EGRESS_HOST_ADDRESSES="$D/hosts/host-addresses" \
    "$S/usr/local/bin/vivarium-egress" -n -f "$S/etc/vivarium/egress.yaml"
t_check "... and not without it" sh -c '! "$1" -n -f "$2" 2>/dev/null' - \
    "$S/usr/local/bin/vivarium-egress" "$S/etc/vivarium/egress.yaml"
# The installed config, as the installed system would read it: its
# /etc/vivarium paths point into the staging tree.
sed "s|/etc/vivarium/|$S/etc/vivarium/|" "$S/etc/vivarium/supervisor.yaml" >"$D/chroot.yaml"
t_check "the installed supervisor accepts the installed config (-n)" \
    env -u VIVARIUM_SUPERVISOR_TOKEN "$S/usr/local/bin/vivarium-supervisor" -n -f "$D/chroot.yaml"

# The plain systemd unit, checked by systemd's own parser (no systemd needs
# to run): with its installed paths pointed into the staging tree, so that
# the programs it names are the installed ones; systemd-analyze exits 0 on
# an unknown key or section, so any word on stderr fails the check too.
sed -e "s|/usr/local/|$S/usr/local/|g" -e "s|/etc/vivarium/|$S/etc/vivarium/|g" \
    "$unit" >"$D/vivarium-supervisor.service"
t_check "the installed unit passes systemd-analyze verify, silent" sh -c "
    systemd-analyze verify '$D/vivarium-supervisor.service' >'$D/verify' 2>&1 &&
    test ! -s '$D/verify' || { cat '$D/verify'; exit 1; }"

tok=$(cat "$S/etc/vivarium/token")
echo "# mine" >>"$S/etc/vivarium/supervisor.yaml"
$MAKE --no-print-directory install DESTDIR="$S" >"$D/log" 2>&1
t_check "a second install keeps the config" grep -q '^# mine$' "$S/etc/vivarium/supervisor.yaml"
t_check "... and the token" test "$(cat "$S/etc/vivarium/token")" = "$tok"
t_grep "... and says so" "kept /etc/vivarium/supervisor.yaml" "$D/log"

mkdir -p "$S/var/lib/vivarium/users/alice"
echo data >"$S/var/lib/vivarium/users/alice/file"
$MAKE --no-print-directory uninstall DESTDIR="$S" >"$D/log" 2>&1
left=$(cd "$S" && find . -type f | sort | tr '\n' ' ')
t_check "uninstall leaves the config, the token and the state only" \
    test "$left" = "./etc/vivarium/egress.yaml ./etc/vivarium/supervisor.yaml ./etc/vivarium/token ./var/lib/vivarium/users/alice/file "
t_grep "... and says what it kept: the config" "^install:   /etc/vivarium: egress.yaml supervisor.yaml token" "$D/log"
t_grep "... the users' files" "/var/lib/vivarium (users: users/ and workspaces/ hold every user's files)" "$D/log"
t_grep "... and how to remove them" "rm -rf /etc/vivarium /var/lib/vivarium" "$D/log"
if $MAKE --no-print-directory uninstall DESTDIR="$S" PURGE=1 >"$D/log" 2>&1; then
	t_fail "uninstall PURGE=1 without CONFIRM=yes is refused" "$(cat "$D/log")"
else
	t_grep "uninstall PURGE=1 without CONFIRM=yes is refused" \
	    "nothing was removed; to go ahead: make uninstall PURGE=1 CONFIRM=yes" "$D/log"
fi
t_grep "... saying it would delete the users' files" "^  /var/lib/vivarium (users" "$D/log"
t_check "... and removes nothing" test -f "$S/etc/vivarium/token" -a -f "$S/var/lib/vivarium/users/alice/file"
$MAKE --no-print-directory uninstall DESTDIR="$S" PURGE=1 CONFIRM=yes >"$D/log" 2>&1
t_check "uninstall PURGE=1 CONFIRM=yes removes them too" \
    test ! -e "$S/etc/vivarium" -a ! -e "$S/var/lib/vivarium"

# ---------------------------------------------------------------- run it
P=$D/p/usr/local
$MAKE --no-print-directory install PREFIX="$P" CONFDIR="$D/p/etc/vivarium" \
    STATEDIR="$D/p/state" UNITDIR="$D/p/units" >"$D/log" 2>&1 ||
    t_fail "make install PREFIX=..." "$(cat "$D/log")"
vp_on_exit cleanup
vp_start || exit 1
port=$(t_port)
user=$(vp_name inst)
# The installed config keeps the egress proxy (egress: manage); here under
# names of this run's, so that nothing clashes with another's.
eg=vivtest-egress-$$
vp_on_exit "vpodman rm -f -t 0 $eg >/dev/null 2>&1; vpodman network rm -f $eg >/dev/null 2>&1"
t_grep "the installed config keeps the egress proxy" '^  manage: yes$' "$D/p/etc/vivarium/supervisor.yaml"
sed -i "s|^  container: vivarium-egress\$|  container: $eg\\n  network: $eg\\n  bridge: vdi$$|" \
    "$D/p/etc/vivarium/supervisor.yaml"
env -u VIVARIUM_SUPERVISOR_TOKEN VIVARIUM_PODMAN_SOCKET="$VP_SOCKET" \
    VIVARIUM_SANDBOX_IMAGE="$(t_image)" VIVARIUM_STATE_DIR="$STATE" \
    VIVARIUM_SUPERVISOR_LISTEN="127.0.0.1:$port" \
    "$P/bin/vivarium-supervisor" -f "$D/p/etc/vivarium/supervisor.yaml" \
    >"$D/sv.log" 2>&1 &
sv_pid=$!
pids="$pids $!"
if t_wait_for "listening on" "$D/sv.log" 20; then
	t_ok "the installed supervisor starts with the installed config"
else
	t_fail "the installed supervisor starts with the installed config" "$(cat "$D/sv.log")"
fi
egress_up() {
	test "$(vpodman inspect --format '{{.State.Status}}' "$eg" 2>&1)" = running &&
	    ! grep -q 'WARNING.*egress' "$D/sv.log"
}
t_check "... and runs the egress proxy, with no warning" egress_up
if env -u VIVARIUM_SUPERVISOR_TOKEN VIVARIUM_URL="http://127.0.0.1:$port" \
    VIVARIUM_TOKEN_FILE="$D/p/etc/vivarium/token" VIVARIUM_SMOKE_USER="$user" \
    "$P/bin/vivarium-smoke" >"$D/smoke" 2>&1; then
	t_ok "vivarium-smoke passes against it with the installed token"
else
	t_fail "vivarium-smoke passes against it with the installed token" "$(cat "$D/smoke" "$D/sv.log")"
fi

mkdir -p "$D/render"
t_check "the installed vivariumctl renders from the installed templates" \
    env VIVARIUM_SUPERVISOR_TOKEN=0123456789abcdef0123 "$P/bin/vivariumctl" \
    -f "$D/p/etc/vivarium/supervisor.yaml" render alice "$D/render"
t_check "... a unit for alice" grep -q 'ContainerName=vivarium-alice' "$D/render/vivarium-alice.container"

aport=$(t_port)
mkdir -p "$D/ws"
t_check "the installed agent finds the installed runner" sh -c \
    "VIVARIUM_WORKDIR='$D/ws' '$P/bin/vivarium-agent' -n | grep -qx 'pythonpath *$P/lib/vivarium/python'"
env VIVARIUM_WORKDIR="$D/ws" VIVARIUM_HOST=127.0.0.1 VIVARIUM_PORT="$aport" \
    VIVARIUM_WARM=0 "$P/bin/vivarium-agent" >"$D/agent.log" 2>&1 &
pids="$pids $!"
t_wait_for "" "$D/agent.log" 1
i=0
until curl -fs -o /dev/null "http://127.0.0.1:$aport/health" || [ $i -ge 50 ]; do
	i=$((i + 1)); sleep 0.1
done
curl -s --max-time 60 -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' \
    --data-binary '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_python","arguments":{"code":"import vivarium_charts, vivarium\nprint(vivarium.__file__)"}}}' \
    "http://127.0.0.1:$aport/mcp" >"$D/run" 2>&1
t_grep "... and runs Python with it" "$P/lib/vivarium/python/vivarium/__init__.py" "$D/run"

# ---------------------------------------------------------------- uninstall
# What this test made, and nothing else, counts as vivarium's: the user's
# sandbox (container, network, volume: io.vivarium.user), the egress proxy
# and its network (by name), images named localhost/vivarium-uninst-<tag>
# and build layers labelled io.vivarium.uninst-<tag>.
kill -TERM "$sv_pid" 2>/dev/null; wait "$sv_pid" 2>/dev/null
tag=$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
img=localhost/vivarium-uninst-$tag
decoy=vivtest-uninst-decoy-$tag
vp_on_exit "vpodman rmi -f $img:1 >/dev/null 2>&1; vpodman volume rm -f $decoy >/dev/null 2>&1"
mkdir -p "$D/ctx"
# Two builds under one name: the first is left untagged, as an image
# rebuild leaves the one before.
for n in 1 2; do
	printf 'FROM %s\nLABEL io.vivarium.uninst-%s=%s\n' "$(t_image)" "$tag" "$n" >"$D/ctx/Containerfile"
	vpodman build -q -t "$img:1" "$D/ctx" >"$D/build$n" 2>&1 ||
	    t_fail "a test image" "$(cat "$D/build$n")"
done
layer=$(head -c 12 "$D/build1")
vp_on_exit "vpodman rmi -f $layer >/dev/null 2>&1"
vpodman volume create --label io.vivarium.managed=true "$decoy" >/dev/null
mkdir -p "$D/p/state/users/$user"
echo data >"$D/p/state/users/$user/file"
UNINST="PREFIX=$P CONFDIR=$D/p/etc/vivarium STATEDIR=$D/p/state UNITDIR=$D/p/units"
uninstall() {
	env PODMAN_SOCKET="${sock:-$VP_SOCKET}" \
	    VIVARIUM_UNINSTALL_FILTERS="label=io.vivarium.user=$user name=^$eg\$" \
	    VIVARIUM_UNINSTALL_IMAGES="$img" \
	    VIVARIUM_UNINSTALL_IMAGE_LABELS="io.vivarium.uninst-$tag" \
	    $MAKE --no-print-directory uninstall $UNINST "$@" >"$D/log" 2>&1
}
# Everything of the test's that the uninstall may remove, one a line.
ours() {
	for c in "vivarium-$user" "$eg"; do
		vpodman container exists "$c" && echo "container $c"
	done
	for n in "vivarium-$user" "$eg"; do
		vpodman network exists "$n" && echo "network $n"
	done
	vpodman volume exists "vivarium-$user-workspace" && echo "volume vivarium-$user-workspace"
	vpodman image exists "$img:1" && echo "image $img:1"
	vpodman image exists "$layer" && echo "layer $layer"
	[ ! -e "$D/p/etc/vivarium/token" ] || echo "the token"
	[ ! -e "$D/p/state/users/$user/file" ] || echo "a user's file"
}
ours >"$D/ours"
t_check "the test's objects are there: a sandbox, the proxy, images, files" \
    test "$(wc -l <"$D/ours")" = 9
uninstall
t_grep "uninstall names the Podman objects it kept: the sandbox" "Podman: containers (2): .*vivarium-$user" "$D/log"
t_grep "... the proxy" "Podman: containers (2): .*$eg" "$D/log"
t_grep "... the workspace" "Podman: volumes (1): vivarium-$user-workspace" "$D/log"
t_grep "... the images" "Podman: images (1): $img:1" "$D/log"
t_grep "... the build layers" "Podman: untagged image layers left by image builds (1)" "$D/log"
t_grep "... with the commands that remove them" "podman rm -f .*vivarium-$user" "$D/log"
t_check "... and keeps them" test "$(cat "$D/ours")" = "$(ours)"
if uninstall PURGE=1; then
	t_fail "PURGE=1 without CONFIRM=yes is refused" "$(cat "$D/log")"
else
	t_grep "PURGE=1 without CONFIRM=yes is refused" "nothing was removed" "$D/log"
fi
t_grep "... naming the sandbox it would delete" "Podman: containers (2): .*vivarium-$user" "$D/log"
t_check "... and removes nothing" test "$(cat "$D/ours")" = "$(ours)"
if sock=$D/nothing uninstall PURGE=1 CONFIRM=yes; then
	t_fail "PURGE=1 CONFIRM=yes is refused when Podman does not answer" "$(cat "$D/log")"
else
	t_grep "PURGE=1 CONFIRM=yes is refused when Podman does not answer" \
	    "Podman does not answer at $D/nothing" "$D/log"
fi
t_check "... and removes nothing" test "$(cat "$D/ours")" = "$(ours)"
if uninstall PURGE=1 CONFIRM=yes; then
	t_ok "PURGE=1 CONFIRM=yes"
else
	t_fail "PURGE=1 CONFIRM=yes" "$(cat "$D/log")"
fi
t_check "... removes every object, the config and the users' files" test -z "$(ours)"
t_check "... and nothing else: another object labelled io.vivarium.managed stays" \
    vpodman volume exists "$decoy"
t_check "... and the sandbox image stays" vpodman image exists "$(t_image)"

t_done install
