#!/bin/sh
# supervisor/run.sh: `make run`, the service on this machine in the
# foreground: the supervisor, a Podman service for it, and the sandbox image.
#
#   1. Podman: uses $VIVARIUM_PODMAN_SOCKET when it answers, else
#      /run/podman/podman.sock when it answers, else starts
#      `podman --runtime runc system service` on /run/vivarium/podman.sock
#      over the host's storage (runc: crun fails on cgroup-v1 hosts; cgroupfs
#      and file events: no systemd needed) and stops it again on exit.
#      As root, makes the service's volume directory a shared mount
#      (scripts/shared-mount: workspace quotas need it on hosts without
#      systemd).
#      VIVARIUM_RUNTIME=runsc starts that service with gVisor instead
#      (--runtime deploy/vivarium-runsc) and gives the supervisor
#      sandbox.runtime: runsc and uid_base: 0 (docs/supervisor.md, gVisor),
#      the egress proxy no user namespace and 2048 pids; a service that
#      already answers must run gVisor already (the supervisor checks).
#   2. Token: $VIVARIUM_SUPERVISOR_TOKEN, else $VIVARIUM_TOKEN_FILE, the
#      one `make install` uses too: /etc/vivarium/token (not root:
#      ~/.config/vivarium/token); made once with 32 random bytes, mode
#      0600.  A token an older make run left in /var/lib/vivarium/token is
#      moved there, so LibreChat's copy stays good.
#   3. Config: $VIVARIUM_SUPERVISOR_CONFIG, else /etc/vivarium/supervisor.yaml
#      when present (what make install writes: the same service), else
#      built-in defaults (127.0.0.1:8787, auto provisioning) plus, unless
#      VIVARIUM_EGRESS=0, an egress section with manage: yes (written to
#      $RUNDIR/supervisor.yaml): the supervisor makes and keeps the egress
#      proxy container (docs/egress.md), configured by
#      $VIVARIUM_EGRESS_CONFIG, else /etc/vivarium/egress.yaml when present,
#      named $VIVARIUM_EGRESS_CONTAINER, _NETWORK, _BRIDGE when set.
#      A config file of yours needs its own egress section (the supervisor
#      warns when it has none).
#   4. Runs bin/vivarium-supervisor until Ctrl-C / SIGTERM; once it answers
#      /health, prints what to paste into LibreChat (supervisor/paste.sh)
#      for the address it listens on.  The egress proxy is left running:
#      sandboxes that outlive this run keep their way out.
# The image is built by the Makefile before this runs (make image).
set -eu
BIN=${BIN:-bin}
RUNDIR=${VIVARIUM_RUN_DIR:-/run/vivarium}
if [ "$(id -u)" = 0 ]; then
	CONFDIR=/etc/vivarium
else
	CONFDIR=${XDG_CONFIG_HOME:-$HOME/.config}/vivarium
fi
TOKEN_FILE=${VIVARIUM_TOKEN_FILE:-$CONFDIR/token}
mkdir -p "$RUNDIR"
(umask 022; mkdir -p "$(dirname "$TOKEN_FILE")")
case "${VIVARIUM_RUNTIME:=runc}" in
runc) runtime=runc ;;
runsc)
	runtime=$(cd "$(dirname "$0")/.." && pwd)/deploy/vivarium-runsc
	;;
*) echo "run: VIVARIUM_RUNTIME=\"$VIVARIUM_RUNTIME\": expected runc or runsc" >&2; exit 2 ;;
esac

ping_sock() {
	[ -S "$1" ] && [ "$(curl -s --max-time 2 --unix-socket "$1" http://d/_ping 2>/dev/null)" = OK ]
}

