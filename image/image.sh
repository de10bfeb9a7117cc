#!/bin/sh
# image/image.sh COMMAND: build the sandbox image without any registry.
#
#   base     make sure the base image of $SUITE exists: pull it if a registry
#            answers, else debootstrap (minbase) and `podman import`
#   lock     resolve image/packages.txt against $SUITE into its locks
#   update   build the image with Debian's packages as they are today
#            (security updates included) without touching a tracked file:
#            the locks are resolved into a directory of our own, the image
#            built from them keeps the tracked inputs' key (so `ensure`
#            does not build the locked versions back), and what changed is
#            written to $VIVARIUM_UPDATE_DIR (default
#            /var/lib/vivarium/image-updates; not root:
#            ~/.local/state/vivarium/image-updates) and printed.  update -n
#            resolves and reports only.
#   key      print the hash of everything the image is built from
#   build    build the image now (layers are cached)
#   ensure   build only when no image carries the current key
#   prune    remove what earlier builds left (done after every build unless
#            VIVARIUM_IMAGE_KEEP=1)
#   run ...  run it hardened (image/run-hardened.sh ARGS)
#   tag      print the image's name and tag for this SUITE and version
#
# Environment:
#   VIVARIUM_IMAGE_STORE  system (default: the host's Podman storage) or test
#                         (the private storage of tests/lib/podman.sh)
#   VIVARIUM_IMAGE        image name, default localhost/vivarium-sandbox
#   IMAGE_VERSION         tag, default the Makefile's VERSION
#   SUITE                 trixie (default) or forky, the flavour: forky's
#                         image is tagged VERSION-forky and built from
#                         image/*.forky.lock (docs/image.md, "Flavours");
#                         bookworm only for `base` (tests/host/'s Debian 12)
#   VIVARIUM_BASE         base image, default localhost/vivarium-base:$SUITE
#   VIVARIUM_BASE_PULL    1 to try `podman pull debian:$SUITE` first (default 0:
#                         a pulled base differs from the debootstrapped one the
#                         lock was made from)
#   DEBIAN_MIRROR         scheme://host serving /debian and /debian-security,
#                         default http://deb.debian.org
#   DEBIAN_SNAPSHOT       for `lock`: resolve against snapshot.debian.org at this
#                         timestamp (e.g. 20251115T000000Z); the lock records it
#                         and the build then installs from that snapshot
#   PIP_EXTRAS            1 to add the hash-pinned pip layer (docs/image.md)
#   PIP_REQUIREMENTS      its requirements, default image/requirements-extra.txt
#   PIP_WHEELS            a directory of wheels: the pip layer installs from
#                         it alone (--no-index --find-links), without PyPI
#   VIVARIUM_IMAGE_LATEST 0 to leave the :latest tag alone (set for forky)
#   LOCK_STRICT           1 to fail the build when the mirror no longer has a
#                         locked version (default 0: that package comes at the
#                         mirror's current version, with a warning)
set -eu

cd "$(dirname "$0")/.."
IMAGE=${VIVARIUM_IMAGE:-localhost/vivarium-sandbox}
VERSION=${IMAGE_VERSION:-$(sed -n 's/^VERSION[[:space:]]*:=[[:space:]]*//p' Makefile)}
SUITE=${SUITE:-trixie}
LATEST=${VIVARIUM_IMAGE_LATEST:-1}
# The default flavour keeps the names it always had; another suite gets its
# own tag, locks and base.
case "$SUITE" in
trixie)	LOCKS="image/builder.lock image/runtime.lock" ;;
forky)	LOCKS="image/builder.forky.lock image/runtime.forky.lock"
	VERSION=$VERSION-forky LATEST=0 ;;
# Debian 12 only as a base, for the host boxes of tests/host/.
bookworm) [ "${1:-}" = base ] ||
	    { echo "image: SUITE=bookworm makes only a base (image.sh base)" >&2; exit 2; } ;;
