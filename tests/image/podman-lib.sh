#!/bin/sh
# tests/image/podman-lib.sh: checks tests/lib/podman.sh itself.  A service
# started in a subshell answers on its own socket with the private settings,
# a second one runs beside it, and leaving the subshell stops each service,
# runs its on-exit commands and removes its directory.  Prints ok/not ok.
set -u
cd "$(dirname "$0")/../.."
fails=0
ok() { echo "ok - podman.sh: $*"; }
notok() { echo "not ok - podman.sh: $*"; fails=$((fails + 1)); }
out=$(mktemp)
marker=$(mktemp -u)
# Run from a test that has its own service, this script inherits its pid.
caller_pid=${VP_SVC_PID:-}

(
	. tests/lib/podman.sh
	vp_start || exit 1
	echo "dir=$VP_SVC_DIR pid=$VP_SVC_PID"
	vp_api GET /v4.0.0/libpod/info | head -n 1 | python3 -c 'import json, sys
i = json.load(sys.stdin)
print(i["host"]["ociRuntime"]["name"], i["host"]["cgroupManager"], i["host"]["networkBackend"], i["store"]["graphRoot"])'
	(
		_vp_pid= _vp_dir= _vp_exit_cmds=
		vp_start || exit 1
		echo "second=$VP_SOCKET $(curl -s --unix-socket "$VP_SOCKET" http://d/_ping)"
	)
	vp_on_exit "touch $marker"
	vpodman info --format 'cli {{.Host.OCIRuntime.Name}} {{.Store.GraphRoot}}'
) >"$out" 2>&1
rc=$?
dir=$(sed -n 's/^dir=\([^ ]*\) .*/\1/p' "$out")
pid=$(sed -n 's/.* pid=\([0-9]*\)$/\1/p' "$out")
[ "$rc" = 0 ] && ok "the service started and the subshell ended cleanly" ||
    notok "exit status $rc: $(cat "$out")"
grep -qx "runc cgroupfs netavark ${VP_ROOT:-/var/lib/vivarium-test}/storage" "$out" &&
    ok "the service uses runc, cgroupfs, netavark and the private storage" ||
    notok "service settings: $(cat "$out")"
grep -q '^second=.* OK$' "$out" && ok "a second service runs beside the first" ||
    notok "no second service: $(cat "$out")"
grep -qx "cli runc ${VP_ROOT:-/var/lib/vivarium-test}/storage" "$out" &&
    ok "vpodman uses the same runtime and storage" || notok "vpodman: $(cat "$out")"
if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null && [ -n "$dir" ] && [ ! -e "$dir" ]; then
	ok "the exit trap stopped the service and removed its directory"
else
	notok "after exit: pid $pid alive or $dir left behind"
fi
[ -e "$marker" ] && ok "the exit trap ran the on-exit command" || notok "on-exit command did not run"
if [ -n "$caller_pid" ]; then
	kill -0 "$caller_pid" 2>/dev/null &&
	    ok "the caller's service outlived this script's own" ||
	    notok "this script's exit stopped its caller's service"
fi
rm -f "$out" "$marker"
[ "$fails" = 0 ]
