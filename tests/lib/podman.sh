# tests/lib/podman.sh: a private Podman for tests (source it; sh or bash).
#
# Tests must never see or touch the host's own containers, and images built
# for tests (the sandbox image takes minutes) must survive between runs.  So
# this library gives every test its own `podman system service` on its own
# socket, over a storage tree that belongs to vivarium's tests alone:
#
#   $VP_ROOT            /var/lib/vivarium-test   persistent: images, containers
#                                                db, volumes, network configs
#     storage/            --root (containers/storage)
#     networks/           network_config_dir (netavark JSON files)
#     containers.conf     written by vp_env, pointed at by CONTAINERS_CONF
#     storage.conf        written by vp_env, pointed at by CONTAINERS_STORAGE_CONF
#   $VP_RUN             /run/vivarium-test       runtime state shared by every
#     runroot/            --runroot              user of that storage (locks)
#     libpod/             --tmpdir
#     svc.XXXXXX/         one per service: podman.sock, service.log
#
# Several services may run at once over the same storage (Podman locks it);
# keep names unique per test (see vp_name) and remove what you create.
#
# API
#   vp_env             Set up the environment without starting a service:
#                      creates the directories, writes containers.conf and
#                      storage.conf, exports CONTAINERS_CONF and
#                      CONTAINERS_STORAGE_CONF.  Idempotent.  Enough for vpodman.
#   vpodman ARGS...    The podman CLI on the private storage (same flags the
#                      service uses): `vpodman images`, `vpodman build ...`.
#   vp_start           vp_env, then start `podman system service --time 0` on a
#                      fresh socket, wait until GET /_ping answers OK (fails
#                      after $VP_START_TIMEOUT seconds, default 30, printing the
#                      service log), and install the exit trap.  Exports:
#                        VP_SOCKET          path of the unix socket
#                        VIVARIUM_PODMAN_SOCKET  the same (what vivarium reads)
#                        VP_SVC_DIR         the service's directory (log: service.log)
#                        VP_SVC_PID         the service's pid
#   vp_stop            Run the on-exit commands (last registered first), stop
#                      the service (TERM, then KILL after 5 s), remove its
#                      directory.  Called by the exit trap; safe to call twice.
#   vp_on_exit CMD     Register a shell command to run at exit, before the
#                      service stops (e.g. "vpodman rm -f -t 0 mybox").  Use
#                      this instead of your own `trap ... EXIT`, which would
#                      replace the library's.
#   vp_api METHOD PATH [BODY]
#                      curl the service: prints the body, then a last line with
#                      the HTTP status.  PATH like /v4.0.0/libpod/info.
#   vp_name PREFIX     Prints PREFIX-<pid>-<random>, a name no concurrent test uses.
#
# Settings (environment, read by vp_env):
#   VP_ROOT, VP_RUN    the two trees above
#   VP_NOFILE          default nofile rlimit for containers (soft:hard), 4096:4096
#   VP_NPROC           default nproc rlimit for containers, 4096:4096
#   VP_SUBNET_POOL     where new networks get subnets, 10.213.0.0/16 (/24 each),
#                      kept away from Podman's default 10.88/10.89 so the
#                      host's own networks never collide with ours
#   VP_RUNTIME         the OCI runtime new containers get: runc (default), or
#                      a path such as deploy/vivarium-runsc (gVisor).  A
#                      container keeps the runtime it was made with, and one
#                      made with a path can be stopped and removed by a
#                      vpodman of any VP_RUNTIME.  Podman 4.3 ignores a
#                      container's own oci_runtime, so this is per service.
#
# Shared mounts: Podman 4.3.1 unmounts the volumes of a container with a
# user namespace (the supervisor's sandboxes: a workspace image each) from
# conmon's own mount namespace.  Where the host's mounts are private, as on
# these machines without systemd, the host's copy of the mount stays, and
# the next start fails with "is already mounted".  systemd makes every
# mount shared at boot; vp_env makes $VP_ROOT/storage/volumes a shared
# mount of its own (root only), which is all the tests need.
#
# Why these settings: crun fails on these cgroup-v1-hybrid hosts (runc works);
# there is no systemd as pid 1 (cgroupfs, file events); Podman's default
# rlimits (nofile 1048576) exceed the hosts' hard limit (20000), so every
# container would fail to start without explicit defaults.

