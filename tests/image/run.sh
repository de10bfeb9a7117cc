#!/bin/sh
# tests/image/run.sh [TEST...]: the test-image suite.  Expects the image in
# the tests' private storage (`make image-for-tests` puts it there when its
# inputs changed).  Starts one container with image/run-hardened.sh, checks
# its hardening from the outside, then runs tests/image/client.mjs (the MCP
# SDK client) against it; TEST names pick client tests.
#
# SUITE=forky tests the forky flavour's image (VERSION-forky): the container
# and the client tests only, since the checks of the scripts, the key and
# the pip layer do not depend on the flavour and run with the default one.
set -eu
cd "$(dirname "$0")/../.."
root=$PWD
. tests/lib/podman.sh
vp_start

VERSION=${IMAGE_VERSION:-$(sed -n 's/^VERSION[[:space:]]*:=[[:space:]]*//p' Makefile)}
SUITE=${SUITE:-trixie}
export VIVARIUM_IMAGE_STORE=test IMAGE_VERSION="$VERSION" SUITE
IMAGE=$(image/image.sh tag)
fails=0
ok() { echo "ok - $*"; }
notok() { echo "not ok - $*"; fails=$((fails + 1)); }

if ! vpodman image exists "$IMAGE"; then
	echo "test-image: $IMAGE is not in the test storage: run \`make image-for-tests\`" >&2
	exit 1
fi
echo "# image $IMAGE ($SUITE): $(( $(vpodman image inspect --format '{{.Size}}' "$IMAGE") / 1048576 )) MiB"
tmp=$(mktemp -d)
vp_on_exit "rm -rf $tmp"

# The client's packages, from its lock file.
if [ ! -d tests/image/node_modules/@modelcontextprotocol/sdk ] ||
   [ tests/image/package-lock.json -nt tests/image/node_modules/.package-lock.json ]; then
	(cd tests/image && npm ci --no-audit --no-fund --loglevel=error)
fi

if [ "$SUITE" = trixie ]; then
# The private-Podman library every Podman test builds on.
tests/image/podman-lib.sh || fails=$((fails + 1))

# ---------------------------------------------------------------- one build
# make test builds images in the background while its suites ask for them:
# an ensure of an image being built waits for that build (its lock held
# here), says so, and then finds the image up to date.
mkdir -p "$VP_RUN/locks"
exec 6>"$VP_RUN/locks/image-trixie.lock"
flock 6
image/image.sh ensure >"$tmp/ensure.out" 2>&1 6>&- &
epid=$!
i=0
until grep -q "waiting for another build of image-trixie" "$tmp/ensure.out" || [ $i -ge 300 ]; do
	i=$((i + 1)); sleep 0.1
done
if ! kill -0 "$epid" 2>/dev/null; then
	notok "ensure did not wait for the build under way: $(cat "$tmp/ensure.out")"
elif [ $i -ge 300 ]; then
	notok "ensure waits without saying why: $(cat "$tmp/ensure.out")"
else
	ok "ensure waits for a build of the same image under way, and says so"
fi
exec 6>&-
if wait "$epid" && grep -q "is up to date" "$tmp/ensure.out"; then
	ok "then it finds that image up to date"
else
	notok "ensure after the wait: $(cat "$tmp/ensure.out")"
fi

# ---------------------------------------------------------------- bad input
# The run script refuses what would weaken the sandbox, in plain words.
if out=$(image/run-hardened.sh --no-such-flag 2>&1); then
	notok "run-hardened accepted an unknown option"
elif echo "$out" | grep -q "unknown option --no-such-flag"; then
	ok "run-hardened names an unknown option"
else
	notok "run-hardened: unclear error for an unknown option: $out"
fi
open_net=$(vp_name vivtest-open)
vpodman network create "$open_net" >/dev/null
vp_on_exit "vpodman network rm -f $open_net"
if out=$(image/run-hardened.sh --name "$(vp_name never)" --network "$open_net" 2>&1); then
	notok "run-hardened accepted a network with a way out"
elif echo "$out" | grep -q "is not internal"; then
	ok "run-hardened refuses a network that is not internal"
else
	notok "run-hardened: unclear error for an open network: $out"
fi
dns_net=$(vp_name vivtest-dns)
vpodman network create --internal "$dns_net" >/dev/null
vp_on_exit "vpodman network rm -f $dns_net"
if out=$(image/run-hardened.sh --name "$(vp_name never)" --network "$dns_net" 2>&1); then
	notok "run-hardened accepted an internal network whose DNS resolves outside names"
elif echo "$out" | grep -q "has DNS enabled"; then
	ok "run-hardened refuses an internal network with DNS"
else
	notok "run-hardened: unclear error for a network with DNS: $out"
fi
# The pip layer is off by default, and on without pins it stops clearly.
if PIP_EXTRAS=1 sh image/pip-extras.sh image/requirements-extra.txt "$tmp/pip" >"$tmp/out" 2>&1; then
	notok "pip-extras: PIP_EXTRAS=1 with nothing pinned went through"