*)	echo "image: SUITE must be trixie or forky (bookworm: base only), not $SUITE" >&2; exit 2 ;;
esac
BASE=${VIVARIUM_BASE:-localhost/vivarium-base:$SUITE}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org}
PIP_EXTRAS=${PIP_EXTRAS:-0}
PIP_REQUIREMENTS=${PIP_REQUIREMENTS:-image/requirements-extra.txt}
PIP_WHEELS=${PIP_WHEELS:-}
STORE=${VIVARIUM_IMAGE_STORE:-system}
# Explicit rlimits for build and lock containers: Podman's defaults exceed
# the hard nofile limit of these hosts.
ULIMITS="--ulimit nofile=4096:4096 --ulimit nproc=4096:4096"

case "$STORE" in
test)
	. tests/lib/podman.sh
	vp_env
	P() { vpodman "$@"; }
	NET=vivarium-test
	;;
system)
	# runc works wherever crun does, and crun fails on cgroup-v1 hosts.
	if command -v runc >/dev/null 2>&1; then
		P() { podman --runtime runc "$@"; }
	else
		P() { podman "$@"; }
	fi
	NET=
	;;
*)	echo "image: VIVARIUM_IMAGE_STORE must be system or test" >&2; exit 2 ;;
esac

say() { echo "image: $*" >&2; }

# hold FD NAME: take the lock NAME of this store on descriptor FD, waiting
# (and saying so) while another image.sh or tests/host/box.sh holds it; it
# is let go when this script exits.  make test builds images ahead in the
# background (scripts/run-suites -b) while its suites ask for the same ones,
# and two builds of one tag, or two debootstraps of one base, must not race.
# A child started with FD open holds the lock too (tests close it: 7>&-).
hold() {
	case "$STORE" in
	test)	ldir=$VP_RUN/locks ;;
	*)	ldir=build/locks ;;	# this tree's: nobody else writes there
	esac
	mkdir -p "$ldir"
	eval "exec $1>\"\$ldir/\$2.lock\""
	flock -n "$1" && return 0
	say "waiting for another build of $2"
	flock "$1"
}

# ---------------------------------------------------------------- base

# The base's lock is let go once it exists: a build on it need not wait
# for another one.
cmd_base() {
	hold 8 "base-$SUITE"
	make_base
	exec 8>&-
}

make_base() {
	if P image exists "$BASE"; then
		return 0
	fi
	if [ "${VIVARIUM_BASE_PULL:-0}" = 1 ] &&
	    timeout 120 P pull -q "docker.io/library/debian:$SUITE" >/dev/null 2>&1; then
		P tag "docker.io/library/debian:$SUITE" "$BASE"
		say "base: pulled debian:$SUITE as $BASE"
		return 0
	fi
	command -v debootstrap >/dev/null ||
	    { say "debootstrap is missing (scripts/deps image)"; exit 1; }
	say "base: no $BASE; debootstrap --variant=minbase $SUITE from $MIRROR"
	# An older debootstrap has no script for forky yet; testing is
	# bootstrapped like sid.
	script=
	[ -e "/usr/share/debootstrap/scripts/$SUITE" ] ||
	    script=/usr/share/debootstrap/scripts/sid
	t0=$(date +%s)
	tmp=$(mktemp -d /var/tmp/vivarium-base.XXXXXX)
	trap 'rm -rf "$tmp"' EXIT
	if ! debootstrap --variant=minbase "$SUITE" "$tmp/rootfs" "$MIRROR/debian" \
	    $script >"$tmp/debootstrap.log" 2>&1; then
		tail -n 20 "$tmp/debootstrap.log" >&2
		say "base: debootstrap failed"
		exit 1
	fi
	rm -rf "$tmp/rootfs/var/cache/apt/archives/"*.deb \
	    "$tmp/rootfs/var/lib/apt/lists/"* "$tmp/rootfs/var/log/"*.log
	tar -C "$tmp/rootfs" --numeric-owner -c . |
	    P import --change 'CMD ["/bin/bash"]' --change 'ENV LANG=C.UTF-8' \
	    --message "debootstrap --variant=minbase $SUITE $MIRROR/debian" \
	    - "$BASE" >/dev/null
	rm -rf "$tmp"
	trap - EXIT
	say "base: imported $BASE in $(( $(date +%s) - t0 ))s"
}

