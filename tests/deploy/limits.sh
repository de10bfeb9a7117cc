#!/bin/sh
# tests/deploy/limits.sh: when Podman cannot enforce the sandboxes' limits
# (rootless on cgroup v1, as on these machines; rootless on v2 without the
# controllers delegated), the supervisor says so loudly at start and
# `vivariumctl status` says so too; with rootful Podman they say nothing.
# The same for workspace quotas and per-sandbox host ids, which rootless
# Podman cannot give at all.
# Podman is the stand-in tests/deploy/fake_podman.mjs: these host facts
# cannot be changed on the test machine.
set -u
cd "$(dirname "$0")/../.."
. tests/deploy/lib.sh
BIN=${BIN:-bin}
D=$(mktemp -d /tmp/vlim.XXXXXX)
fp=""
trap '[ -z "$fp" ] || kill $fp 2>/dev/null; rm -rf "$D"' EXIT

# NAME ROOTLESS CGROUP CONTROLLERS: status and the supervisor's start log
# against a fake Podman with those facts, in $D/NAME.status / NAME.log.
probe() {
	rm -f "$D/p.sock"
	node tests/deploy/fake_podman.mjs "$D/p.sock" "$2" "$3" "$4" &
	fp=$!
	i=0; until [ -S "$D/p.sock" ] || [ $i -ge 50 ]; do i=$((i + 1)); sleep 0.1; done
	printf 'token: 0123456789abcdef0123\nstate_dir: %s/state\npodman:\n  socket: %s/p.sock\nlisten: 127.0.0.1:%s\n' \
	    "$D" "$D" "$(t_port)" >"$D/c.yaml"
	"$BIN/vivariumctl" -f "$D/c.yaml" status alice >"$D/$1.status" 2>&1
	"$BIN/vivariumctl" -f "$D/c.yaml" --json status alice >"$D/$1.json" 2>&1
	"$BIN/vivarium-supervisor" -f "$D/c.yaml" >"$D/$1.log" 2>&1 &
	sv=$!
	t_wait_for "listening on" "$D/$1.log" 10
	kill $sv; wait $sv 2>/dev/null
	kill $fp; wait $fp 2>/dev/null; fp=""
}

probe v1 true v1 "cpu,memory,pids"
t_grep "rootless on cgroup v1: the supervisor warns at start" \
    "WARNING: sandbox limits are NOT enforced: Podman is rootless on a cgroup v1 host" "$D/v1.log"
t_grep "... and vivariumctl status" "WARNING:   limits are NOT enforced: Podman is rootless" "$D/v1.status"
t_grep "... and --json says limits_enforced false" '"limits_enforced": *false' "$D/v1.json"
t_grep "rootless: no workspace quotas, said at start" \
    "WARNING: workspace quotas are NOT enforced: Podman is rootless" "$D/v1.log"
t_grep "... and in status" "WARNING:   the workspace quota is NOT enforced: Podman is rootless" "$D/v1.status"
t_grep "... and --json says quota_enforced false" '"quota_enforced": *false' "$D/v1.json"
t_grep "rootless without subordinate ids: an escape lands as the supervisor, said at start" \
    "WARNING: every sandbox runs as the supervisor's own host uid [0-9]* (keep-id): this user has no subordinate ids, so an escape from a sandbox lands as the supervisor" "$D/v1.log"

probe v2 true v2 "cpu,cpuset"
t_grep "rootless on v2 without memory delegated: named" \
    'no "memory" cgroup controller delegated' "$D/v2.log"
t_grep "... in status too" 'NOT enforced: rootless Podman has no "memory"' "$D/v2.status"

probe ok false v1 ""
if grep -q "NOT enforced\|same host uid\|own host uid" "$D/ok.log" "$D/ok.status"; then
	t_fail "rootful Podman: no warning" "$(cat "$D/ok.log" "$D/ok.status")"
else
	t_ok "rootful Podman: no warning"
fi
t_grep "... and --json says limits_enforced true" '"limits_enforced": *true' "$D/ok.json"
t_grep "... and quota_enforced true (mkfs.ext4 is here)" '"quota_enforced": *true' "$D/ok.json"
probe v2ok true v2 "cpu,memory,pids,io"
if grep -q "limits are NOT enforced" "$D/v2ok.log" "$D/v2ok.status"; then
	t_fail "rootless on v2 with the controllers: no warning" "$(cat "$D/v2ok.log")"
else
	t_ok "rootless on v2 with the controllers: no warning"
fi

t_done limits
