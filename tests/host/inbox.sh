#!/bin/sh
# tests/host/inbox.sh PHASE: the checks of make test-host, run inside the
# box (a whole Debian host: tests/host/run.sh) as root, from the source tree
# copied to /root/vivarium.  One line per check (tests/deploy/lib.sh); the
# exit status says whether one failed.  What a phase leaves for the next
# one is in /root/hosttest.
#
#   install   what the README says for the durable install: make install
#             (built here, against this Debian's libraries), then the test's
#             web server (a container on a normal network, published on
#             port 8000), its subnet and port allowed in egress.yaml,
#             `systemctl enable --now podman.socket vivarium-supervisor`;
#             the egress proxy runs; alice makes a file, a variable and a
#             download link of it
#   reboot    after the box's reboot: the supervisor answers, the egress
#             proxy runs again, a new user's run_python works, the sandbox
#             fetches from the web server through the egress proxy while a
#             direct connection fails, the box's own address (the web
#             network's gateway, which came up after the supervisor) is
#             listed and refused, a new download link and alice's from
#             before the reboot download, alice's files and namespace are
#             there, vivariumctl doctor reports nothing failed (fetching
#             from the web server)
#   rebuild   the image rebuilt with a change (FROM it + a LABEL, tagged as
#             the configured image) while carol's call runs, and
#             vivariumctl upgrade --all: carol's call ends with its output
#             and carol keeps the old image, alice comes back on the new
#             one with her files and namespace; carol, idle, upgraded after;
#             the egress proxy follows the image and runs
#   uninstall make uninstall PURGE=1 refuses without CONFIRM=yes and removes
#             nothing; with it, nothing of vivarium is left: files, units,
#             /etc/vivarium, /var/lib/vivarium, processes, Podman's
#             containers, networks, volumes and images
set -u
cd /root/vivarium
. tests/deploy/lib.sh
export PODMAN_IGNORE_CGROUPSV1_WARNING=1
T=/root/hosttest
mkdir -p "$T"
IMAGE=localhost/vivarium-sandbox:$(sed -n 's/^VERSION[[:space:]]*:=[[:space:]]*//p' Makefile)
URL=http://127.0.0.1:8787

