#!/bin/sh
# image/apt-locked.sh LOCKFILE: runs in a build stage.  Installs every
# package=version of LOCKFILE (made by `make lock`), checks that each one is
# installed at exactly that version, and leaves no package lists behind.
# A version the mirror no longer has comes at its current version, with a
# warning, unless LOCK_STRICT=1 (then the build fails).
set -eu
lock=$1
here=$(dirname "$0")
. "$here/apt-sources.sh"
# A lock made from a snapshot says so; its build reads the same snapshot.
# It names its suite too (trixie when it does not).
snapshot=$(sed -n 's/^# snapshot: //p' "$lock")
SUITE=$(sed -n 's/^# suite: //p' "$lock")
SUITE=${SUITE:-trixie}
if [ -n "$snapshot" ]; then
	apt_sources "${DEBIAN_SNAPSHOT_MIRROR:-http://snapshot.debian.org}" "$snapshot"
else
	apt_sources "${DEBIAN_MIRROR:-http://deb.debian.org}"
fi
export DEBIAN_FRONTEND=noninteractive
# Like Debian's own slim images: no documentation, manual pages or message
# catalogues from the packages installed here (about 200 MB).  Nothing reads
# them at run time; the copyright files stay.
cat >/etc/dpkg/dpkg.cfg.d/90vivarium-slim <<EOS
path-exclude=/usr/share/doc/*
path-include=/usr/share/doc/*/copyright
path-exclude=/usr/share/man/*
path-exclude=/usr/share/info/*
path-exclude=/usr/share/locale/*
path-include=/usr/share/locale/locale.alias
path-exclude=/usr/share/lintian/*
EOS
grep -v '^#' "$lock" | grep . >/tmp/want
cp /tmp/want /tmp/exact
apt-get -q -o Acquire::Retries=3 update >/dev/null
apt_install() {
	xargs apt-get install -y -q --no-install-recommends --allow-downgrades \
	    -o Acquire::Retries=3 -o Dpkg::Options::=--force-confold <"$1" \
	    >/tmp/apt.log 2>&1
}
refuse() {
	tail -n 30 /tmp/apt.log >&2
	echo "apt-locked: cannot install $lock exactly; if a version above is" >&2
	echo "apt-locked: 'not found', the mirror has moved on: run \`make lock\`," >&2
	echo "apt-locked: or lock against a snapshot (DEBIAN_SNAPSHOT, docs/image.md)." >&2
	exit 1
}
# Debian's mirrors keep only the newest version of each package, so a point
# release or a security update makes some lines of an older lock
# uninstallable.  Unless LOCK_STRICT=1, those packages come at the version
# the mirror has now (newer, from the same suites), loudly, and every other
# line is still installed and checked exactly.
if ! apt_install /tmp/want; then
	sed -n "s/^E: Version '\(.*\)' for '\(.*\)' was not found\$/\2=\1/p" \
	    /tmp/apt.log | sort -u >/tmp/gone
	[ -s /tmp/gone ] && [ "${LOCK_STRICT:-0}" != 1 ] || refuse
	echo "apt-locked: warning: the mirror no longer has these versions of" \
	    "$lock; installing its current ones (\`make lock\` records them," \
	    "LOCK_STRICT=1 refuses):" >&2
	sed 's/^/apt-locked:   /' /tmp/gone >&2
	grep -vxF -f /tmp/gone /tmp/want >/tmp/exact || true
	{ cat /tmp/exact; sed 's/=.*//' /tmp/gone; } >/tmp/want
	apt_install /tmp/want || refuse
fi
arch=$(dpkg --print-architecture)
dpkg-query -W -f '${binary:Package}=${Version}\n' | sed "s/:$arch=/=/" | sort >/tmp/have
bad=$(sort /tmp/exact | comm -23 - /tmp/have)
if [ -n "$bad" ]; then
	echo "apt-locked: installed versions differ from $lock for:" >&2
	echo "$bad" >&2
	exit 1
fi
extra=$(sed 's/=.*//' /tmp/want | sort | comm -13 - "$(sed 's/=.*//' /tmp/have | sort >/tmp/haven; echo /tmp/haven)")
[ -z "$extra" ] || echo "apt-locked: note: installed but not in $lock (from the base):" $extra >&2
apt-get clean
echo "apt-locked: $lock: $(wc -l </tmp/want) packages, $(wc -l </tmp/exact)" \
    "of them at exactly the locked version" >&2
rm -rf /var/lib/apt/lists/* /tmp/want /tmp/exact /tmp/gone /tmp/have /tmp/haven \
    /tmp/apt.log
