#!/bin/sh
# tests/image/measure.sh [N]: the image's figures.  Starts the test-storage
# image N times (default 5) with image/run-hardened.sh and reports the time
# from `podman run` to the first 200 from GET /health on the agent's socket
# (min, median, max), and the image's size.  Build time is printed by
# image/image.sh build ("build: done in ...").
set -eu
cd "$(dirname "$0")/../.."
. tests/lib/podman.sh
vp_start
n=${1:-5}
VERSION=${IMAGE_VERSION:-$(sed -n 's/^VERSION[[:space:]]*:=[[:space:]]*//p' Makefile)}
export VIVARIUM_IMAGE_STORE=test IMAGE_VERSION="$VERSION"
net=$(vp_name vivtest-measure)
tmp=$(mktemp -d)
vp_on_exit "rm -rf $tmp"
vp_on_exit "vpodman network rm -f $net"
i=0
while [ "$i" -lt "$n" ]; do
	name=$(vp_name vivtest-measure)
	sock="$tmp/sock$i"
	vp_on_exit "vpodman rm -f -t 0 $name"
	image/run-hardened.sh --name "$name" --network "$net" --workspace "$tmp/ws$i" \
	    --socket-dir "$sock" --wait 60 >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
	sed -n 's/.*ready in \([0-9]*\) ms.*/\1/p' "$tmp/err" >>"$tmp/ms"
	vpodman rm -f -t 0 "$name" >/dev/null
	i=$((i + 1))
done
sort -n "$tmp/ms" | awk '{ v[NR] = $1 } END {
	printf "start to ready (GET /health 200): min %d ms, median %d ms, max %d ms over %d starts\n",
	    v[1], v[int((NR + 1) / 2)], v[NR], NR }'
echo "image size: $(( $(vpodman image inspect --format '{{.Size}}' "localhost/vivarium-sandbox:$VERSION") / 1048576 )) MiB"
