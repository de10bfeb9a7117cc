#!/bin/sh
# tests/deploy/install.sh: make install / make uninstall.
#   1. DESTDIR staging: every file in its place, the unit and the config name
#      the installed paths (never DESTDIR), the token is private, a second
#      install keeps the operator's config and token, uninstall removes all
#      but the config (PURGE=1: that too); the unit passes systemd-analyze
#      verify.
#   2. PREFIX/CONFDIR into a scratch tree, then the installed programs run
#      from there: the supervisor with its installed config against the
#      tests' Podman answers vivarium-smoke (a real sandbox, a real
#      run_python); vivariumctl renders from the installed templates; the
#      installed agent runs Python with the installed runner.
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

$MAKE --no-print-directory uninstall DESTDIR="$S" >"$D/log" 2>&1
left=$(cd "$S" && find . -type f | sort | tr '\n' ' ')
t_check "uninstall leaves the config and the token only" \
    test "$left" = "./etc/vivarium/egress.yaml ./etc/vivarium/supervisor.yaml ./etc/vivarium/token "
$MAKE --no-print-directory uninstall DESTDIR="$S" PURGE=1 >"$D/log" 2>&1
t_check "uninstall PURGE=1 removes them too" test ! -e "$S/etc/vivarium"

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

t_done install
