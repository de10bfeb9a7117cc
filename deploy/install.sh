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
# Every path is prefixed with $DESTDIR.
#
# uninstall stops and disables the installed units (when this host's
# systemd runs them), removes what install put there, and says exactly
# what it kept: $CONFDIR, $STATEDIR (every user's files) and Podman's
# objects of vivarium, with the commands that remove them.  PURGE=1 removes
# those too, and only with CONFIRM=yes (without it, it lists what it would
# delete and removes nothing): every container, network and volume
# labelled io.vivarium.managed=true (the sandboxes, their workspaces, the
# egress proxy and its network) or io.vivarium.role (a quadlet's
# supervisor), the images localhost/vivarium-sandbox:* and
# localhost/vivarium-base:* and the untagged layers their builds left
# (labelled io.vivarium.inputs), then $CONFDIR and $STATEDIR.  Podman is
# asked through $PODMAN_SOCKET (the supervisor's default socket); when it
# does not answer, PURGE=1 removes nothing and says so.  With DESTDIR,
# Podman and systemd are left alone.  Tests narrow what counts as
# vivarium's with VIVARIUM_UNINSTALL_FILTERS (podman filters, each asked on
# its own), VIVARIUM_UNINSTALL_IMAGES (image names, every tag) and
# VIVARIUM_UNINSTALL_IMAGE_LABELS (labels of build layers).
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

# ---------------------------------------------------------------- uninstall

# Podman, through the socket the supervisor uses (podman --url: the same
# service, whoever runs this).  Tests point it at their own.
pm() { podman --url "unix://$SOCKET" "$@"; }

# What Podman holds of vivarium, into $ctrs, $nets, $vols, $imgs, $layers
# (names, space-separated; $layers: ids of untagged build layers); 1 when
# Podman cannot be asked (why in $pm_why).
podman_objects() {
	ctrs="" nets="" vols="" imgs="" layers="" pm_why=""
	if [ -n "$D" ]; then
		pm_why="not looked at with DESTDIR (a staging tree has none)"
		return 1
	fi
	if ! command -v podman >/dev/null 2>&1; then
		pm_why="not looked at: no podman command here"
		return 1
	fi
	if ! pm info >/dev/null 2>&1; then
		pm_why="not looked at: Podman does not answer at $SOCKET (start it: systemctl start podman.socket${NOTROOT:+ --user})"
		return 1
	fi
	for f in $FILTERS; do
		ctrs="$ctrs $(pm ps -a --filter "$f" --format '{{.Names}}')"
		nets="$nets $(pm network ls --filter "$f" --format '{{.Name}}')"
		vols="$vols $(pm volume ls --filter "$f" --format '{{.Name}}')"
	done
	for r in $IMAGES; do
		imgs="$imgs $(pm images --filter "reference=$r" --format '{{.Repository}}:{{.Tag}}' |
		    grep -v '<none>')"
	done
	for l in $IMAGE_LABELS; do
		layers="$layers $(pm images -a --filter "label=$l" \
		    --format '{{.ID}} {{.Repository}}' | awk '$2 == "<none>" { print $1 }')"
	done
	# One line each, sorted, without duplicates (two filters may match
	# one object).
	ctrs=$(uniqw $ctrs) nets=$(uniqw $nets) vols=$(uniqw $vols)
	imgs=$(uniqw $imgs) layers=$(uniqw $layers)
	return 0
}

uniqw() { printf '%s\n' "$@" | sed '/^$/d' | sort -u | tr '\n' ' ' | sed 's/ $//'; }

# "containers (3): a b c", or nothing.
count() { [ -z "$2" ] || echo "$1 ($(echo "$2" | wc -w)): $2"; }

# What the state directory holds, in words.
state_words() {
	[ -d "$D$STATEDIR" ] || return 0
	w=$(ls -A "$D$STATEDIR" | tr '\n' ' ' | sed 's/ $//')
	case " $w " in
	*" users "*|*" workspaces "*)
		w="$w: users/ and workspaces/ hold every user's files" ;;
	esac
	echo "$STATEDIR (${w:-empty})"
}

podman_words() {
	count containers "$ctrs"
	count networks "$nets"
	count volumes "$vols"
	count images "$imgs"
	[ -z "$layers" ] || echo "untagged image layers left by image builds ($(echo "$layers" | wc -w))"
}

