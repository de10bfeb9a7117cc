#!/bin/sh
# tests/image/pip-offline.sh: the optional pip layer, end to end and without
# PyPI.  Builds a wheel of its own (a random value inside, so a stale image
# cannot pass), pins it with its sha256 and builds the image the way
# `make image PIP_EXTRAS=1 PIP_WHEELS=DIR` does: image/image.sh with the
# wheel directory, whose wheels pip installs with --no-index --find-links
# and --require-hashes.  Then a wrong hash must stop the build.  Runs in the
# tests' storage (tests/lib/podman.sh); the stack layers come from the cache.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/podman.sh
vp_env
fails=0
ok() { echo "ok - $*"; }
notok() { echo "not ok - $*"; fails=$((fails + 1)); }
tmp=$(mktemp -d)
VERSION=${IMAGE_VERSION:-$(sed -n 's/^VERSION[[:space:]]*:=[[:space:]]*//p' Makefile)}
tag=$VERSION-pipwheel
trap 'rm -rf "$tmp"; vpodman rmi -f "localhost/vivarium-sandbox:$tag" >/dev/null 2>&1' EXIT

# A wheel is a zip with a dist-info directory; this one is made with the
# standard library alone, so the test needs no build backend either.
token=$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
mkdir -p "$tmp/wheels"
python3 - "$tmp/wheels" "$token" <<'PY'
import base64, hashlib, sys, zipfile
out, token = sys.argv[1], sys.argv[2]
files = {
    "vivtest_wheel/__init__.py": f'TOKEN = "{token}"\n',
    "vivtest_wheel-1.0.dist-info/METADATA":
        "Metadata-Version: 2.1\nName: vivtest-wheel\nVersion: 1.0\n",
    "vivtest_wheel-1.0.dist-info/WHEEL":
        "Wheel-Version: 1.0\nGenerator: vivarium-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
record = []
for name, text in files.items():
    d = hashlib.sha256(text.encode()).digest()
    record.append(f"{name},sha256={base64.urlsafe_b64encode(d).rstrip(b'=').decode()},{len(text.encode())}")
record.append("vivtest_wheel-1.0.dist-info/RECORD,,")
files["vivtest_wheel-1.0.dist-info/RECORD"] = "\n".join(record) + "\n"
with zipfile.ZipFile(f"{out}/vivtest_wheel-1.0-py3-none-any.whl", "w") as z:
    for name, text in files.items():
        z.writestr(name, text)
PY
hash=$(sha256sum "$tmp/wheels/vivtest_wheel-1.0-py3-none-any.whl" | cut -c1-64)
printf 'vivtest-wheel==1.0 \\\n    --hash=sha256:%s\n' "$hash" >"$tmp/req.txt"

build() {
	PIP_EXTRAS=1 PIP_WHEELS="$tmp/wheels" PIP_REQUIREMENTS="$1" \
	    IMAGE_VERSION=$tag SUITE=trixie VIVARIUM_IMAGE_LATEST=0 \
	    VIVARIUM_IMAGE_KEEP=1 VIVARIUM_IMAGE_STORE=test image/image.sh build
}
t0=$(date +%s)
if ! build "$tmp/req.txt" >"$tmp/build.log" 2>&1; then
	notok "pip offline: the build with a local wheel failed: $(tail -n 15 "$tmp/build.log")"
elif ! grep -q "pip-extras: from the wheels in /tmp/vivarium/wheels only (no index)" "$tmp/build.log"; then
	notok "pip offline: the build did not take the wheel directory alone: $(grep pip-extras "$tmp/build.log")"
else
	got=$(vpodman run --rm --network none --entrypoint python3 \
	    "localhost/vivarium-sandbox:$tag" -c '
import sys, vivtest_wheel
print(vivtest_wheel.TOKEN, vivtest_wheel.__file__)
print(open("/usr/local/lib/python%d.%d/dist-packages/VIVARIUM-PIP-EXTRAS.txt" % sys.version_info[:2]).read())
' 2>&1)
	case "$got" in
	"$token /usr/local/lib/python3."*"/dist-packages/vivtest_wheel/__init__.py"*vivtest-wheel==1.0*)
		ok "pip offline: PIP_EXTRAS=1 with PIP_WHEELS installs the test's own wheel by its hash, no index ($(( $(date +%s) - t0 )) s)" ;;
	*)	notok "pip offline: the image does not have the wheel: $got" ;;
	esac
fi

# The same wheel with another hash pinned: pip must refuse it.
printf 'vivtest-wheel==1.0 --hash=sha256:%064d\n' 0 >"$tmp/bad.txt"
if build "$tmp/bad.txt" >"$tmp/build.log" 2>&1; then
	notok "pip offline: a wheel whose hash does not match the pin was installed"
elif grep -q "DO NOT MATCH THE HASHES" "$tmp/build.log"; then
	ok "pip offline: a wheel whose hash does not match the pin stops the build"
else
	notok "pip offline: unclear failure for a wrong hash: $(tail -n 15 "$tmp/build.log")"
fi
# A wheel directory that is not there is named before anything is built.
if out=$(PIP_WHEELS=$tmp/nowhere VIVARIUM_IMAGE_STORE=test image/image.sh build 2>&1); then
	notok "pip offline: a missing wheel directory went through"
elif echo "$out" | grep -q "is not a directory"; then
	ok "pip offline: a missing wheel directory is refused"
else
	notok "pip offline: unclear error for a missing wheel directory: $out"
fi
exit $((fails > 0))