# ---------------------------------------------------------------- lock

# What a lock pins: its package lines, suite and snapshot, not its date.
lock_body() {
	grep -e '^[^#]' -e '^# snapshot:' -e '^# suite:' "$1"
}

cmd_lock() {
	cmd_base
	tmp=$(mktemp -d /var/tmp/vivarium-lock.XXXXXX)
	trap 'rm -rf "$tmp"' EXIT
	cp image/packages.txt image/apt-sources.sh image/lock-resolve.sh "$tmp/"
	P run --rm $ULIMITS ${NET:+--network "$NET"} -e DEBIAN_MIRROR="$MIRROR" \
	    -e DEBIAN_SNAPSHOT="${DEBIAN_SNAPSHOT:-}" -e SUITE="$SUITE" \
	    -v "$tmp:/lock:Z" "$BASE" sh /lock/lock-resolve.sh builder runtime
	# A lock whose versions did not move is left alone (its date too), so
	# relocking does not change the image key and rebuild for nothing.
	for out in $LOCKS; do
		stage=$(basename "$out" | cut -d. -f1)
		if [ -f "$out" ] &&
		    [ "$(lock_body "$out")" = "$(lock_body "$tmp/$stage.lock")" ]; then
			say "lock: $out unchanged"
		else
			cp "$tmp/$stage.lock" "$out"
			say "lock: wrote $out"
		fi
	done
	rm -rf "$tmp"
	trap - EXIT
}

# ---------------------------------------------------------------- key

# Every file the image is built from, one path a line.  The build context
# holds exactly these, so the key cannot miss an input.
inputs() {
	{
		echo Containerfile
		echo Makefile
		ls image/packages.txt $LOCKS image/apt-sources.sh \
		    image/apt-locked.sh image/pip-extras.sh \
		    image/requirements-extra.txt image/python-install.sh
		find common sandbox-agent python -type f \
		    ! -name '*.pyc' ! -path '*/__pycache__/*' ! -path '*/tests/*' \
		    ! -name '*.o' ! -name '*.d'
		# The proxy is built into the same image.
		find egress-proxy -type f ! -name '*.o' ! -name '*.d'
		# And the supervisor (deploy/quadlet/vivarium-supervisor.container);
		# its scripts are not inputs.
		find supervisor -type f ! -name '*.o' ! -name '*.d' ! -name '*.sh'
	} | LC_ALL=C sort -u
}

cmd_key() {
	{
		inputs | while IFS= read -r f; do
			printf '%s %s\n' "$(sha256sum <"$f" | cut -c1-64)" "$f"
		done
		# What the build puts in place of the default requirements and
		# the (empty) wheel directory.
		printf '%s requirements\n' "$(sha256sum <"$PIP_REQUIREMENTS" | cut -c1-64)"
		if [ -n "$PIP_WHEELS" ]; then
			(cd "$PIP_WHEELS" && find . -type f | LC_ALL=C sort | xargs -r sha256sum)
		fi
		echo "PIP_EXTRAS=$PIP_EXTRAS BASE=$BASE SUITE=$SUITE"
	} | sha256sum | cut -c1-64
}

# ---------------------------------------------------------------- build

# changes OLD NEW: the packages whose version differs, one a line:
# "name old -> new", "(none)" for a side that lacks it.
changes() {
	awk -F= '/^#/ { next }
	    FNR == NR { old[$1] = $2; next }
	    { new[$1] = $2 }
	    END {
		for (p in new) if (old[p] != new[p])
			printf "%s %s -> %s\n", p, (p in old) ? old[p] : "(none)", new[p]
		for (p in old) if (!(p in new))
			printf "%s %s -> (none)\n", p, old[p]
	    }' "$1" "$2" | LC_ALL=C sort
}

