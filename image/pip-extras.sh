#!/bin/sh
# image/pip-extras.sh REQUIREMENTS DEST: runs in the builder stage.  With
# PIP_EXTRAS=1, fetches the wheels of REQUIREMENTS (every line pinned with
# == and --hash=sha256:, see docs/image.md), lets pip verify each hash, and
# installs them into DEST without dependencies: the requirements file lists
# only what Debian lacks, resolved against the image's Debian packages.
# Otherwise DEST holds only a note saying there are no extras.
# When the directory PIP_WHEELS holds wheels, pip takes them from there and
# never asks an index (--no-index --find-links): an operator's wheelhouse,
# or the test's own wheel; hashes are required all the same.
set -eu
req=$1 dest=$2
mkdir -p "$dest"
if [ "${PIP_EXTRAS:-0}" != 1 ]; then
	echo "no pip extras (built with PIP_EXTRAS=0)" >"$dest/VIVARIUM-PIP-EXTRAS.txt"
	exit 0
fi
# Joined continuation lines, comments and blanks gone: one requirement a line.
sed -e ':a' -e '/\\$/N; s/\\\n//; ta' "$req" | sed 's/#.*//' | grep -v '^[[:space:]]*$' >/tmp/req || true
if [ ! -s /tmp/req ]; then
	echo "pip-extras: PIP_EXTRAS=1 but $req pins nothing; generate it with" >&2
	echo "pip-extras: image/pip-lock.sh on a machine that reaches PyPI (docs/image.md)" >&2
	exit 1
fi
if grep -v -e '==.*--hash=sha256:' /tmp/req >&2; then
	echo "pip-extras: the lines above lack an exact == pin or a sha256 hash" >&2
	exit 1
fi
set --
if [ -n "${PIP_WHEELS:-}" ] && ls "$PIP_WHEELS"/*.whl >/dev/null 2>&1; then
	set -- --no-index --find-links "$PIP_WHEELS"
	echo "pip-extras: from the wheels in $PIP_WHEELS only (no index)" >&2
fi
python3 -m pip download --no-cache-dir --require-hashes --no-deps \
    --only-binary=:all: "$@" -d /tmp/wheels -r "$req"
python3 -m pip install --no-cache-dir --no-index --no-deps \
    --break-system-packages --target "$dest" /tmp/wheels/*.whl
rm -rf /tmp/wheels "$dest/bin"
{ echo "pip extras (PIP_EXTRAS=1), from $(basename "$req"):"; sed 's/ .*//' /tmp/req; } \
    >"$dest/VIVARIUM-PIP-EXTRAS.txt"