VP_ROOT=${VP_ROOT:-/var/lib/vivarium-test}
VP_RUN=${VP_RUN:-/run/vivarium-test}
VP_NOFILE=${VP_NOFILE:-4096:4096}
VP_NPROC=${VP_NPROC:-4096:4096}
VP_SUBNET_POOL=${VP_SUBNET_POOL:-10.213.0.0/16}
VP_START_TIMEOUT=${VP_START_TIMEOUT:-30}
VP_RUNTIME=${VP_RUNTIME:-runc}
# A service belongs to the shell that started it: a script run from a test
# inherits VP_SOCKET (and may use it), but its own vp_start starts its own
# service and its exit never stops the caller's.  _vp_pid and _vp_dir are
# deliberately not exported.
VP_SOCKET=${VP_SOCKET:-}
_vp_pid=""
_vp_dir=""
_vp_exit_cmds=""

vp_env() {
	mkdir -p "$VP_ROOT/storage" "$VP_ROOT/networks" \
	    "$VP_RUN/runroot" "$VP_RUN/libpod" || return 1
	# Written to a temporary name and renamed: another test may be reading it.
	_vp_tmp="$VP_ROOT/containers.conf.$$"
	cat >"$_vp_tmp" <<EOF
# Written by tests/lib/podman.sh; edits are overwritten.
[containers]
default_ulimits = ["nofile=$VP_NOFILE", "nproc=$VP_NPROC"]
log_driver = "k8s-file"
pids_limit = 2048

[network]
network_backend = "netavark"
network_config_dir = "$VP_ROOT/networks"
default_network = "vivarium-test"
default_subnet = "${VP_SUBNET_POOL%.*.*}.255.0/24"
default_subnet_pools = [{"base" = "$VP_SUBNET_POOL", "size" = 24}]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$VP_RUN/events.log"
tmp_dir = "$VP_RUN/libpod"
image_default_transport = "docker://"

[engine.runtimes]
runc = ["/usr/sbin/runc", "/usr/bin/runc", "/usr/local/sbin/runc"]
EOF
	mv -f "$_vp_tmp" "$VP_ROOT/containers.conf" || return 1
	_vp_tmp="$VP_ROOT/storage.conf.$$"
	cat >"$_vp_tmp" <<EOF
# Written by tests/lib/podman.sh; edits are overwritten.
[storage]
driver = "overlay"
graphroot = "$VP_ROOT/storage"
runroot = "$VP_RUN/runroot"
EOF
	mv -f "$_vp_tmp" "$VP_ROOT/storage.conf" || return 1
	# The default network, written out so that its bridge is ours
	# (vivtest0) and not podman0, which the host's own Podman uses.
	if [ ! -e "$VP_ROOT/networks/vivarium-test.json" ]; then
		_vp_tmp="$VP_ROOT/networks/.vivarium-test.json.$$"
		cat >"$_vp_tmp" <<EOF
{
     "name": "vivarium-test",
     "id": "0c6a3e0f5d1b4f7a8e2d9c4b1a3f5e7d9c2b4a6f8e1d3c5b7a9f2e4d6c8b0a1f",
     "driver": "bridge",
     "network_interface": "vivtest0",
     "created": "2026-01-01T00:00:00Z",
     "subnets": [{"subnet": "${VP_SUBNET_POOL%.*.*}.255.0/24", "gateway": "${VP_SUBNET_POOL%.*.*}.255.1"}],
     "ipv6_enabled": false,
     "internal": false,
     "dns_enabled": false,
     "ipam_options": {"driver": "host-local"}
}
EOF
		mv -f "$_vp_tmp" "$VP_ROOT/networks/vivarium-test.json" || return 1
	fi
	_vp_shared_volumes
	export CONTAINERS_CONF="$VP_ROOT/containers.conf"
	export CONTAINERS_STORAGE_CONF="$VP_ROOT/storage.conf"
	# Never let a CONTAINER_HOST from outside turn vpodman into a remote client.
	unset CONTAINER_HOST
}

_vp_shared_volumes() {
	# Every caller runs from the tree's root.
	if [ ! -x scripts/shared-mount ]; then
		echo "tests/lib/podman.sh: run from the tree's root" \
		    "(no scripts/shared-mount in $(pwd))" >&2
		return 1
	fi
	scripts/shared-mount "$VP_ROOT/storage/volumes"
}

vpodman() {
	# conmon, which podman starts beside each container, creates a file
	# "oom" in its working directory when the kernel OOM-kills in the
	# container (cgroup v1).  Commands that start containers run from
	# $VP_RUN so that it never lands in the tree; the others stay where
	# they are, as they may name files relative to it (build -f ...).
	case "${1:-}" in
	run|start|restart|system) _vp_cwd=$VP_RUN ;;
	*) _vp_cwd=. ;;
	esac
	${_vp_exec:-} env -C "$_vp_cwd" CONTAINERS_CONF="$VP_ROOT/containers.conf" \
	CONTAINERS_STORAGE_CONF="$VP_ROOT/storage.conf" \
	podman --root "$VP_ROOT/storage" --runroot "$VP_RUN/runroot" \
	    --tmpdir "$VP_RUN/libpod" --storage-driver overlay \
	    --runtime "$VP_RUNTIME" --cgroup-manager cgroupfs --events-backend file \
	    --network-config-dir "$VP_ROOT/networks" "$@"
}

