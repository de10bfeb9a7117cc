# image/apt-sources.sh: sourced by the lock and build steps so both see the
# same archive.  apt_sources MIRROR [SNAPSHOT] writes the trixie sources
# (main, updates, security):
#   - from MIRROR (scheme and host serving /debian and /debian-security,
#     e.g. http://deb.debian.org), or
#   - with SNAPSHOT (a snapshot.debian.org timestamp such as 20251115T000000Z),
#     from that frozen day of the archive, where no version ever disappears.
apt_sources() {
	rm -f /etc/apt/sources.list
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
	cat >/etc/apt/sources.list.d/debian.sources <<EOS
Types: deb
URIs: $main
Suites: trixie trixie-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $sec
Suites: trixie-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOS
}
