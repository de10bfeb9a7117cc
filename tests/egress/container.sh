#!/bin/sh
# tests/egress/container.sh: the test-egress-container suite.  The egress
# proxy as the supervisor makes and keeps it (egress: manage: yes,
# supervisor/egress.c), against the tests' private Podman service
# (tests/lib/podman.sh) and the sandbox image in its storage (`make
# image-for-tests`):
#   - what would leave sandboxes without a way out is said at start, in
#     plain words (no egress section, a missing image, an internal network,
#     a configuration the proxy refuses, a proxy that exits at start), and
#     a proxy that cannot start is not started again in a loop;
#   - the proxy container is made hardened on a normal network, with the
#     host's addresses listed for it;
#   - an origin (python3 -m http.server in the same image) on a separate
#     normal network is reached through the proxy from a client on a user
#     network the supervisor put the proxy on, because the test allows the
#     origin's subnet; the client cannot reach it directly; private
#     addresses not allowed (the client's own, loopback) get 403, and so do
#     the host's own address inside the allowed subnet, one the host gains
#     while the proxy runs, and another user's sandbox on a network the
#     proxy is on, though allow_cidrs holds the whole pool of test networks;
#   - a configuration or image change replaces it, back on the user network
#     at the same address;
#   - supervisor/run.sh (`make run`) gets a sandbox out through it.
# Every target is a container this test starts, or loopback.  Everything is
# named uniquely and removed at exit.
set -eu
cd "$(dirname "$0")/../.."
. tests/lib/podman.sh
vp_start

VERSION=${IMAGE_VERSION:-$(sed -n 's/^VERSION[[:space:]]*:=[[:space:]]*//p' Makefile)}
IMAGE=localhost/vivarium-sandbox:$VERSION
SV=${VIVARIUM_SUPERVISOR_BIN:-$PWD/bin/vivarium-supervisor}
fails=0
ok() { echo "ok - $*"; }
notok() { echo "not ok - $*"; fails=$((fails + 1)); }
# check NAME COMMAND...: COMMAND's status is 0
check() {
	_n=$1; shift
	if "$@"; then ok "$_n"; else notok "$_n"; fi
}

if ! vpodman image exists "$IMAGE"; then
	echo "test-egress-container: $IMAGE is not in the test storage: run \`make image-for-tests\`" >&2
	exit 1
fi

# Nothing from the caller's environment may steer run.sh or the supervisor.
for v in $(env | sed -n 's/^\(VIVARIUM_[A-Z_]*\)=.*/\1/p'); do
	case $v in VIVARIUM_SUPERVISOR_BIN|VIVARIUM_PODMAN_SOCKET) ;; *) unset "$v" ;; esac
done
tag=$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
EG=vivtest-egress-$tag
EG_NET=vivtest-egress-$tag
EG_BRIDGE=vte$tag
ORIGIN=vivtest-origin-$tag
ORIGIN_NET=vivtest-origin-$tag
# Users' networks as the supervisor names and labels them: it puts the
# proxy back on them when it makes the proxy again.
U_INNER=egi$tag
U_OTHER=egj$tag
INNER_NET=vivarium-$U_INNER
OTHER_NET=vivarium-$U_OTHER
BAD_NET=vivtest-badnet-$tag
ALT_IMAGE=localhost/vivtest-egress-alt:$tag
D=$VP_SVC_DIR/sv
mkdir -p "$D/state"
TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')

# net NAME BRIDGE INTERNAL [USER]: a network with a bridge name of our own
net() {
	_lbl=
	[ -z "${4:-}" ] || _lbl=$(printf ', "labels": {"io.vivarium.managed": "true", "io.vivarium.user": "%s"}' "$4")
	_out=$(vp_api POST /v4.0.0/libpod/networks/create "$(printf \
	    '{"name": "%s", "network_interface": "%s", "driver": "bridge", "internal": %s, "dns_enabled": false%s}' \
	    "$1" "$2" "$3" "$_lbl")")
	case "$(printf '%s\n' "$_out" | tail -n 1)" in
	200|201) vp_on_exit "vpodman network rm -f $1" ;;
	*) echo "could not create network $1: $_out" >&2; exit 1 ;;
	esac
}
ip_on() {	# CONTAINER NETWORK
	vpodman inspect --format "{{(index .NetworkSettings.Networks \"$2\").IPAddress}}" "$1"
}
eg_id() { vpodman inspect --format '{{.Id}}' "$EG" 2>/dev/null || echo none; }
eg_state() { vpodman inspect --format '{{.State.Status}}' "$EG" 2>/dev/null || echo missing; }
# until_ok SECONDS COMMAND...: COMMAND's status is 0 within SECONDS
until_ok() {
	_t=$(( $1 * 5 )); shift
	while [ $_t -gt 0 ]; do
		"$@" && return 0
		_t=$((_t - 1))
		sleep 0.2
	done
	return 1
}