vp_api() {
	if [ -z "$VP_SOCKET" ]; then
		echo "vp_api: no service (call vp_start)" >&2
		return 1
	fi
	if [ $# -ge 3 ]; then
		curl -sS --unix-socket "$VP_SOCKET" -X "$1" \
		    -H 'Content-Type: application/json' --data-binary "$3" \
		    -w '\n%{http_code}\n' "http://d$2"
	else
		curl -sS --unix-socket "$VP_SOCKET" -X "$1" \
		    -w '\n%{http_code}\n' "http://d$2"
	fi
}

vp_name() {
	printf '%s-%s-%s\n' "$1" "$$" "$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')"
}

vp_on_exit() {
	# Newest first, so later resources (containers) go before earlier
	# ones (their networks).
	_vp_exit_cmds="$1
$_vp_exit_cmds"
}

_vp_trap() {
	_vp_rc=$?
	set +e
	vp_stop
	exit "$_vp_rc"
}

vp_start() {
	vp_env || return 1
	if [ -n "$_vp_pid" ] && kill -0 "$_vp_pid" 2>/dev/null; then
		return 0
	fi
	command -v curl >/dev/null || { echo "vp_start: curl is missing" >&2; return 1; }
	_vp_dir=$(mktemp -d "$VP_RUN/svc.XXXXXX") || return 1
	VP_SVC_DIR=$_vp_dir
	VP_SOCKET="$_vp_dir/podman.sock"
	# A signal must still run the cleanup: exit through the EXIT trap.
	# PIPE too: `tests/... | head` must not leave containers behind.
	trap _vp_trap EXIT
	trap 'exit 129' HUP
	trap 'exit 130' INT
	trap 'exit 141' PIPE
	trap 'exit 143' TERM
	# exec in the background subshell, so that $! is podman's own pid and
	# vp_stop signals the service, not a shell that would leave it behind.
	( _vp_exec=exec; vpodman system service --time 0 "unix://$VP_SOCKET" ) \
	    >"$VP_SVC_DIR/service.log" 2>&1 </dev/null &
	_vp_pid=$!
	VP_SVC_PID=$_vp_pid
	export VP_SOCKET VP_SVC_DIR VP_SVC_PID
	export VIVARIUM_PODMAN_SOCKET="$VP_SOCKET"
	_vp_deadline=$(( $(date +%s) + VP_START_TIMEOUT ))
	while :; do
		if [ -S "$VP_SOCKET" ] && [ "$(curl -s --max-time 2 \
		    --unix-socket "$VP_SOCKET" http://d/_ping 2>/dev/null)" = OK ]; then
			return 0
		fi
		if ! kill -0 "$_vp_pid" 2>/dev/null; then
			echo "vp_start: podman service exited; its log:" >&2
			cat "$_vp_dir/service.log" >&2
			return 1
		fi
		if [ "$(date +%s)" -ge "$_vp_deadline" ]; then
			echo "vp_start: no _ping answer after ${VP_START_TIMEOUT}s; log:" >&2
			cat "$_vp_dir/service.log" >&2
			return 1
		fi
		sleep 0.05
	done
}

vp_stop() {
	if [ -n "$_vp_exit_cmds" ]; then
		_vp_cmds=$_vp_exit_cmds
		_vp_exit_cmds=""
		# One command per line; a failing one does not stop the others.
		while IFS= read -r _vp_c; do
			[ -z "$_vp_c" ] || eval "$_vp_c" >/dev/null 2>&1 || :
		done <<EOF
$_vp_cmds
EOF
	fi
	if [ -n "$_vp_pid" ]; then
		kill -TERM "$_vp_pid" 2>/dev/null || :
		_vp_i=0
		while kill -0 "$_vp_pid" 2>/dev/null && [ "$_vp_i" -lt 100 ]; do
			sleep 0.05
			_vp_i=$((_vp_i + 1))
		done
		kill -KILL "$_vp_pid" 2>/dev/null || :
		wait "$_vp_pid" 2>/dev/null || :
		_vp_pid=""
		VP_SVC_PID=""
	fi
	if [ -n "$_vp_dir" ]; then
		rm -rf "$_vp_dir" || :
		_vp_dir=""
		VP_SVC_DIR=""
		VP_SOCKET=""
	fi
	return 0
}