cmd_update() {
	dry=0
	[ "${1:-}" != -n ] || dry=1
	cmd_base
	work=$(mktemp -d /var/tmp/vivarium-update.XXXXXX)
	trap 'rm -rf "$work"' EXIT
	cp image/packages.txt image/apt-sources.sh image/lock-resolve.sh "$work/"
	P run --rm $ULIMITS ${NET:+--network "$NET"} -e DEBIAN_MIRROR="$MIRROR" \
	    -e SUITE="$SUITE" -e UPGRADE=1 -v "$work:/lock:Z" "$BASE" \
	    sh /lock/lock-resolve.sh builder runtime
	if [ "$(id -u)" = 0 ]; then
		dir=${VIVARIUM_UPDATE_DIR:-/var/lib/vivarium/image-updates}
	else
		dir=${VIVARIUM_UPDATE_DIR:-${XDG_STATE_HOME:-$HOME/.local/state}/vivarium/image-updates}
	fi
	mkdir -p "$dir"
	report=$dir/$(date -u +%Y%m%dT%H%M%SZ)-$SUITE.txt
	n=0
	{
		echo "# $IMAGE:$VERSION: Debian $SUITE packages today against the"
		echo "# tracked locks ($LOCKS), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
		for f in $LOCKS; do
			stage=$(basename "$f" | cut -d. -f1)
			echo "[$stage]"
			changes "$f" "$work/$stage.lock"
		done
	} >"$report"
	n=$(grep -c ' -> ' "$report" || :)
	# A lock that did not move is the tracked one, byte for byte: its
	# build layers are cached.
	for f in $LOCKS; do
		stage=$(basename "$f" | cut -d. -f1)
		[ "$(lock_body "$f")" != "$(lock_body "$work/$stage.lock")" ] ||
			cp "$f" "$work/$stage.lock"
	done
	say "update: $n package version(s) differ from the locks; $report"
	grep ' -> ' "$report" | head -n 40 >&2 || :
	[ "$n" -le 40 ] || say "update: ... and $((n - 40)) more in $report"
	if [ "$dry" = 1 ]; then
		rm -rf "$work"
		trap - EXIT
		return 0
	fi
	UPDATE_LOCKS=$work cmd_build
	rm -rf "$work"
	trap - EXIT
}

cmd_build() {
	hint="make lock"
	[ "$SUITE" = trixie ] || hint="make lock SUITE=$SUITE"
	for f in $LOCKS; do
		[ -s "$f" ] || { say "$f is missing: run \`$hint\`"; exit 1; }
	done
	[ -z "$PIP_WHEELS" ] || [ -d "$PIP_WHEELS" ] ||
	    { say "PIP_WHEELS=$PIP_WHEELS is not a directory"; exit 1; }
	cmd_base
	key=$(cmd_key)
	tmp=$(mktemp -d /var/tmp/vivarium-ctx.XXXXXX)
	trap 'rm -rf "$tmp"' EXIT
	inputs | tar -c -T - | tar -C "$tmp" -x
	# The Containerfile reads image/builder.lock and image/runtime.lock,
	# whatever the flavour; and the pip layer its requirements and wheels.
	for f in $LOCKS; do
		stage=$(basename "$f" | cut -d. -f1)
		[ "$f" = "image/$stage.lock" ] || mv "$tmp/$f" "$tmp/image/$stage.lock"
		# update: today's versions, built under the tracked key.
		[ -z "${UPDATE_LOCKS:-}" ] ||
			cp "$UPDATE_LOCKS/$stage.lock" "$tmp/image/$stage.lock"
	done
	cp "$PIP_REQUIREMENTS" "$tmp/image/requirements-extra.txt"
	mkdir -p "$tmp/image/wheels"
	[ -z "$PIP_WHEELS" ] || cp -R "$PIP_WHEELS/." "$tmp/image/wheels/"
	say "build: $IMAGE:$VERSION (inputs $key)"
	t0=$(date +%s)
	P build --layers $ULIMITS ${NET:+--network "$NET"} -f Containerfile \
	    --build-arg BASE="$BASE" --build-arg DEBIAN_MIRROR="$MIRROR" \
	    --build-arg PIP_EXTRAS="$PIP_EXTRAS" \
	    --build-arg LOCK_STRICT="${LOCK_STRICT:-0}" \
	    --label io.vivarium.inputs="$key" --label io.vivarium.suite="$SUITE" \
	    ${UPDATE_LOCKS:+--label io.vivarium.updated=$(date -u +%Y-%m-%dT%H:%M:%SZ)} \
	    --label org.opencontainers.image.version="$VERSION" \
	    -t "$IMAGE:$VERSION" $([ "$LATEST" = 0 ] || echo "-t $IMAGE:latest") "$tmp"
	rm -rf "$tmp"
	trap - EXIT
	size=$(P image inspect --format '{{.Size}}' "$IMAGE:$VERSION")
	say "build: done in $(( $(date +%s) - t0 ))s; $IMAGE:$VERSION is $((size / 1048576)) MiB"
	[ "${VIVARIUM_IMAGE_KEEP:-0}" = 1 ] || cmd_prune "$t0"
}