# mcp USER TOOL ARGS_JSON, into $OUT; run_python USER CODE.
OUT=$T/out
mcp() { python3 tests/host/mcp.py "$@" >"$OUT" 2>&1; }
run_python() {
	mcp "$1" run_python "$(python3 -c 'import json, sys
print(json.dumps({"code": sys.argv[1]}))' "$2")"
}
# has NAME PATTERN: the last call's output matches.
has() { t_grep "$1" "$2" "$T/out"; }
health() {
	i=0
	until curl -fsS --max-time 2 "$URL/health" >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt "$1" ] || return 1
		sleep 1
	done
}
# The link in the last share_file's output.
link() { sed -n 's/^structured: //p' "$T/out" | python3 -c 'import json, sys
print(json.load(sys.stdin)["url"])'; }

# egress_runs SECONDS: until the egress proxy runs; $waited says how long.
egress_runs() {
	waited=0
	until [ "$(podman inspect vivarium-egress --format '{{.State.Status}}' 2>&1)" = running ]; do
		[ $waited -lt "$1" ] || return 1
		waited=$((waited + 1)); sleep 1
	done
}
egress_why() {
	podman ps -a --format '{{.Names}} {{.Status}}'
	journalctl -b -u vivarium-supervisor --no-pager | tail -n 30
}

phase_install() {
	t_check "scripts/deps build finds every package here (no network)" scripts/deps build
	if make -j2 install >"$T/make-install.log" 2>&1; then
		t_ok "make install (built on $(. /etc/os-release; echo "$PRETTY_NAME"))"
	else
		t_fail "make install" "$(tail -n 30 "$T/make-install.log")"
		return
	fi
	t_check "the image is in this host's Podman" podman image exists "$IMAGE"

	# The test's web server, which sandboxes reach through the proxy.
	mkdir -p "$T/www"
	echo "hello from the web" >"$T/www/hello.txt"
	chmod 0755 "$T/www"; chmod 0644 "$T/www/hello.txt"
	podman network create web >/dev/null
	podman run -d --name web --network web -p 8000:8000 -v "$T/www:/srv:ro" \
	    --entrypoint python3 "$IMAGE" -m http.server 8000 -d /srv >/dev/null
	subnet=$(podman network inspect web --format '{{range .Subnets}}{{.Subnet}}{{end}}')
	gw=$(podman network inspect web --format '{{range .Subnets}}{{.Gateway}}{{end}}')
	echo "$subnet" >"$T/subnet"
	echo "$gw" >"$T/gateway"
	sed -i -e 's|^allow_ports: \[80, 443\]$|allow_ports: [80, 443, 8000]|' \
	    -e "s|^allow_cidrs: \[\]\$|allow_cidrs: [$subnet]|" /etc/vivarium/egress.yaml
	t_grep "egress.yaml allows the web server's subnet" "^allow_cidrs: \[$subnet\]" /etc/vivarium/egress.yaml
	t_grep "... and its port" '^allow_ports: \[80, 443, 8000\]$' /etc/vivarium/egress.yaml

	systemctl daemon-reload
	t_check "systemctl enable --now podman.socket vivarium-supervisor" \
	    systemctl enable --now podman.socket vivarium-supervisor
	if health 60; then
		t_ok "the supervisor answers /health"
	else
		t_fail "the supervisor answers /health" "$(journalctl -u vivarium-supervisor --no-pager | tail -n 30)"
		return
	fi
	if egress_runs 60; then
		t_ok "the supervisor runs the egress proxy"
	else
		t_fail "the supervisor runs the egress proxy" "$(egress_why)"
	fi
	run_python alice "open('/workspace/keep.txt', 'w').write('kept across a reboot\n')
kept = 6 * 7
print('alice', kept)"
	has "alice's first run_python" "alice 42"
	mcp alice share_file '{"path": "keep.txt"}'
	has "alice's share_file" "^structured: "
	link >"$T/link-before" 2>&1
}

phase_reboot() {
	if health 90; then
		t_ok "after the reboot, the supervisor answers /health"
	else
		t_fail "after the reboot, the supervisor answers /health" \
		    "$(systemctl status vivarium-supervisor --no-pager 2>&1 | tail -n 30)"
		return
	fi
	t_check "... as the enabled unit" systemctl is-active vivarium-supervisor
	if egress_runs 60; then
		t_ok "the egress proxy runs again (after ${waited}s)"
	else
		t_fail "the egress proxy runs again" "$(egress_why)"
	fi
	podman start web >/dev/null
	web=$(podman inspect web --format '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}')
	gw=$(cat "$T/gateway")

	run_python bob "print('bob', 6 * 7)"
	has "a new user's run_python works" "bob 42"
	run_python bob "import urllib.request
print(urllib.request.urlopen('http://$web:8000/hello.txt', timeout=20).read().decode())"
	has "the sandbox fetches from the web server through the egress proxy" "hello from the web"
	run_python bob "import socket
try:
    socket.create_connection(('$web', 8000), timeout=5)
    print('direct: connected')
except OSError as e:
    print('direct: failed', e)"
	has "... while a direct connection fails" "direct: failed"
	# The web network's bridge came up with the web server, after the
	# supervisor started: it lists the address at its next look (30 s),
	# and the proxy reads the list again within 2 s (docs/egress.md).
	i=0
	until grep -qx "$gw" /var/lib/vivarium/egress/host-addresses || [ $i -ge 45 ]; do
		i=$((i + 1)); sleep 1
	done
	t_grep "the box's new address ($gw) is in the host-address list (after ${i}s)" \
	    "^$gw\$" /var/lib/vivarium/egress/host-addresses
	# The proxy looks at the file every 2 s.
	sleep 3
	run_python bob "import urllib.request, urllib.error
try:
    urllib.request.urlopen('http://$gw:8000/hello.txt', timeout=20)
    print('gateway: fetched')
except urllib.error.HTTPError as e:
    print('gateway: HTTP', e.code, e.read().decode())"
	has "... and refused by the proxy, though inside allow_cidrs" "gateway: HTTP 403 .*address of the proxy's host"

	run_python bob "open('/workspace/out.csv', 'w').write('a,b\n1,2\n')"
	mcp bob share_file '{"path": "out.csv"}'
	if l=$(link 2>&1) && curl -fsS --max-time 20 -o "$T/dl" "$l" 2>"$T/curl"; then
		t_check "a download link downloads" grep -qx '1,2' "$T/dl"
	else
		t_fail "a download link downloads" "$l $(cat "$T/out" "$T/curl")"
	fi
	if curl -fsS --max-time 20 -o "$T/dl" "$(cat "$T/link-before")" 2>"$T/curl"; then
		t_check "alice's link from before the reboot still downloads" \
		    grep -qx 'kept across a reboot' "$T/dl"
	else
		t_fail "alice's link from before the reboot still downloads" "$(cat "$T/link-before" "$T/curl")"
	fi
	run_python alice "print('alice', kept, open('/workspace/keep.txt').read())"
	has "alice's files and namespace survived the reboot" "alice 42 kept across a reboot"

	if vivariumctl doctor --fetch "http://$web:8000/hello.txt" >"$T/doctor" 2>&1; then
		t_grep "vivariumctl doctor: nothing failed" "doctor: nothing failed" "$T/doctor"
	else
		t_fail "vivariumctl doctor: nothing failed" "$(cat "$T/doctor")"
	fi
	t_grep "... and it fetched through the proxy" "^ok *fetch" "$T/doctor"
}

phase_rebuild() {
	old=$(podman image inspect --format '{{.Id}}' "$IMAGE")
	# carol's call runs through the rebuild.
	run_python carol "print('carol ready')"
	( OUT=$T/long; run_python carol "import time
time.sleep(20)
print('carol', 'long', 'done')" ) &
	long=$!
	sleep 3
	mkdir -p "$T/ctx"
	printf 'FROM %s\nLABEL io.vivarium.test-rebuild=%s\n' "$IMAGE" "$(date +%s)" >"$T/ctx/Containerfile"
	if podman build --network none -t "$IMAGE" "$T/ctx" >"$T/build.log" 2>&1; then
		t_ok "the image rebuilt with a change, tagged $IMAGE"
	else
		t_fail "the image rebuilt with a change" "$(tail -n 20 "$T/build.log")"
	fi
	new=$(podman image inspect --format '{{.Id}}' "$IMAGE")
	t_check "... a new image" test "$old" != "$new"
	# While carol's call runs: upgrade moves alice and bob (idle), not carol.
	vivariumctl upgrade --all >"$T/upgrade" 2>&1
	t_grep "vivariumctl upgrade --all leaves carol, in a call, as she is" \
	    "^carol: left as it is (busy: 1 request and 1 run in progress)" "$T/upgrade"
	t_grep "... and makes alice again on the new image, running" \
	    "^alice: made again from the current image, files and namespace kept; running again" "$T/upgrade"
	wait "$long"
	t_grep "a call running during the rebuild and the upgrade was not cut" "carol long done" "$T/long"
	t_check "... and carol is still on the old image" test \
	    "$(podman inspect vivarium-carol --format '{{.Image}}')" = "$old"
	run_python alice "print('alice', kept, open('/workspace/keep.txt').read())"
	has "alice comes back with her files and namespace" "alice 42 kept across a reboot"
	t_check "... on the new image" test "$(podman inspect vivarium-alice --format '{{.Image}}')" = "$new"
	vivariumctl upgrade carol >"$T/upgrade" 2>&1
	t_grep "carol, idle now, is upgraded too" "^carol: made again from the current image" "$T/upgrade"
	t_check "... on the new image" test "$(podman inspect vivarium-carol --format '{{.Image}}')" = "$new"
	i=0
	while [ "$(podman inspect vivarium-egress --format '{{.Image}}' 2>&1)" != "$new" ] && [ $i -lt 60 ]; do
		i=$((i + 1)); sleep 1
	done
	t_check "the egress proxy follows the image" \
	    test "$(podman inspect vivarium-egress --format '{{.Image}}' 2>&1)" = "$new"
	if egress_runs 30; then
		t_ok "... and runs"
	else
		t_fail "... and runs" "$(egress_why)"
	fi
}

# Everything of vivarium this host still has, one line each.
leftovers() {
	ls -d /usr/local/bin/vivarium* /usr/local/lib/vivarium /usr/local/share/vivarium \
	    /usr/local/lib/systemd/system/vivarium* /etc/systemd/system/*/vivarium* \
	    /etc/vivarium /var/lib/vivarium 2>/dev/null
	systemctl list-unit-files 'vivarium*' --no-legend 2>/dev/null
	pgrep -a vivarium
	podman ps -a --format 'container {{.Names}} {{.Labels}}' | grep -i vivarium
	podman network ls --format '{{.Name}} {{.Labels}}' | grep -i vivarium | cut -d' ' -f1 |
	    sed 's/^/network /'
	podman volume ls --format 'volume {{.Name}} {{.Labels}}' | grep -i vivarium
	podman images -a --format 'image {{.ID}} {{.Repository}}:{{.Tag}} {{.Labels}}' | grep -i vivarium
	true
}

phase_uninstall() {
	# The test's own web server first: not vivarium's.
	podman rm -f -t 0 web >/dev/null 2>&1
	podman network rm web >/dev/null 2>&1
	leftovers >"$T/before"
	if make uninstall PURGE=1 >"$T/refused" 2>&1; then
		t_fail "make uninstall PURGE=1 without CONFIRM=yes is refused" "$(cat "$T/refused")"
	else
		t_grep "make uninstall PURGE=1 without CONFIRM=yes is refused" "CONFIRM=yes" "$T/refused"
	fi
	t_grep "... naming the users' files" "/var/lib/vivarium (.*users" "$T/refused"
	t_grep "... and the sandboxes" "containers ([0-9]*): .*vivarium-alice" "$T/refused"
	leftovers >"$T/after"
	t_check "... and removes nothing" cmp "$T/before" "$T/after"
	if make uninstall PURGE=1 CONFIRM=yes >"$T/uninstall" 2>&1; then
		t_ok "make uninstall PURGE=1 CONFIRM=yes"
	else
		t_fail "make uninstall PURGE=1 CONFIRM=yes" "$(cat "$T/uninstall")"
	fi
	leftovers >"$T/after"
	if [ -s "$T/after" ]; then
		t_fail "nothing of vivarium is left" "$(cat "$T/after")"
	else
		t_ok "nothing of vivarium is left (files, units, config, state, processes, Podman)"
	fi
}

case "${1:-}" in
install|reboot|rebuild|uninstall) phase_"$1" ;;
*) echo "usage: tests/host/inbox.sh install|reboot|rebuild|uninstall" >&2; exit 2 ;;
esac
t_done "$1"
