#!/bin/sh
# tests/deploy/deps.sh: scripts/deps off Debian and on it.
#   - with no dpkg or apt (a PATH without them), it looks for commands and
#     libraries instead, names what is missing with the Debian package it
#     comes in, exits 1 and installs nothing;
#   - a group asks only for its own packages: podman does not want
#     debootstrap (image) or runsc (gvisor);
#   - an unknown group is a usage error.
set -u
cd "$(dirname "$0")/../.."
. tests/deploy/lib.sh
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT

# A PATH of this host's own tools but dpkg, apt and the ones tested for.
mkdir -p "$D/bin"
for c in sh cat id printf tr sed awk grep pkg-config cc; do
	p=$(command -v "$c") && ln -s "$p" "$D/bin/$c"
done
if out=$(PATH=$D/bin sh scripts/deps podman 2>&1); then
	t_fail "off Debian, missing podman passed" "$out"
else
	t_ok "off Debian, a missing command fails"
	t_check "... and is named with its Debian package" sh -c \
	    'echo "$1" | grep -q "not Debian; install the equivalents" && echo "$1" | grep -q " podman" && echo "$1" | grep -q "runc"' - "$out"
fi
out=$(PATH=$D/bin sh scripts/deps build 2>&1)
t_check "off Debian, build passes when cc and the pkg-config modules are here" test -z "$out"
out=$(PATH=$D/bin sh scripts/deps podman 2>&1) || :
t_check "a group wants its own packages only (no debootstrap, runsc in podman)" \
    sh -c '! echo "$1" | grep -Eq "debootstrap|runsc"' - "$out"
out=$(sh scripts/deps nonsense 2>&1); rc=$?
t_check "an unknown group is a usage error (exit $rc)" sh -c \
    'test "$1" = 2 && echo "$2" | grep -q "unknown group .nonsense."' - "$rc" "$out"
t_done deps