svc_pid=""
cleanup() {
	if [ -n "$svc_pid" ]; then
		kill -TERM "$svc_pid" 2>/dev/null || :
		wait "$svc_pid" 2>/dev/null || :
	fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

sock=${VIVARIUM_PODMAN_SOCKET:-}
if [ -n "$sock" ] && ping_sock "$sock"; then
	:
elif ping_sock /run/podman/podman.sock; then
	sock=/run/podman/podman.sock
else
	sock=$RUNDIR/podman.sock
	if ! ping_sock "$sock"; then
		rm -f "$sock"
		echo "run: starting a Podman service on $sock (log: $RUNDIR/podman.log)" >&2
		# From $RUNDIR: conmon writes a file "oom" into the directory
		# it starts in whenever a sandbox is OOM-killed (cgroup v1).
		env -C "$RUNDIR" podman --runtime "$runtime" --cgroup-manager cgroupfs \
		    --events-backend file system service --time 0 \
		    "unix://$sock" >"$RUNDIR/podman.log" 2>&1 &
		svc_pid=$!
		i=0
		until ping_sock "$sock"; do
			i=$((i + 1))
			if [ $i -gt 300 ] || ! kill -0 "$svc_pid" 2>/dev/null; then
				echo "run: the Podman service did not come up:" >&2
				cat "$RUNDIR/podman.log" >&2
				exit 1
			fi
			sleep 0.1
		done
	fi
fi
export VIVARIUM_PODMAN_SOCKET="$sock"
# Workspace quotas are loop mounts that Podman must be able to unmount
# again: their directory needs shared propagation (scripts/shared-mount).
vols=$(CONTAINER_HOST="unix://$sock" podman --remote info \
    --format '{{.Store.VolumePath}}' 2>/dev/null) || vols=""
[ -z "$vols" ] || "$(dirname "$0")/../scripts/shared-mount" "$vols" ||
	echo "run: cannot make $vols a shared mount; a sandbox with a" \
	    "workspace quota may fail to start a second time (docs/supervisor.md)" >&2

if [ -z "${VIVARIUM_SUPERVISOR_TOKEN:-}" ]; then
	tok=$TOKEN_FILE
	# Where make run kept it before: moved, so LibreChat's copy stays good.
	old=/var/lib/vivarium/token
	if [ ! -s "$tok" ] && [ -z "${VIVARIUM_TOKEN_FILE:-}" ] &&
	    [ "$(id -u)" = 0 ] && [ -s "$old" ]; then
		mv "$old" "$tok"
		echo "run: moved the token from $old to $tok (make install uses it too)" >&2
	fi
	if [ ! -s "$tok" ]; then
		(umask 077; od -An -N32 -tx1 /dev/urandom | tr -d ' \n' >"$tok")
		echo "run: made a new token in $tok" >&2
	fi
	VIVARIUM_SUPERVISOR_TOKEN=$(cat "$tok")
	export VIVARIUM_SUPERVISOR_TOKEN
	echo "run: token for LibreChat's Authorization header is in $tok" >&2
fi

egress=${VIVARIUM_EGRESS:-1}
case "$egress" in
0|1) ;;
*) echo "run: VIVARIUM_EGRESS=\"$egress\": expected 0 or 1" >&2; exit 2 ;;
esac
if [ -z "${VIVARIUM_EGRESS_CONFIG:-}" ] && [ -f "$CONFDIR/egress.yaml" ]; then
	VIVARIUM_EGRESS_CONFIG=$CONFDIR/egress.yaml
fi
[ "$egress" = 1 ] ||
	echo "run: VIVARIUM_EGRESS=0: no egress proxy; sandboxes have no network" >&2

conf=${VIVARIUM_SUPERVISOR_CONFIG:-$CONFDIR/supervisor.yaml}
if [ ! -f "$conf" ]; then
	# The built-in defaults plus what this run adds, in a file of our own.
	conf=$RUNDIR/supervisor.yaml
	{
		echo "# Written by supervisor/run.sh (make run) at every start: the"
		echo "# built-in defaults and what make run adds.  $CONFDIR/supervisor.yaml,"
		echo "# when present, is used instead (make install writes it)."
		if [ "$egress" = 1 ]; then
			echo "egress:"
			echo "  manage: yes"
			# Other names than the defaults (tests; a second service).
			[ -z "${VIVARIUM_EGRESS_CONTAINER:-}" ] ||
				echo "  container: $VIVARIUM_EGRESS_CONTAINER"
			[ -z "${VIVARIUM_EGRESS_NETWORK:-}" ] ||
				echo "  network: $VIVARIUM_EGRESS_NETWORK"
			[ -z "${VIVARIUM_EGRESS_BRIDGE:-}" ] ||
				echo "  bridge: $VIVARIUM_EGRESS_BRIDGE"
			[ -z "${VIVARIUM_EGRESS_CONFIG:-}" ] ||
				echo "  config: $(cd "$(dirname "$VIVARIUM_EGRESS_CONFIG")" && pwd)/$(basename "$VIVARIUM_EGRESS_CONFIG")"
		fi
		if [ "$VIVARIUM_RUNTIME" = runsc ]; then
			printf 'sandbox:\n  runtime: runsc\n  uid_base: 0\n'
		fi
	} >"$conf.tmp"
	mv -f "$conf.tmp" "$conf"
elif [ "$VIVARIUM_RUNTIME" = runsc ] && ! grep -Eq '^[[:space:]]+runtime:[[:space:]]*runsc' "$conf"; then
	echo "run: VIVARIUM_RUNTIME=runsc: the config needs sandbox: {runtime: runsc, uid_base: 0}" >&2
	exit 2
fi
[ -f "$conf" ] || conf=""
# -n prints the address the supervisor will listen on, after the config
# file and the environment: "... listen HOST:PORT, podman ...".
listen=$("$BIN/vivarium-supervisor" -n ${conf:+-f "$conf"} |
    sed -n 's/.* listen \(.*\):\([0-9]*\), podman .*/\1 \2/p')
"$BIN/vivarium-supervisor" ${conf:+-f "$conf"} &
sv_pid=$!
# Forward Ctrl-C / TERM to the supervisor, then stop our Podman service.
trap 'kill -TERM $sv_pid 2>/dev/null; wait $sv_pid; exit 0' INT TERM
if [ -n "$listen" ]; then
	set -- $listen
	case "$1" in
	0.0.0.0) probe=127.0.0.1 ;;
	::) probe="[::1]" ;;
	*:*) probe="[$1]" ;;
	*) probe=$1 ;;
	esac
	i=0
	while kill -0 "$sv_pid" 2>/dev/null && [ $i -lt 100 ]; do
		if curl -fs --max-time 1 -o /dev/null "http://$probe:$2/health"; then
			"$(dirname "$0")/paste.sh" "$1" "$2" "$VIVARIUM_SUPERVISOR_TOKEN"
			break
		fi
		i=$((i + 1))
		sleep 0.1
	done
fi
wait $sv_pid