# sv NAME [EGRESS-KEY...]: the supervisor with an egress section of these
# keys (after manage: yes and our names), in the background, its log in
# $D/NAME.log; waits until it listens.  The reaper looks every 2 s.
sv_pid=
sv() {
	_name=$1; shift
	port=$((20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 20000))
	{
		echo "listen: 127.0.0.1:$port"
		echo "token: $TOKEN"
		printf 'podman:\n  socket: %s\n' "$VP_SOCKET"
		echo "state_dir: $D/state"
		echo "image: $IMAGE"
		echo "idle_stop_after: 20s"
		printf 'egress:\n  manage: yes\n  container: %s\n  network: %s\n  bridge: %s\n' \
		    "$EG" "$EG_NET" "$EG_BRIDGE"
		for k in "$@"; do printf '  %s\n' "$k"; done
	} >"$D/$_name.yaml"
	"$SV" -f "$D/$_name.yaml" >"$D/$_name.log" 2>&1 &
	sv_pid=$!
	until_ok 60 grep -q "listening on" "$D/$_name.log" ||
	    { sed 's/^/# /' "$D/$_name.log"; sv_stop; return 1; }
}
sv_stop() {
	[ -n "$sv_pid" ] || return 0
	kill -TERM "$sv_pid" 2>/dev/null || :
	wait "$sv_pid" 2>/dev/null || :
	sv_pid=
}
# said NAME PATTERN LOG: the supervisor's log holds PATTERN (grep -E)
said() {
	if grep -Eq "$2" "$3"; then ok "$1"; else notok "$1"; sed 's/^/# /' "$3"; fi
}
vp_on_exit "vpodman network rm -f $EG_NET"
vp_on_exit "vpodman rm -f -t 0 $EG"
vp_on_exit 'sv_stop'

net "$ORIGIN_NET" "vto$tag" false
net "$INNER_NET" "vti$tag" true "$U_INNER"
net "$OTHER_NET" "vtj$tag" true "$U_OTHER"
net "$BAD_NET" "vtb$tag" true

# ---------------------------------------------------------------- bad input
printf 'token: %s\negress:\n  manage: yes\n  bridge: vivarium-much-too-long\n' "$TOKEN" >"$D/long.yaml"
if out=$("$SV" -n -f "$D/long.yaml" 2>&1); then
	notok "a bridge name too long was accepted"
else
	check "a bridge name too long is named: $out" \
	    sh -c 'echo "$1" | grep -q "bridge \"vivarium-much-too-long\" is longer than 15"' - "$out"
fi
printf 'listen: 127.0.0.1:%s\ntoken: %s\npodman:\n  socket: %s\nstate_dir: %s/state\n' \
    "$((20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 20000))" "$TOKEN" "$VP_SOCKET" "$D" >"$D/none.yaml"
"$SV" -f "$D/none.yaml" >"$D/none.log" 2>&1 & sv_pid=$!
until_ok 30 grep -q "listening on" "$D/none.log" || :
sv_stop
said "no egress section: the supervisor says sandboxes have no internet" \
    "no egress proxy is configured.*no internet access" "$D/none.log"
sv noimage "image: localhost/vivtest-no-such-image:$tag" || :
sv_stop
said "a missing image is named" \
    "egress proxy is NOT running.*vivtest-no-such-image:$tag is not in Podman's storage" "$D/noimage.log"
keep_net=$EG_NET
EG_NET=$BAD_NET
sv badnet || :
sv_stop
EG_NET=$keep_net
said "an internal network is refused as the way out" "NOT running.*network $BAD_NET is internal" "$D/badnet.log"
printf 'allow_ports: [0]\n' >"$D/bad.yaml"
sv refused "config: $D/bad.yaml" || :
said "a configuration the proxy refuses is said with the proxy's words" \
    "NOT running.*exited at start \(code [0-9]+\):.*allow_ports" "$D/refused.log"
st=$(eg_state)
check "... and the proxy is neither running nor restarting ($st)" \
    sh -c 'case "$1" in exited|stopped|created) ;; *) exit 1 ;; esac' - "$st"