elif grep -q "pins nothing" "$tmp/out"; then
	ok "pip-extras: PIP_EXTRAS=1 with nothing pinned stops with a clear message"
else
	notok "pip-extras: unclear failure: $(cat "$tmp/out")"
fi
printf 'polars==1.0.0\n' >"$tmp/req.txt"
if PIP_EXTRAS=1 sh image/pip-extras.sh "$tmp/req.txt" "$tmp/pip2" >"$tmp/out" 2>&1; then
	notok "pip-extras: a requirement without a hash went through"
elif grep -q "lack an exact == pin or a sha256 hash" "$tmp/out"; then
	ok "pip-extras: a requirement without a hash is refused"
else
	notok "pip-extras: unclear failure for a requirement without hash: $(cat "$tmp/out")"
fi
PIP_EXTRAS=0 sh image/pip-extras.sh image/requirements-extra.txt "$tmp/pip3"
if [ "$(ls -A "$tmp/pip3")" = VIVARIUM-PIP-EXTRAS.txt ]; then
	ok "pip-extras: off by default, installs nothing"
else
	notok "pip-extras: the off path left $(ls -A "$tmp/pip3")"
fi

# A lock line the mirror no longer has (Debian keeps only the newest
# version): by default that package comes at the mirror's version with a
# warning and every other line is still exact; LOCK_STRICT=1 refuses.
base=${VIVARIUM_BASE:-localhost/vivarium-base:trixie}
lk=$tmp/lock
mkdir -p "$lk"
cp image/apt-sources.sh image/apt-locked.sh "$lk/"
have=$(vpodman run --rm "$base" dpkg-query -W -f '${Version}' base-files)
printf '# test lock\nbase-files=%s\nhostname=0.0-vivarium-gone\n' "$have" >"$lk/test.lock"
locked() {
	vpodman run --rm --ulimit nofile=4096:4096 --ulimit nproc=4096:4096 \
	    -e LOCK_STRICT="$1" \
	    -v "$lk:/lock:ro,Z" "$base" sh /lock/apt-locked.sh /lock/test.lock
}
if ! locked 0 >"$tmp/out" 2>&1; then
	notok "apt-locked: a version gone from the mirror failed the build: $(tail -5 "$tmp/out")"
elif grep -q "no longer has these versions" "$tmp/out" &&
    grep -q "apt-locked:   hostname=0.0-vivarium-gone" "$tmp/out" &&
    grep -q "2 packages, 1 of them at exactly the locked version" "$tmp/out"; then
	ok "apt-locked: a version gone from the mirror comes at the mirror's version, named in a warning"
else
	notok "apt-locked: no clear warning for a gone version: $(cat "$tmp/out")"
fi
if locked 1 >"$tmp/out" 2>&1; then
	notok "apt-locked: LOCK_STRICT=1 installed a lock the mirror can't serve"
elif grep -q "cannot install /lock/test.lock exactly" "$tmp/out"; then
	ok "apt-locked: LOCK_STRICT=1 refuses a version gone from the mirror"
else
	notok "apt-locked: unclear failure with LOCK_STRICT=1: $(cat "$tmp/out")"
fi