# Stop and disable the installed units, when the systemd that runs them is
# this one's and they are ours (the unit systemd loaded is the one in
# $UNITDIR): the supervisor would make the egress proxy again.
stop_units() {
	[ -z "$D" ] && [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1 || return 0
	for u in vivarium-supervisor.service vivarium-egress-hosts.service; do
		[ "$(systemctl $NOTROOT show -P FragmentPath "$u" 2>/dev/null)" = "$UNITDIR/$u" ] || continue
		systemctl $NOTROOT disable --now "$u" >/dev/null 2>&1 &&
		    say "stopped and disabled $u"
	done
}

do_uninstall() {
	NOTROOT=
	[ "$(id -u)" = 0 ] || NOTROOT=--user
	# Test hooks (tests/deploy/install.sh): what is vivarium's in Podman.
	# Each filter is asked on its own (podman ANDs label filters): the
	# supervisor's sandboxes, their networks and volumes, and the egress
	# proxy carry io.vivarium.managed=true, and a quadlet's supervisor
	# io.vivarium.role.
	FILTERS=${VIVARIUM_UNINSTALL_FILTERS:-label=io.vivarium.managed=true label=io.vivarium.role}
	IMAGES=${VIVARIUM_UNINSTALL_IMAGES:-localhost/vivarium-sandbox localhost/vivarium-base}
	IMAGE_LABELS=${VIVARIUM_UNINSTALL_IMAGE_LABELS:-io.vivarium.inputs}
	purge=${PURGE:-0}
	pm_ok=1
	podman_objects || pm_ok=0

	if [ "$purge" = 1 ] && [ "${CONFIRM:-}" != yes ]; then
		{
		echo "uninstall: PURGE=1 deletes, besides the programs in $BINDIR, $LIBDIR/vivarium, $DATADIR/vivarium and the units in $UNITDIR:"
		[ ! -d "$D$CONFDIR" ] || echo "  $CONFDIR (the config and the token LibreChat sends)"
		w=$(state_words); [ -z "$w" ] || echo "  $w"
		if [ "$pm_ok" = 1 ]; then
			podman_words | sed 's/^/  Podman: /'
		else
			echo "  Podman's objects of vivarium: $pm_why"
		fi
		echo "uninstall: nothing was removed; to go ahead: make uninstall PURGE=1 CONFIRM=yes"
		} >&2
		exit 1
	fi
	if [ "$purge" = 1 ] && [ "$pm_ok" = 0 ] && [ -z "$D" ]; then
		echo "uninstall: Podman's objects of vivarium were $pm_why" >&2
		echo "uninstall: nothing was removed" >&2
		exit 1
	fi

	stop_units
	for p in $PROGS vivarium-smoke vivarium-egress-hosts; do
		rm -f "$D$BINDIR/$p"
	done
	rm -rf "$D$LIBDIR/vivarium" "$D$DATADIR/vivarium"
	rm -f "$D$UNITDIR/vivarium-supervisor.service" \
	    "$D$UNITDIR/vivarium-egress-hosts.service"
	[ -n "$D" ] || [ ! -d /run/systemd/system ] ||
	    systemctl $NOTROOT daemon-reload >/dev/null 2>&1 || :
	say "removed the programs from $BINDIR, $LIBDIR/vivarium, $DATADIR/vivarium and the units from $UNITDIR"

	if [ "$purge" = 1 ]; then
		purge_podman
		rm -rf "$D$CONFDIR" "$D$STATEDIR"
		say "removed $CONFDIR and $STATEDIR (every user's files)"
		return 0
	fi
	say "kept (PURGE=1 CONFIRM=yes removes all of it):"
	[ ! -d "$D$CONFDIR" ] || say "  $CONFDIR: $(ls -A "$D$CONFDIR" | tr '\n' ' ')(the config and the token LibreChat sends)"
	w=$(state_words); [ -z "$w" ] || say "  $w"
	if [ "$pm_ok" = 0 ]; then
		say "  Podman's objects of vivarium: $pm_why"
	elif [ -n "$ctrs$nets$vols$imgs$layers" ]; then
		podman_words | sed 's/^/install:   Podman: /'
		say "to remove those by hand:"
		[ -z "$ctrs" ] || say "  podman rm -f $ctrs"
		[ -z "$vols" ] || say "  podman volume rm $vols"
		[ -z "$nets" ] || say "  podman network rm $nets"
		[ -z "$imgs" ] || say "  podman rmi $imgs"
		[ -z "$layers" ] || say "  podman rmi $layers (again until none is left: a layer goes after those built on it)"
	fi
	[ -z "$(ls -A "$D$CONFDIR" "$D$STATEDIR" 2>/dev/null)" ] ||
	    say "  rm -rf $CONFDIR $STATEDIR"
}

# Every Podman object of vivarium: containers (sandboxes and the proxy),
# then their volumes and networks, then the images and what their builds
# left.  What cannot be removed is named, and the uninstall fails.
purge_podman() {
	[ -z "$D" ] || { say "Podman: $pm_why"; return 0; }
	was=$(podman_words)
	[ -z "$ctrs" ] || pm rm -f -t 5 $ctrs >/dev/null 2>&1 || :
	[ -z "$vols" ] || pm volume rm -f $vols >/dev/null 2>&1 || :
	[ -z "$nets" ] || pm network rm -f $nets >/dev/null 2>&1 || :
	[ -z "$imgs" ] || pm rmi $imgs >/dev/null 2>&1 || :
	# Build layers are parents of one another: children go first, so
	# again while a round removes some.
	n=-1
	while [ -n "$layers" ] && [ "$n" != "$(echo "$layers" | wc -w)" ]; do
		n=$(echo "$layers" | wc -w)
		pm rmi $layers >/dev/null 2>&1 || :
		still=""
		for l in $layers; do
			pm image exists "$l" 2>/dev/null && still="$still $l"
		done
		layers=$(uniqw $still)
	done
	podman_objects || :
	left=$(podman_words)
	if [ -n "$left" ]; then
		echo "uninstall: left in Podman, which refused to remove them:" >&2
		echo "$left" | sed 's/^/  /' >&2
		echo "uninstall: kept $CONFDIR and $STATEDIR; once those are gone (podman ps -a names what uses an image), run make uninstall PURGE=1 CONFIRM=yes again" >&2
		exit 1
	fi
	[ -z "$was" ] || echo "$was" | sed 's/^/install: removed from Podman: /'
}

case "${1:-}" in
install) do_install ;;
uninstall) do_uninstall ;;
*) echo "usage: deploy/install.sh install|uninstall" >&2; exit 2 ;;
esac