sleep 5
n=$(grep "exited at start" "$D/refused.log" | grep -vc "tried again in" || :)
check "... nor started again at every look (every 2 s): $n start(s) in 5 s" test "$n" = 1
said "... and the supervisor says when it tries again" "tried again in [0-9]+ s" "$D/refused.log"
sv_stop
vpodman rm -f -t 0 "$EG" >/dev/null 2>&1 || :
# ---------------------------------------------------------------- origin
vp_on_exit "vpodman rm -f -t 0 $ORIGIN"
vpodman run -d --name "$ORIGIN" --network "$ORIGIN_NET" --image-volume ignore \
    --cap-drop ALL --read-only --entrypoint sh "$IMAGE" -c \
    "mkdir -p /tmp/www && echo hello-$tag >/tmp/www/hello.txt &&
     exec python3 -m http.server --bind 0.0.0.0 --directory /tmp/www 8000" >/dev/null
# Users' sandboxes as the supervisor would see them: containers named and
# labelled for the users, running on their networks (the supervisor puts
# its proxy on the networks of running sandboxes).  The other user's
# serves files: the proxy must refuse to reach it.
OTHER=vivarium-$U_OTHER
INNER=vivarium-$U_INNER
vp_on_exit "vpodman rm -f -t 0 $INNER"
vpodman run -d --name "$INNER" --network "$INNER_NET" --image-volume ignore \
    --label io.vivarium.managed=true --label io.vivarium.user="$U_INNER" \
    --cap-drop ALL --read-only --entrypoint sleep "$IMAGE" infinity >/dev/null
vp_on_exit "vpodman rm -f -t 0 $OTHER"
vpodman run -d --name "$OTHER" --network "$OTHER_NET" --image-volume ignore \
    --label io.vivarium.managed=true --label io.vivarium.user="$U_OTHER" \
    --cap-drop ALL --read-only --entrypoint sh "$IMAGE" -c \
    "mkdir -p /tmp/www && echo other-$tag >/tmp/www/hello.txt &&
     exec python3 -m http.server --bind 0.0.0.0 --directory /tmp/www 8000" >/dev/null
other_ip=$(ip_on "$OTHER" "$OTHER_NET")
origin_ip=$(ip_on "$ORIGIN" "$ORIGIN_NET")
origin_subnet=$(vpodman network inspect --format '{{range .Subnets}}{{.Subnet}}{{end}}' "$ORIGIN_NET")
echo "# origin $origin_ip:8000 on $origin_subnet"

# ---------------------------------------------------------------- the container
# The origin's subnet and, as an operator who opens "the LAN" might, the
# whole pool every test network is made from, the users' networks too.
printf 'allow_ports: [80, 443, 8000]\nallow_cidrs: [%s, %s]\nverbose: yes\n' \
    "$origin_subnet" "$VP_SUBNET_POOL" >"$D/egress.yaml"
t0=$(date +%s%N)
if sv main "config: $D/egress.yaml"; then
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	said "the supervisor made $EG ($ms ms to listen, the proxy made before)" \
	    "egress proxy $EG runs from $IMAGE" "$D/main.log"
else
	notok "the supervisor did not start"
fi
id1=$(eg_id)
check "it runs" test "$(eg_state)" = running
hard=$(vpodman inspect --format '{{.HostConfig.ReadonlyRootfs}} caps=[{{range .EffectiveCaps}}{{.}} {{end}}] {{.HostConfig.SecurityOpt}} {{.HostConfig.Memory}} {{.HostConfig.PidsLimit}} {{.HostConfig.Init}} {{.OCIRuntime}} {{.Config.User}} restart={{.HostConfig.RestartPolicy.Name}}' "$EG")
echo "# $hard"
check "hardened: read-only root, no capabilities, no-new-privileges, limits, init, runc, uid 1000, no restart policy" \
    sh -c 'echo "$1" | grep -Eq "^true caps=\[\] \[no-new-privileges\] [1-9][0-9]* [1-9][0-9]* true runc 1000:1000 restart=(no)?$"' - "$hard"
# Its own host ids: uid 1000 inside, 1000001000 on the host (slot 0 of
# the supervisor's uid_base), neither a sandbox's nor the host's uid 1000.
egpid=$(vpodman inspect --format '{{.State.Pid}}' "$EG")
eguid=$(awk '/^Uid:/ { print $2 }' "/proc/$egpid/status" 2>/dev/null)
check "runs as host uid 1000001000 in a user namespace of its own ($eguid)" \
    test "$eguid" = 1000001000