# The image key: the same for the same inputs, moved by any one of them.
kt=$tmp/keytree
mkdir -p "$kt"
image/image.sh inputs | tar -c -T - | tar -C "$kt" -x
cp image/image.sh "$kt/image/"
key() { VIVARIUM_IMAGE_STORE=system "$1/image/image.sh" key; }
k0=$(key "$root") k1=$(key "$kt") k2=$(key "$kt")
echo "# keep me" >>"$kt/python/vivarium/__init__.py"
k3=$(key "$kt")
if [ "$k0" = "$k1" ] && [ "$k1" = "$k2" ] && [ "$k2" != "$k3" ] && [ ${#k0} = 64 ]; then
	ok "image key: stable for the same inputs, changed by an edit under python/"
else
	notok "image key: repo $k0, copy $k1 then $k2, after an edit $k3"
fi

tests/image/reference.sh || fails=$((fails + 1))
tests/image/pip-offline.sh || fails=$((fails + 1))
# Security updates without touching the tree: update -n resolves Debian's
# packages as they are today and reports what differs from the locks.
sums=$(cat image/*.lock image/packages.txt | sha256sum)
upd=$(mktemp -d)
if out=$(VIVARIUM_UPDATE_DIR=$upd image/image.sh update -n 2>&1); then
	rep=$(ls "$upd"/*-trixie.txt 2>/dev/null | head -n 1)
	if [ -n "$rep" ] && grep -q '^\[builder\]$' "$rep" && grep -q '^\[runtime\]$' "$rep" &&
	    echo "$out" | grep -q "package version(s) differ from the locks"; then
		ok "image update -n reports what differs from the locks ($(grep -c ' -> ' "$rep") package(s))"
	else
		notok "image update -n: no report: $out"
	fi
else
	notok "image update -n failed: $out"
fi
rm -rf "$upd"
if [ "$(cat image/*.lock image/packages.txt | sha256sum)" = "$sums" ]; then
	ok "... and leaves the tracked locks as they were"
else
	notok "image update -n changed a tracked lock"
fi
# The Debian 12 build on Debian 13's libraries (a distribution upgrade).
tests/image/hostlibs.sh "${AGENT_BIN:-bin/vivarium-agent}" "$IMAGE" ||
	fails=$((fails + 1))
fi # trixie only
python3 image/reference.py expect "$SUITE" >"$tmp/expect.json"

# ---------------------------------------------------------------- container
name=$(vp_name vivtest-sandbox)
net=$(vp_name vivtest-net)
ws=$(mktemp -d /var/tmp/vivtest-ws.XXXXXX)
sock=$(mktemp -d "$VP_RUN/vivtest-sock.XXXXXX")
rmdir "$sock"
chown 1000:1000 "$ws"
vp_on_exit "rm -rf $ws $sock"
vp_on_exit "vpodman network rm -f $net"
vp_on_exit "vpodman rm -f -t 0 $name"
# 1 GiB keeps the memory hog quick; the proxy is a TEST-NET address that
# never answers (the proxy test only checks that traffic heads for it).
image/run-hardened.sh --image "$IMAGE" --name "$name" --network "$net" --workspace "$ws" \
    --socket-dir "$sock" --memory 1g --proxy http://192.0.2.1:3128 \
    --wait 60 >/dev/null 2>"$tmp/ready" || {
	cat "$tmp/ready" >&2
	notok "the container did not get ready"
	exit 1
}
ok "container ready: $(sed -n 's/.*ready in \(.*\) ms.*/\1/p' "$tmp/ready") ms from start to GET /health"

# What Podman says it set up: the hardening is checked from outside too.
fmt='ro={{.HostConfig.ReadonlyRootfs}} add={{.HostConfig.CapAdd}} sec={{.HostConfig.SecurityOpt}} pids={{.HostConfig.PidsLimit}} mem={{.HostConfig.Memory}} swap={{.HostConfig.MemorySwap}} cpus={{.HostConfig.NanoCpus}} init={{.HostConfig.Init}} user={{.Config.User}} {{range .HostConfig.Ulimits}}{{.Name}}={{.Soft}}:{{.Hard}} {{end}}'
got=$(vpodman inspect --format "$fmt" "$name")
bad=
for want in "ro=true " "add=[] " "no-new-privileges" "pids=128 " "mem=1073741824 " \
    "swap=1073741824 " "cpus=2000000000 " "init=true " "user=1000:1000 " \
    "RLIMIT_NOFILE=4096:4096" "RLIMIT_NPROC=1024:1024"; do
	case "$got" in
	*"$want"*) ;;
	*) bad="$bad '$want'" ;;
	esac
done
if [ "$(vpodman network inspect --format '{{.Internal}}' "$net")" != true ]; then
	bad="$bad internal-network"
fi
if [ -z "$bad" ]; then
	ok "container settings: read-only, no caps, no-new-privileges, limits, rlimits, init, internal network"
else
	notok "container settings lack$bad: $got"
fi

# matplotlib in the sandbox uses the font list made with the image: no
# scan of the fonts ("generated new fontManager") and no temporary cache
# directory.  The same import with an empty cache directory and without
# vivarium does scan: the check can tell.
mpl='import logging, sys; logging.basicConfig(level=logging.INFO)
if sys.argv[1] == "seeded": import vivarium
import matplotlib.pyplot'
seeded=$(vpodman exec "$name" python3 -c "$mpl" seeded 2>&1)
control=$(vpodman exec -e MPLCONFIGDIR=/tmp/vivtest-mpl "$name" python3 -c "$mpl" control 2>&1)
if printf '%s' "$seeded" | grep -q -e 'generated new fontManager' -e 'temporary cache'; then
	notok "matplotlib in the sandbox scanned the fonts again or used a temporary cache: $seeded"
elif ! printf '%s' "$control" | grep -q 'generated new fontManager'; then
	notok "matplotlib: the control import did not scan the fonts, so the check cannot tell: $control"
else
	ok "matplotlib: the image's font list, no scan of the fonts, no warning"
fi

VIVARIUM_SUITE=$SUITE REFERENCE_EXPECT=$tmp/expect.json \
    node tests/image/client.mjs "$sock/agent.sock" "$ws" "$@" || fails=$((fails + 1))

if [ "$(vpodman inspect --format '{{.State.Running}}' "$name")" != true ]; then
	notok "the sandbox died during the tests; its log:"
	vpodman logs --tail 30 "$name" >&2
fi
[ "$fails" = 0 ] || { echo "test-image ($SUITE): $fails failure(s)" >&2; exit 1; }
echo "test-image ($SUITE): all passed"
