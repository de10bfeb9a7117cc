#!/bin/sh
# image/pip-lock.sh: regenerate image/requirements-extra.txt from
# image/requirements-extra.in.  Needs a machine that reaches PyPI (directly or
# through http_proxy/https_proxy) and a built image (`make image`).
#
# pip resolves inside the image, as root in a throwaway container, so that
# everything the image's Debian packages already provide (numpy, pandas,
# scipy, ...) satisfies the dependencies and only the missing distributions
# get pinned: installing those with --no-deps cannot shadow a Debian module.
# pip's installation report carries each wheel's sha256, which becomes the
# --hash pin.
set -eu
cd "$(dirname "$0")/.."
IMAGE=${VIVARIUM_IMAGE:-localhost/vivarium-sandbox}
VERSION=${IMAGE_VERSION:-$(sed -n 's/^VERSION[[:space:]]*:=[[:space:]]*//p' Makefile)}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org}
PODMAN=${PODMAN:-podman}
out=image/requirements-extra.txt
$PODMAN run --rm --user 0 --entrypoint sh --read-only=false \
    --ulimit nofile=4096:4096 --ulimit nproc=4096:4096 \
    -e http_proxy -e https_proxy -e DEBIAN_MIRROR="$MIRROR" \
    -v "$PWD/image:/in:ro" "$IMAGE:$VERSION" -c '
set -eu
. /in/apt-sources.sh
apt_sources "$DEBIAN_MIRROR"
apt-get -q update >/dev/null
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3-pip >/dev/null
python3 -m pip install --quiet --dry-run --break-system-packages \
    --only-binary=:all: --report /tmp/report.json -r /in/requirements-extra.in >&2
python3 - <<\PY
import json
r = json.load(open("/tmp/report.json"))
print("# image/requirements-extra.txt: made by image/pip-lock.sh from")
print("# image/requirements-extra.in, resolved against the Debian packages")
print("# of the image (pip", r.get("pip_version", "?"), "). Do not edit; rerun the script.")
for item in sorted(r["install"], key=lambda i: i["metadata"]["name"].lower()):
    md = item["metadata"]
    ai = item["download_info"].get("archive_info", {})
    h = ai.get("hashes", {}).get("sha256")
    if h is None and ai.get("hash", "").startswith("sha256="):
        h = ai["hash"][7:]
    if h is None:
        raise SystemExit("no sha256 for %s" % md["name"])
    print("%s==%s \\\n    --hash=sha256:%s" % (md["name"], md["version"], h))
PY
' >"$out.tmp"
mv "$out.tmp" "$out"
echo "pip-lock: wrote $out ($(grep -c '^[^# ]' "$out") distributions)" >&2
