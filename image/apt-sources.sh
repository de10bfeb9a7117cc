# image/apt-sources.sh: sourced by the lock and build steps so both see the
# same archive.  apt_sources MIRROR [SNAPSHOT] writes the sources of $SUITE
# (trixie, the default, or forky: docs/image.md, "Flavours"): main, updates
# and security,
#   - from MIRROR (scheme and host serving /debian and /debian-security,
#     e.g. http://deb.debian.org), or
#   - with SNAPSHOT (a snapshot.debian.org timestamp such as 20251115T000000Z),
#     from that frozen day of the archive, where no version ever disappears.
apt_sources() {
	suite=${SUITE:-trixie}
	rm -f /etc/apt/sources.list
	valid=
	if [ -n "${2:-}" ]; then
		main="$1/archive/debian/$2"
		sec="$1/archive/debian-security/$2"
		# A snapshot's Release files are past their Valid-Until date.
		echo 'Acquire::Check-Valid-Until "false";' >/etc/apt/apt.conf.d/80vivarium-snapshot
	else
		main="$1/debian"
		sec="$1/debian-security"
		rm -f /etc/apt/apt.conf.d/80vivarium-snapshot
	fi
	case "$suite" in
	trixie) ;;
	# Testing's Release files expire a week after they are signed, and a
	# mirror or cache that lags behind (the one this was written on serves
	# a forky a month old) then makes apt refuse the whole suite.  The
	# signature is still checked, and the build installs the lock's exact
	# versions, so an old Release file cannot slip in other packages.
	forky) valid='
Check-Valid-Until: no' ;;
	*) echo "apt-sources: SUITE must be trixie or forky, not $suite" >&2; return 1 ;;
	esac
	cat >/etc/apt/sources.list.d/debian.sources <<EOS
Types: deb
URIs: $main
Suites: $suite $suite-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg$valid

Types: deb
URIs: $sec
Suites: $suite-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg$valid
EOS
}
