#!/bin/sh
# tests/host/run.sh [SUITE...]: make test-host.  For Debian 13 (trixie:
# Podman 5.4, libmicrohttpd 1.0) and Debian 12 (bookworm: Podman 4.3.1),
# in turn, a whole host in a container (a "box": systemd as PID 1, its own
# Podman, no network, its own /var/lib/containers; ARCHITECTURE.md, "A
# whole host in a container"), and in it the durable install as the README
# says, a real reboot, an image rebuild and the uninstall
# (tests/host/inbox.sh says what each phase checks):
#
#   1. The box image of the suite (tests/host/box.sh: built once with the
#      network, kept in the tests' Podman storage, tests/lib/podman.sh).
#   2. The box, booted: podman run --privileged --systemd=always
#      --network none, a volume of its own at /var/lib/containers.
#   3. This source tree copied in (git's files, as a clone has them, with
#      the work tree's changes), the sandbox image the other suites use
#      loaded into the box's Podman (podman save | podman load).
#   4. inbox.sh install; the box rebooted (podman restart); inbox.sh
#      reboot, rebuild, uninstall.
# The box and its volume are removed at exit, on failure too.  Each step's
# time is printed; the last line counts the checks of every box.
#
# Environment: VIVARIUM_SANDBOX_IMAGE or IMAGE_VERSION (the image in the
# tests' storage), VIVARIUM_HOST_KEEP=1 (leave the box running after a
# failure, to look inside: podman exec -it NAME bash, with vpodman).
set -u
cd "$(dirname "$0")/../.."
. tests/lib/podman.sh

say() { echo "host: $*"; }
die() { say "$*" >&2; exit 1; }

SUITES=${*:-trixie bookworm}
VERSION=${IMAGE_VERSION:-$(sed -n 's/^VERSION[[:space:]]*:=[[:space:]]*//p' Makefile)}
IMAGE=${VIVARIUM_SANDBOX_IMAGE:-localhost/vivarium-sandbox:$VERSION}
vp_env
vpodman image exists "$IMAGE" ||
    die "$IMAGE is not in the test storage: run make image-for-tests"

# The box's limits: Podman's default nofile (1048576) is above these
# machines' hard limit (20000), and the egress proxy asks for 16384, which a
# container in a user namespace gets only under a hard limit at least that
# high: the machine's own.
nofile=$(ulimit -Hn)
[ "$nofile" != unlimited ] && [ "$nofile" -le 1048576 ] || nofile=1048576

boxes=""
failed=0
cleanup() {
	for b in $boxes; do
		if [ "${VIVARIUM_HOST_KEEP:-0}" = 1 ] && [ "$failed" != 0 ]; then
			say "kept $b (VIVARIUM_HOST_KEEP=1): vpodman rm -f $b; vpodman volume rm $b"
			continue
		fi
		vpodman rm -f -t 0 "$b" >/dev/null 2>&1
		vpodman volume rm -f "$b" >/dev/null 2>&1
	done
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

pass=0
log=$(mktemp /tmp/vivarium-host.XXXXXX)
trap 'cleanup; rm -f "$log"' EXIT

# took STEP: the seconds since the last step, for the timings line.
times=""
lap0=$(date +%s)
took() { _now=$(date +%s); times="$times, $1 $((_now - lap0))s"; lap0=$_now; }

# Until systemd in the box says it is up (running, or degraded with what
# failed printed).
boot_wait() {
	i=0
	while [ $i -lt 120 ]; do
		st=$(vpodman exec "$1" systemctl is-system-running 2>/dev/null)
		case "$st" in
		running) return 0 ;;
		degraded)
			say "$1 is degraded: $(vpodman exec "$1" systemctl --failed --no-legend --plain | tr '\n' ' ')"
			return 0 ;;
		esac
		i=$((i + 1)); sleep 0.5
	done
	say "$1 did not boot (systemctl is-system-running: ${st:-no answer})"
	return 1
}

