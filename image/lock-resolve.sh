#!/bin/sh
# image/lock-resolve.sh STAGE...: runs inside a container of the base image
# (see `image/image.sh lock`).  For each stage, asks apt what installing that
# stage's packages from image/packages.txt would leave on the system, and
# writes /lock/<stage>.lock: every package of the result at its exact version.
# SUITE (trixie or forky) picks the suite, and the lines of packages.txt
# whose stage is `STAGE` or `STAGE:SUITE`.
set -eu
SUITE=${SUITE:-trixie}
snapshot=${DEBIAN_SNAPSHOT:-}
if [ -n "$snapshot" ]; then
	mirror=${DEBIAN_SNAPSHOT_MIRROR:-http://snapshot.debian.org}
else
	mirror=${DEBIAN_MIRROR:-http://deb.debian.org}
fi
. /lock/apt-sources.sh
apt_sources "$mirror" "$snapshot"
export DEBIAN_FRONTEND=noninteractive
apt-get -q -o Acquire::Retries=3 update >/dev/null
arch=$(dpkg --print-architecture)
for stage in "$@"; do
	pkgs=
	# A package this architecture does not have (an amd64-only one on
	# arm64) is skipped with a warning, not a failed lock.
	for p in $(awk -v s="$stage" -v t="$stage:$SUITE" '$1 == s || $1 == t { print $2 }' /lock/packages.txt); do
		if apt-cache show --no-all-versions "$p" >/dev/null 2>&1; then
			pkgs="$pkgs $p"
		else
			echo "lock: $stage: $p does not exist on $arch here: skipped" >&2
		fi
	done
	# What is there now, then what apt would install or upgrade; with
	# UPGRADE=1 (image/image.sh update), the base's own packages at
	# their newest too, security updates included.
	dpkg-query -W -f '${binary:Package} ${Version}\n' >/tmp/have
	: >/tmp/sim
	[ "${UPGRADE:-0}" != 1 ] || apt-get dist-upgrade -s -q >/tmp/sim
	apt-get install -s -q --no-install-recommends $pkgs >>/tmp/sim
	# "Inst NAME [OLD] (NEW SUITE [ARCH])": NEW is the first word in ().
	sed -n 's/^Inst \([^ ]*\) \(\[[^]]*\] \)\{0,1\}(\([^ ]*\) .*/\1 \3/p' /tmp/sim >/tmp/inst
	if grep -q '^Remv ' /tmp/sim; then
		echo "lock: installing $stage would remove packages:" >&2
		grep '^Remv ' /tmp/sim >&2
		exit 1
	fi
	out=/lock/$stage.lock
	{
		echo "# $stage packages for image/packages.txt, resolved by \`make lock\`."
		echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) from $mirror; Debian $SUITE, $arch."
		echo "# One package=version a line; the build installs exactly these."
		echo "# suite: $SUITE"
		[ -z "$snapshot" ] || echo "# snapshot: $snapshot"
		# Later lines (apt's) win over earlier ones (what the base had).
		cat /tmp/have /tmp/inst | sed "s/:$arch / /" |
		    awk '{ v[$1] = $2 } END { for (p in v) print p "=" v[p] }' |
		    LC_ALL=C sort
	} >"$out.tmp"
	mv "$out.tmp" "$out"
	echo "lock: $stage: $(grep -vc '^#' "$out") packages ($(wc -l </tmp/inst) from apt)" >&2
done