ul=$(vpodman inspect --format '{{range .HostConfig.Ulimits}}{{.Name}}={{.Soft}}:{{.Hard}} {{end}}' "$EG")
check "explicit nofile limit ($ul)" sh -c 'echo "$1" | grep -q "RLIMIT_NOFILE=16384:16384"' - "$ul"
lbl=$(vpodman inspect --format '{{index .Config.Labels "io.vivarium.managed"}} {{index .Config.Labels "io.vivarium.role"}}' "$EG")
check "labels io.vivarium.managed=true, io.vivarium.role=egress" test "$lbl" = "true egress"
ent=$(vpodman inspect --format '{{.Config.Entrypoint}}' "$EG")
check "entrypoint vivarium-egress ($ent)" sh -c 'echo "$1" | grep -q "/usr/local/bin/vivarium-egress"' - "$ent"
check "the network is normal (not internal)" \
    test "$(vpodman network inspect --format '{{.Internal}}' "$EG_NET")" = false
vols=$(vpodman inspect --format '{{range .Mounts}}{{.Type}}:{{.Destination}} {{end}}' "$EG")
check "no anonymous /workspace volume; the host address directory and the config read-only ($vols)" \
    sh -c 'case "$1" in *bind:/run/vivarium-host*) ;; *) exit 1 ;; esac; case "$1" in *workspace*) exit 1 ;; esac' - "$vols"
check "the host address file lists the host's addresses" \
    sh -c 'grep -qx 127.0.0.1 "$1" && grep -qx "$2" "$1"' - \
    "$D/state/egress/host-addresses" \
    "$(ip -o -4 addr show dev "vto$tag" | awk '{ sub("/.*", "", $4); print $4 }')"
nets=$(vpodman inspect --format '{{range $k, $v := .NetworkSettings.Networks}}{{$k}} {{end}}' "$EG")
check "on its network and the users' networks there are ($nets)" \
    sh -c 'for n in "$2" "$3" "$4"; do case " $1" in *" $n "*) ;; *) exit 1 ;; esac; done' - \
    "$nets" "$EG_NET" "$INNER_NET" "$OTHER_NET"
sleep 3
check "a look later leaves it alone" test "$(eg_id)" = "$id1"
vpodman stop -t 2 "$EG" >/dev/null
eg_running() { test "$(eg_state)" = running; }
if until_ok 20 eg_running; then
	check "a stopped one is started again, not replaced" test "$(eg_id)" = "$id1"
else
	notok "a stopped one is started again ($(eg_state))"
fi

# ---------------------------------------------------------------- through the proxy
proxy_ip=$(ip_on "$EG" "$INNER_NET")
echo "# proxy $proxy_ip:3128 on $INNER_NET"
client() {
	vpodman run --rm --network "$INNER_NET" --image-volume ignore --cap-drop ALL \
	    --read-only -v "$PWD/tests/egress/container-client.py:/t/client.py:ro" \
	    --entrypoint python3 "$IMAGE" /t/client.py "$proxy_ip" 3128 "$@"
}
# The origin network's gateway is the host (its bridge address): inside the
# allowed subnet, and refused all the same.
origin_gw=$(ip -o -4 addr show dev "vto$tag" | awk '{ sub("/.*", "", $4); print $4; exit }')
res=$(client "get=get:$origin_ip:8000" "connect=connect:$origin_ip:8000" \
    "hostgw=get:$origin_gw:8000" \
    "direct=direct:$origin_ip:8000" "self=get:SELF:8000" \
    "loop=get:127.0.0.1:8000" "port=get:$origin_ip:8001" \
    "selfconnect=connect:SELF:8000" "other=get:$other_ip:8000" \
    "otherconnect=connect:$other_ip:8000" 2>&1) || :
echo "$res" | sed 's/^/# /'
line() { echo "$res" | sed -n "s/^$1 //p"; }
check "GET through the proxy reaches the allowed origin ($(line get))" test "$(line get)" = "200 hello-$tag"
check "CONNECT through the proxy reaches it ($(line connect))" test "$(line connect)" = "200 200 hello-$tag"
check "the client cannot reach it directly ($(line direct))" sh -c 'case "$1" in error*) ;; *) exit 1 ;; esac' - "$(line direct)"
check "a private address not allowed (the client's own) gets 403 ($(line self))" \
    sh -c 'case "$1" in "403 "*) ;; *) exit 1 ;; esac' - "$(line self)"
