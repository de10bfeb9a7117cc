#!/bin/sh
# tests/host/box.sh SUITE: make sure the box image of SUITE (trixie or
# bookworm) is in the tests' Podman storage (tests/lib/podman.sh) and print
# its name.  Built once, with the network, from tests/host/Containerfile on
# the project's debootstrap base of SUITE (image/image.sh base), and kept:
# its label io.vivarium.box-key is the hash of what it is built from (the
# Containerfile, scripts/deps, the base image's id, the mirror), so it is
# built again only when one of those changed.  The box it replaces is
# removed.
#
# Environment: DEBIAN_MIRROR (default http://deb.debian.org).
set -eu
cd "$(dirname "$0")/../.."
. tests/lib/podman.sh
SUITE=${1:?usage: tests/host/box.sh trixie|bookworm}
case "$SUITE" in
trixie|bookworm) ;;
*) echo "box: SUITE must be trixie or bookworm, not $SUITE" >&2; exit 2 ;;
esac
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org}
BASE=localhost/vivarium-base:$SUITE
BOX=localhost/vivarium-testbox:$SUITE
say() { echo "box: $*" >&2; }

vp_env
# One build of a box at a time (make test builds them ahead, in the
# background, while test-host may ask for them; image/image.sh's locks).
mkdir -p "$VP_RUN/locks"
exec 9>"$VP_RUN/locks/box-$SUITE.lock"
flock -n 9 || { say "waiting for another build of $BOX"; flock 9; }
VIVARIUM_IMAGE_STORE=test SUITE=$SUITE image/image.sh base
key=$({ sha256sum <tests/host/Containerfile
	sha256sum <scripts/deps
	vpodman image inspect --format '{{.Id}}' "$BASE"
	echo "$SUITE $MIRROR"; } | sha256sum | cut -c1-64)
have=$(vpodman image inspect --format '{{index .Labels "io.vivarium.box-key"}}' \
    "$BOX" 2>/dev/null || true)
if [ "$have" = "$key" ]; then
	echo "$BOX"
	exit 0
fi
old=$(vpodman image inspect --format '{{.Id}}' "$BOX" 2>/dev/null || true)
say "building $BOX ($key)"
t0=$(date +%s)
ctx=$(mktemp -d /var/tmp/vivarium-box.XXXXXX)
trap 'rm -rf "$ctx"' EXIT
cp tests/host/Containerfile scripts/deps "$ctx/"
vpodman build --layers=false --ulimit nofile=4096:4096 --ulimit nproc=4096:4096 \
    --network vivarium-test -f "$ctx/Containerfile" \
    --build-arg BASE="$BASE" --build-arg SUITE="$SUITE" \
    --build-arg DEBIAN_MIRROR="$MIRROR" --label io.vivarium.box-key="$key" \
    -t "$BOX" "$ctx" >&2
[ -z "$old" ] || vpodman rmi "$old" >/dev/null 2>&1 || :
say "built $BOX in $(( $(date +%s) - t0 ))s"
echo "$BOX"
