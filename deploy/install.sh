#!/bin/sh
# deploy/install.sh install|uninstall: `make install` / `make uninstall`.
#
# What goes where (root; a user's own install in parentheses):
#   $BINDIR          /usr/local/bin (~/.local/bin): vivarium-supervisor,
#                    vivariumctl, vivarium-agent, vivarium-egress,
#                    vivarium-egress-hosts (egress-proxy/hosts.sh: the host's
#                    addresses, which the proxy refuses and needs) and
#                    vivarium-smoke (supervisor/smoke.sh)
#   $LIBDIR/vivarium/python   the runner and vivarium_charts, which the
#                    installed vivarium-agent finds there on its own
#   $DATADIR/vivarium/templates   what `vivariumctl render` reads
#   $DATADIR/vivarium/examples    supervisor, egress and LibreChat examples
#   $DATADIR/vivarium/quadlet     the quadlets (deploy/quadlet/)
#   $UNITDIR         /usr/local/lib/systemd/system (~/.config/systemd/user):
#                    vivarium-supervisor.service, naming the paths above,
#                    and vivarium-egress-hosts.service, which keeps the egress
#                    quadlet's list of the host's addresses current
#   $CONFDIR         /etc/vivarium (~/.config/vivarium): supervisor.yaml and
#                    egress.yaml from the examples, with this install's
#                    paths, and the token (32 random bytes, mode 0600; the
#                    one make run made, when it did, moved from $STATEDIR);
#                    all three only when absent, so a reinstall keeps them.
#                    MAKE_TOKEN=0 makes no token (for packages).
#   $STATEDIR        /var/lib/vivarium (~/.local/state/vivarium)
# Every path is prefixed with $DESTDIR.  uninstall removes what install put
# there except $CONFDIR and the state (PURGE=1 removes the config too).
set -eu
cd "$(dirname "$0")/.."

if [ "$(id -u)" = 0 ]; then
	PREFIX=${PREFIX:-/usr/local}
	CONFDIR=${CONFDIR:-/etc/vivarium}
	STATEDIR=${STATEDIR:-/var/lib/vivarium}
	UNITDIR=${UNITDIR:-$PREFIX/lib/systemd/system}
	SOCKET=${PODMAN_SOCKET:-/run/podman/podman.sock}
else
	PREFIX=${PREFIX:-$HOME/.local}
	CONFDIR=${CONFDIR:-${XDG_CONFIG_HOME:-$HOME/.config}/vivarium}
	STATEDIR=${STATEDIR:-${XDG_STATE_HOME:-$HOME/.local/state}/vivarium}
	UNITDIR=${UNITDIR:-${XDG_CONFIG_HOME:-$HOME/.config}/systemd/user}
	SOCKET=${PODMAN_SOCKET:-/run/user/$(id -u)/podman/podman.sock}
fi
# A user's systemd has no multi-user.target.
WANTED=s/^WantedBy=multi-user.target/WantedBy=multi-user.target/
[ "$(id -u)" = 0 ] || WANTED=s/^WantedBy=multi-user.target/WantedBy=default.target/
BINDIR=${BINDIR:-$PREFIX/bin}
LIBDIR=${LIBDIR:-$PREFIX/lib}
DATADIR=${DATADIR:-$PREFIX/share}
DESTDIR=${DESTDIR:-}
BIN=${BIN:-bin}
VERSION=${VERSION:-$(sed -n 's/^VERSION[[:space:]]*:=[[:space:]]*//p' Makefile)}
PROGS="vivarium-supervisor vivariumctl vivarium-agent vivarium-egress"
D=$DESTDIR

say() { echo "install: $*"; }

# Our paths in a file written for the default ones.
paths() {
	sed -e "s|/usr/local/bin/|$BINDIR/|g" \
	    -e "s|/etc/vivarium/|$CONFDIR/|g" \
	    -e "s|/var/lib/vivarium|$STATEDIR|g" \
	    -e "/^ *socket:/s|/run/podman/podman.sock|$SOCKET|" \
	    -e "$WANTED" \
	    -e "s|localhost/vivarium-sandbox:[0-9][^ ]*|localhost/vivarium-sandbox:$VERSION|g" "$@"
}

# SRC DST MODE: a config file, only when absent.
config() {
	if [ -e "$D$2" ]; then
		say "kept $2 (yours; the new example is in $DATADIR/vivarium/examples)"
	else
		paths "$1" >"$D$2.tmp"
		chmod "$3" "$D$2.tmp"
		mv "$D$2.tmp" "$D$2"
		say "wrote $2"
	fi
}