# Old builds pile up (a stack layer is 2 GB).  After a build, remove the
# leftovers of earlier ones of the same flavour (an image without a suite
# label is trixie's; the other flavour's cache stays, or building both in
# turn would rebuild each one's stages every time): untagged images
# labelled with another key, then
# each one's parents while they are untagged, older than this build and
# parents of nothing else (rmi refuses those), so the current build's cache
# and any build running beside this one stay.
cmd_prune() {
	key=$(cmd_key)
	before=${1:-$(date +%s)}
	freed=0
	for id in $(P images -q --no-trunc --filter dangling=true); do
		lbl=$(P image inspect --format '{{index .Labels "io.vivarium.inputs"}}/{{index .Labels "io.vivarium.suite"}}' "$id" 2>/dev/null) || continue
		suite=${lbl#*/} lbl=${lbl%%/*}
		[ "${suite:-trixie}" = "$SUITE" ] || continue
		[ -n "$lbl" ] && [ "$lbl" != "$key" ] || continue
		while [ -n "$id" ]; do
			info=$(P image inspect --format '{{.Created.Unix}} {{len .RepoTags}} {{.Parent}}' "$id" 2>/dev/null) || break
			set -- $info
			[ "$1" -lt "$before" ] && [ "$2" = 0 ] || break
			P rmi "$id" >/dev/null 2>&1 || break
			freed=$((freed + 1))
			id=${3:-}
		done
	done
	[ "$freed" = 0 ] || say "prune: removed $freed image(s) left by earlier builds"
}

image_key() {
	P image inspect --format '{{index .Labels "io.vivarium.inputs"}}' \
	    "$IMAGE:$VERSION" 2>/dev/null || true
}

cmd_ensure() {
	key=$(cmd_key)
	if [ "$(image_key)" = "$key" ]; then
		say "ensure: $IMAGE:$VERSION is up to date ($key)"
		return 0
	fi
	cmd_build
}

case "${1:-}" in
base)	cmd_base ;;
lock)	cmd_lock ;;
key)	cmd_key ;;
inputs)	inputs ;;
build)	hold 7 "image-$SUITE"; cmd_build ;;
prune)	cmd_prune ;;
ensure)	hold 7 "image-$SUITE"; cmd_ensure ;;
update)	shift; hold 7 "image-$SUITE"; cmd_update "$@" ;;
run)	shift; exec image/run-hardened.sh "$@" ;;
tag)	echo "$IMAGE:$VERSION" ;;
*)	echo "usage: image/image.sh base|lock|key|inputs|build|ensure|update [-n]|prune|run|tag" >&2; exit 2 ;;
esac
