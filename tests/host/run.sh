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
# The boxes run at the same time (most of their time is waiting: apt,
# boots, podman save and load), each with its own log, printed in turn when
# all are done.  A box and its volume are removed at exit, on failure too.
# Each step's time is printed; the last line counts the checks of every
# box.
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

PREFIX=vivtest-host-$$
cleanup() {
	for b in $(vpodman ps -a --format '{{.Names}}' | grep "^$PREFIX-"); do
		if [ "${VIVARIUM_HOST_KEEP:-0}" = 1 ] && [ -e "$LOGS/$b.failed" ]; then
			say "kept $b (VIVARIUM_HOST_KEEP=1): vpodman rm -f $b; vpodman volume rm $b"
			continue
		fi
		vpodman rm -f -t 0 "$b" >/dev/null 2>&1
		vpodman volume rm -f "$b" >/dev/null 2>&1
	done
}
LOGS=$(mktemp -d /tmp/vivarium-host.XXXXXX)
trap 'cleanup; rm -rf "$LOGS"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

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

# box SUITE: one box, start to end, its lines on standard output; the last
# one is "host: TAG: N passed, M failed".
box() {
	suite=$1
	case "$suite" in
	trixie) tag=debian13 ;;
	bookworm) tag=debian12 ;;
	esac
	name=$PREFIX-$tag
	pass=0 failed=0 times=""
	lap0=$(date +%s)
	# took STEP: the seconds since the last step, for the timings line.
	took() { _now=$(date +%s); times="$times, $1 $((_now - lap0))s"; lap0=$_now; }
	# phase NAME: inbox.sh NAME, its lines shown and counted.
	phase() {
		vpodman exec "$name" sh /root/vivarium/tests/host/inbox.sh "$1" \
		    >"$LOGS/$tag.phase" 2>&1
		rc=$?
		sed "s/^/$tag /" "$LOGS/$tag.phase"
		pass=$((pass + $(grep -c '^ok ' "$LOGS/$tag.phase")))
		failed=$((failed + $(grep -c '^FAIL ' "$LOGS/$tag.phase")))
		if [ "$rc" != 0 ] && ! grep -q '^FAIL ' "$LOGS/$tag.phase"; then
			failed=$((failed + 1))
			say "$tag inbox.sh $1 exited $rc"
		fi
		took "$1"
		return $rc
	}
	end() {
		[ "$failed" = 0 ] || : >"$LOGS/$name.failed"
		echo "host: $tag: $pass passed, $failed failed"
	}
	box=$(tests/host/box.sh "$suite") || { failed=1; say "$tag: no box image"; end; return; }
	took "box-image"
	vpodman volume create "$name" >/dev/null
	vpodman run -d --name "$name" --hostname "$tag" --privileged --systemd=always \
	    --network none --ulimit nofile=$nofile:$nofile --ulimit nproc=4096:4096 \
	    -v "$name:/var/lib/containers" "$box" >/dev/null ||
	    { failed=1; say "$tag: the box did not start"; end; return; }
	boot_wait "$name" || { failed=1; end; return; }
	took boot
	vpodman exec "$name" mkdir -p /root/vivarium
	tree | vpodman exec -i "$name" tar -C /root/vivarium -x ||
	    { failed=1; say "$tag: copying the tree failed"; end; return; }
	took copy
	vpodman save "$IMAGE" | vpodman exec -i "$name" podman load -q \
	    >"$LOGS/$tag.load" 2>&1 ||
	    { failed=1; say "$tag: podman load: $(cat "$LOGS/$tag.load")"; end; return; }
	# Under the name the install expects, whatever its name here.
	[ "$IMAGE" = "localhost/vivarium-sandbox:$VERSION" ] ||
	    vpodman exec "$name" podman tag "$IMAGE" "localhost/vivarium-sandbox:$VERSION" ||
	    { failed=1; say "$tag: podman tag failed"; end; return; }
	took load-image
	say "$tag: $(vpodman exec "$name" sh -c '. /etc/os-release; echo "$PRETTY_NAME"'), $(vpodman exec "$name" podman --version 2>/dev/null)"

	phase install || { end; return; }
	vpodman restart -t 10 "$name" >/dev/null && boot_wait "$name" ||
	    { failed=$((failed + 1)); say "$tag: the reboot failed"; end; return; }
	took restart
	phase reboot
	phase rebuild
	phase uninstall
	if [ "$failed" = 0 ] || [ "${VIVARIUM_HOST_KEEP:-0}" != 1 ]; then
		vpodman rm -f -t 0 "$name" >/dev/null 2>&1
		vpodman volume rm -f "$name" >/dev/null 2>&1
	fi
	took remove
	say "$tag: timings${times#,}"
	end
}

for suite in $SUITES; do
	case "$suite" in
	trixie|bookworm) ;;
	*) die "no box for $suite (trixie or bookworm)" ;;
	esac
done
total0=$(date +%s)
pids=""
for suite in $SUITES; do
	box "$suite" >"$LOGS/$suite.log" 2>&1 &
	pids="$pids $!"
done
for p in $pids; do
	wait "$p"
done
pass=0 failed=0
for suite in $SUITES; do
	cat "$LOGS/$suite.log"
	last=$(grep '^host: [a-z0-9]*: [0-9]* passed, [0-9]* failed$' "$LOGS/$suite.log" | tail -n 1)
	if [ -z "$last" ]; then
		failed=$((failed + 1))
		say "$suite: the box's run ended without its count"
		continue
	fi
	set -- $last
	pass=$((pass + $3))
	failed=$((failed + $5))
done
say "all boxes: $(( $(date +%s) - total0 ))s"
echo "host: $pass passed, $failed failed"
[ "$failed" = 0 ]