check "CONNECT to it gets 403 ($(line selfconnect))" \
    sh -c 'case "$1" in "403 "*) ;; *) exit 1 ;; esac' - "$(line selfconnect)"
check "the host's address gets 403 even inside allow_cidrs ($(line hostgw))" \
    sh -c 'case "$1" in "403 "*"proxy'"'"'s host"*) ;; *) exit 1 ;; esac' - "$(line hostgw)"
# allow_cidrs holds the other user's network, but the proxy is on it: a
# sandbox network, refused before allow_cidrs is read.
check "another user's sandbox gets 403 though allow_cidrs holds it ($(line other))" \
    sh -c 'case "$1" in "403 "*"network the proxy is on"*) ;; *) exit 1 ;; esac' - "$(line other)"
check "... CONNECT too ($(line otherconnect))" \
    sh -c 'case "$1" in "403 "*"network the proxy is on"*) ;; *) exit 1 ;; esac' - "$(line otherconnect)"
check "loopback gets 403 ($(line loop))" sh -c 'case "$1" in "403 "*) ;; *) exit 1 ;; esac' - "$(line loop)"
check "a port not allowed gets 403 ($(line port))" sh -c 'case "$1" in "403 "*) ;; *) exit 1 ;; esac' - "$(line port)"
# An address the host gains while the proxy runs: the supervisor lists it
# at its next look (every 2 s here) and the proxy refuses it soon.
new_ip=${origin_subnet%.*/*}.200
ip addr add "$new_ip/32" dev "vto$tag"
vp_on_exit "ip addr del $new_ip/32 dev vto$tag 2>/dev/null || :"
if until_ok 15 grep -qx "$new_ip" "$D/state/egress/host-addresses"; then
	ok "the supervisor lists an address the host gains"
else
	notok "the supervisor lists an address the host gains"
fi
sleep 2
res=$(client "new=get:$new_ip:8000" 2>&1) || :
check "... and the proxy refuses it ($(line new))" \
    sh -c 'case "$1" in "403 "*"proxy'"'"'s host"*) ;; *) exit 1 ;; esac' - "$(line new)"
logs=$(vpodman logs "$EG" 2>&1)
check "the proxy logged the allowed request" \
    sh -c 'echo "$1" | grep -q "target=$2:8000 .*verdict=allow"' - "$logs" "$origin_ip"

# ---------------------------------------------------------------- changes
# Without the exception the same origin is private and refused: the
# container is replaced for the new configuration at the next look.
printf 'allow_ports: [80, 443, 8000]\n' >"$D/egress.yaml"
eg_replaced() { test "$(eg_id)" != "$id1" && eg_running; }
if until_ok 20 eg_replaced; then
	ok "a configuration change replaces it"
else
	notok "a configuration change replaces it ($(eg_state))"
fi
id2=$(eg_id)
on_inner() { test "$(ip_on "$EG" "$INNER_NET" 2>/dev/null)" = "$proxy_ip"; }
until_ok 10 on_inner || :
ip2=$(ip_on "$EG" "$INNER_NET" 2>/dev/null || :)
check "... put back on the user network it was on, at the same address ($ip2)" \
    test "$ip2" = "$proxy_ip"
res=$(client "get=get:$origin_ip:8000" 2>&1) || :
check "without allow_cidrs the origin gets 403 ($(line get))" \
    sh -c 'case "$1" in "403 "*) ;; *) exit 1 ;; esac' - "$(line get)"
sv_stop

# Another image (a label on top of the sandbox image: a new image id).
ctx=$VP_SVC_DIR/alt
mkdir -p "$ctx"
printf 'FROM %s\nLABEL io.vivarium.test=%s\n' "$IMAGE" "$tag" >"$ctx/Containerfile"
vp_on_exit "vpodman rmi -f $ALT_IMAGE"
vpodman build -q -t "$ALT_IMAGE" "$ctx" >/dev/null
sv alt "config: $D/egress.yaml" "image: $ALT_IMAGE" || :
id3=$(eg_id)
img=$(vpodman inspect --format '{{.ImageName}}' "$EG" 2>/dev/null || :)
check "an image change replaces it ($img)" \
    sh -c 'test "$1" != "$2" && test "$3" = "$4" && test "$5" = running' - \
    "$id2" "$id3" "$img" "$ALT_IMAGE" "$(eg_state)"
sv_stop

# ---------------------------------------------------------------- make run
# The stand-in sandboxes go: run.sh's supervisor is another service on the
# same Podman, and would put its proxy on their networks too.
vpodman rm -f -t 0 "$INNER" "$OTHER" >/dev/null 2>&1 || :
# supervisor/run.sh as `make run` runs it, on this private service: its
# supervisor makes the proxy (another one: other names), and a user's
# sandbox fetches from the origin through it.
run=$VP_SVC_DIR/run
mkdir -p "$run/state"
u=egt$tag
port=$((20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 20000))
tok=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
printf 'allow_ports: [80, 443, 8000]\nallow_cidrs: [%s]\n' "$origin_subnet" >"$run/egress.yaml"
(
export VIVARIUM_RUN_DIR=$run VIVARIUM_STATE_DIR=$run/state \
    VIVARIUM_SUPERVISOR_CONFIG=$run/none.yaml \
    VIVARIUM_SUPERVISOR_TOKEN=$tok VIVARIUM_PODMAN_SOCKET=$VP_SOCKET \
    VIVARIUM_SUPERVISOR_LISTEN=127.0.0.1:$port VIVARIUM_SANDBOX_IMAGE=$IMAGE \
    VIVARIUM_EGRESS_CONTAINER=vivtest-egress-run-$tag \
    VIVARIUM_EGRESS_NETWORK=vivtest-egress-run-$tag VIVARIUM_EGRESS_BRIDGE=vtr$tag \
    VIVARIUM_EGRESS_CONFIG=$run/egress.yaml
BIN=$(dirname "$SV") supervisor/run.sh >"$run/run.log" 2>&1 &
echo $! >"$run/pid"
)
vp_on_exit "vpodman network rm -f vivtest-egress-run-$tag"
vp_on_exit "vpodman rm -f -t 0 vivtest-egress-run-$tag"
vp_on_exit "vpodman volume rm -f vivarium-$u-workspace"
vp_on_exit "vpodman network rm -f vivarium-$u"
vp_on_exit "vpodman rm -f -t 0 vivarium-$u"
vp_on_exit "kill -TERM $(cat "$run/pid"); sleep 1"
i=0
until curl -s -o /dev/null "http://127.0.0.1:$port/" 2>/dev/null; do
	i=$((i + 1))
	if [ $i -gt 150 ] || ! kill -0 "$(cat "$run/pid")" 2>/dev/null; then
		sed 's/^/# /' "$run/run.log"
		break
	fi
	sleep 0.2
done
st=$(vpodman inspect --format '{{.State.Status}}' "vivtest-egress-run-$tag" 2>&1)
check "run.sh's supervisor made the proxy ($st)" test "$st" = running
check "... from an egress section with manage: yes" \
    grep -q "manage: yes" "$run/supervisor.yaml"
mcp() {
	curl -sS --max-time 120 -D "$run/h" -H "Authorization: Bearer $tok" \
	    -H "X-User-ID: $u" -H 'Content-Type: application/json' \
	    -H 'Accept: application/json, text/event-stream' \
	    ${sid:+-H "Mcp-Session-Id: $sid"} --data-binary "$1" \
	    "http://127.0.0.1:$port/mcp" 2>&1 || :
}
sid=
mcp '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"test-egress-container","version":"1"}}}' >/dev/null
sid=$(sed -n 's/^[Mm]cp-[Ss]ession-[Ii]d: *\([^\r]*\).*/\1/p' "$run/h")
mcp '{"jsonrpc":"2.0","method":"notifications/initialized"}' >/dev/null
code="import urllib.request as u
print('fetched', u.urlopen('http://$origin_ip:8000/hello.txt', timeout=10).read().decode().strip())
try:
    u.urlopen('http://127.0.0.1:8000/', timeout=10)
except Exception as e:
    print('loopback', e)"
code=$(printf '%s' "$code" | sed 's/\\/\\\\/g; s/"/\\"/g' | awk '{printf "%s\\n", $0}')
out=$(mcp "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"run_python\",\"arguments\":{\"code\":\"$code\"}}}")
check "a sandbox of make run fetches from the origin through the proxy" \
    sh -c 'echo "$1" | grep -q "fetched hello-$2"' - "$out" "$tag"
check "... and gets 403 for loopback" \
    sh -c 'echo "$1" | grep -q "loopback HTTP Error 403"' - "$out"
if [ "$fails" -ne 0 ]; then
	echo "# $out" | head -c 2000; echo
	sed 's/^/# /' "$run/run.log"
fi

if [ "$fails" -ne 0 ]; then
	echo "test-egress-container: $fails failed"
	exit 1
fi
echo "test-egress-container: all passed"
