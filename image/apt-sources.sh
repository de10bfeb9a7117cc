# image/apt-sources.sh: sourced by the lock and build steps so both see the
# same archive.  apt_sources MIRROR writes the trixie sources (main, updates,
# security) for MIRROR (scheme and host, e.g. http://deb.debian.org).
apt_sources() {
	rm -f /etc/apt/sources.list
	cat >/etc/apt/sources.list.d/debian.sources <<EOS
Types: deb
URIs: $1/debian
Suites: trixie trixie-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $1/debian-security
Suites: trixie-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOS
}