# The tree as a clone has it, with the work tree's changes.
tree() {
	if git rev-parse --git-dir >/dev/null 2>&1; then
		git ls-files -co --exclude-standard | while IFS= read -r f; do
			[ -f "$f" ] && printf '%s\n' "$f"
		done | tar -c -T -
	else
		tar -c --exclude=./.git --exclude=./bin --exclude=./build \
		    --exclude=node_modules .
	fi
}

# phase BOX NAME: inbox.sh NAME, its lines shown and counted.
phase() {
	vpodman exec "$1" sh /root/vivarium/tests/host/inbox.sh "$2" >"$log" 2>&1
	rc=$?
	sed "s/^/$3 /" "$log"
	pass=$((pass + $(grep -c '^ok ' "$log")))
	failed=$((failed + $(grep -c '^FAIL ' "$log")))
	if [ "$rc" != 0 ] && ! grep -q '^FAIL ' "$log"; then
		failed=$((failed + 1))
		say "$3 inbox.sh $2 exited $rc"
	fi
	took "$2"
	return $rc
}

total0=$(date +%s)
for suite in $SUITES; do
	lap0=$(date +%s)
	times=""
	case "$suite" in
	trixie) tag=debian13 ;;
	bookworm) tag=debian12 ;;
	*) die "no box for $suite (trixie or bookworm)" ;;
	esac
	box=$(tests/host/box.sh "$suite") || { failed=$((failed + 1)); say "$tag: no box image"; continue; }
	took "box-image"
	name=vivtest-host-$tag-$$
	boxes="$boxes $name"
	vpodman volume create "$name" >/dev/null
	vpodman run -d --name "$name" --hostname "$tag" --privileged --systemd=always \
	    --network none --ulimit nofile=$nofile:$nofile --ulimit nproc=4096:4096 \
	    -v "$name:/var/lib/containers" "$box" >/dev/null ||
	    { failed=$((failed + 1)); say "$tag: the box did not start"; continue; }
	boot_wait "$name" || { failed=$((failed + 1)); continue; }
	took boot
	vpodman exec "$name" mkdir -p /root/vivarium
	tree | vpodman exec -i "$name" tar -C /root/vivarium -x ||
	    { failed=$((failed + 1)); say "$tag: copying the tree failed"; continue; }
	took copy
	vpodman save "$IMAGE" | vpodman exec -i "$name" podman load -q >"$log" 2>&1 ||
	    { failed=$((failed + 1)); say "$tag: podman load: $(cat "$log")"; continue; }
	took load-image
	say "$tag: $(vpodman exec "$name" sh -c '. /etc/os-release; echo "$PRETTY_NAME"'), $(vpodman exec "$name" podman --version 2>/dev/null)"

	phase "$name" install "$tag" || continue
	vpodman restart -t 10 "$name" >/dev/null &&
	    boot_wait "$name" || { failed=$((failed + 1)); say "$tag: the reboot failed"; continue; }
	took restart
	phase "$name" reboot "$tag"
	phase "$name" rebuild "$tag"
	phase "$name" uninstall "$tag"
	# Not a check: what crashed in the box since the reboot, for the log.
	segv=$(vpodman exec "$name" journalctl -b -k --no-pager 2>/dev/null | grep 'segfault at')
	[ -z "$segv" ] || say "$tag: the kernel saw $(echo "$segv" | wc -l) segfault(s) since the reboot, the first: $(echo "$segv" | head -n 1 | cut -c1-200)"
	if [ "$failed" = 0 ] || [ "${VIVARIUM_HOST_KEEP:-0}" != 1 ]; then
		vpodman rm -f -t 0 "$name" >/dev/null 2>&1
		vpodman volume rm -f "$name" >/dev/null 2>&1
		boxes=$(echo "$boxes" | sed "s/ $name//")
	fi
	took remove
	say "$tag: timings${times#,}"
done
say "all boxes: $(( $(date +%s) - total0 ))s"
echo "host: $pass passed, $failed failed"
[ "$failed" = 0 ]