do_install() {
	for p in $PROGS; do
		[ -x "$BIN/$p" ] || { echo "install: $BIN/$p is missing: run make first" >&2; exit 1; }
	done
	install -d "$D$BINDIR" "$D$LIBDIR/vivarium/python" \
	    "$D$DATADIR/vivarium/templates" "$D$DATADIR/vivarium/examples" \
	    "$D$DATADIR/vivarium/quadlet" "$D$UNITDIR"
	for p in $PROGS; do
		install -m 0755 "$BIN/$p" "$D$BINDIR/$p"
	done
	install -m 0755 supervisor/smoke.sh "$D$BINDIR/vivarium-smoke"
	install -m 0755 egress-proxy/hosts.sh "$D$BINDIR/vivarium-egress-hosts"
	# The runner's package as the image has it, without caches.
	rm -rf "$D$LIBDIR/vivarium/python/vivarium" "$D$LIBDIR/vivarium/python/vivarium_charts"
	for pkg in vivarium vivarium_charts; do
		install -d "$D$LIBDIR/vivarium/python/$pkg"
		install -m 0644 python/$pkg/*.py "$D$LIBDIR/vivarium/python/$pkg/"
	done
	install -m 0644 templates/* "$D$DATADIR/vivarium/templates/"
	install -m 0644 deploy/*.example "$D$DATADIR/vivarium/examples/"
	if [ -d deploy/quadlet ]; then
		for f in deploy/quadlet/*; do
			paths "$f" >"$D$DATADIR/vivarium/quadlet/${f##*/}"
		done
	fi
	for u in vivarium-supervisor.service vivarium-egress-hosts.service; do
		paths "deploy/$u" >"$D$UNITDIR/$u"
		chmod 0644 "$D$UNITDIR/$u"
	done
	say "installed the programs in $BINDIR, the unit in $UNITDIR"

	install -d -m 0755 "$D$CONFDIR"
	install -d -m 0700 "$D$STATEDIR"
	config deploy/supervisor.yaml.example "$CONFDIR/supervisor.yaml" 0644
	config deploy/egress.yaml.example "$CONFDIR/egress.yaml" 0644
	# The token an older make run kept in the state directory: moved, so
	# the copy LibreChat holds stays good (make run now uses this one).
	if [ ! -s "$D$CONFDIR/token" ] && [ -s "$D$STATEDIR/token" ]; then
		mv "$D$STATEDIR/token" "$D$CONFDIR/token"
		chmod 0600 "$D$CONFDIR/token"
		say "moved the token make run made from $STATEDIR/token to $CONFDIR/token"
	fi
	if [ "${MAKE_TOKEN:-1}" = 1 ] && [ ! -s "$D$CONFDIR/token" ]; then
		(umask 077; od -An -N32 -tx1 /dev/urandom | tr -d ' \n' >"$D$CONFDIR/token.tmp")
		mv "$D$CONFDIR/token.tmp" "$D$CONFDIR/token"
		say "made a new token in $CONFDIR/token (LibreChat's VIVARIUM_TOKEN)"
	fi
	say "next: build the image (make image), then"
	if [ "$(id -u)" = 0 ]; then
		say "  systemctl daemon-reload && systemctl enable --now podman.socket vivarium-supervisor"
	else
		say "  systemctl --user daemon-reload && systemctl --user enable --now podman.socket vivarium-supervisor"
	fi
	say "and check it with vivarium-smoke"
}

do_uninstall() {
	for p in $PROGS vivarium-smoke vivarium-egress-hosts; do
		rm -f "$D$BINDIR/$p"
	done
	rm -rf "$D$LIBDIR/vivarium" "$D$DATADIR/vivarium"
	rm -f "$D$UNITDIR/vivarium-supervisor.service" \
	    "$D$UNITDIR/vivarium-egress-hosts.service"
	if [ "${PURGE:-0}" = 1 ]; then
		rm -rf "$D$CONFDIR"
		say "removed $CONFDIR"
	else
		say "kept $CONFDIR (config and token) and $STATEDIR; PURGE=1 removes the config"
	fi
	say "removed vivarium from $PREFIX"
}

case "${1:-}" in
install) do_install ;;
uninstall) do_uninstall ;;
*) echo "usage: deploy/install.sh install|uninstall" >&2; exit 2 ;;
esac
