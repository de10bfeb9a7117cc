#!/bin/sh
# tests/egress/container.sh: the test-egress-container suite.
# egress-proxy/container.sh against the tests' private Podman service
# (tests/lib/podman.sh) and the sandbox image in its storage (`make
# image-for-tests`):
#   - the proxy container is made hardened on a normal network, left alone
#     when nothing changed, started when stopped, replaced when its image or
#     configuration changed; bad settings get a clear error;
#   - an origin (python3 -m http.server in the same image) on a separate
#     normal network is reached through the proxy from a client on an
#     internal network the proxy is connected to (as the supervisor connects
#     it to each user's network), because the test allows the origin's
#     subnet; the client cannot reach it directly; private addresses not
#     allowed (the client's own, loopback) get 403, and so does another
#     user's sandbox on a network the proxy is on, though allow_cidrs
#     holds the whole pool of test networks.
# Every target is a container this test starts, or loopback.  Everything is
# named uniquely and removed at exit.
set -eu
cd "$(dirname "$0")/../.."
. tests/lib/podman.sh
vp_start

VERSION=${IMAGE_VERSION:-$(sed -n 's/^VERSION[[:space:]]*:=[[:space:]]*//p' Makefile)}
IMAGE=localhost/vivarium-sandbox:$VERSION
fails=0
ok() { echo "ok - $*"; }
notok() { echo "not ok - $*"; fails=$((fails + 1)); }
# expect NAME COMMAND...: COMMAND's status is 0
check() {
	_n=$1; shift
	if "$@"; then ok "$_n"; else notok "$_n"; fi
}

if ! vpodman image exists "$IMAGE"; then
	echo "test-egress-container: $IMAGE is not in the test storage: run \`make image-for-tests\`" >&2
	exit 1
fi

# Nothing from the caller's environment may steer container.sh.
for v in $(env | sed -n 's/^\(VIVARIUM_EGRESS_[A-Z_]*\)=.*/\1/p'); do
	unset "$v"
done
unset VIVARIUM_SANDBOX_IMAGE
tag=$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
export VIVARIUM_EGRESS_CONTAINER="vivtest-egress-$tag"
export VIVARIUM_EGRESS_NETWORK="vivtest-egress-$tag"
export VIVARIUM_EGRESS_BRIDGE="vte$tag"
export VIVARIUM_EGRESS_IMAGE="$IMAGE"
export VIVARIUM_EGRESS_HOST_DIR="$VP_SVC_DIR/egress-host"
EG=$VIVARIUM_EGRESS_CONTAINER
ORIGIN=vivtest-origin-$tag
ORIGIN_NET=vivtest-origin-$tag
INNER_NET=vivtest-inner-$tag
OTHER_NET=vivtest-other-$tag
OTHER=vivtest-other-$tag
BAD_NET=vivtest-badnet-$tag
ALT_IMAGE=localhost/vivtest-egress-alt:$tag

# net NAME BRIDGE INTERNAL: a network with a bridge name of our own
net() {
	_out=$(vp_api POST /v4.0.0/libpod/networks/create "$(printf \
	    '{"name": "%s", "network_interface": "%s", "driver": "bridge", "internal": %s, "dns_enabled": false}' \
	    "$1" "$2" "$3")")
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
ensure() { egress-proxy/container.sh >"$VP_SVC_DIR/ensure.log" 2>&1; }

net "$ORIGIN_NET" "vto$tag" false
net "$INNER_NET" "vti$tag" true
net "$OTHER_NET" "vtj$tag" true
net "$BAD_NET" "vtb$tag" true
vp_on_exit "egress-proxy/container.sh remove"

# ---------------------------------------------------------------- bad input
if out=$(VIVARIUM_EGRESS_PORT=31x8 egress-proxy/container.sh 2>&1); then
	notok "a bad port was accepted"
else
	check "a bad port is named: $out" \
	    sh -c 'echo "$1" | grep -q "VIVARIUM_EGRESS_PORT=\"31x8\""' - "$out"
fi
if out=$(VIVARIUM_EGRESS_IMAGE=localhost/vivtest-no-such-image:$tag egress-proxy/container.sh 2>&1); then
	notok "a missing image was accepted"
else
	check "a missing image is named: $out" \
	    sh -c 'echo "$1" | grep -q "no image localhost/vivtest-no-such-image"' - "$out"
fi
if out=$(VIVARIUM_EGRESS_NETWORK=$BAD_NET egress-proxy/container.sh 2>&1); then
	notok "an internal network was accepted as the way out"
else
	check "an internal network is refused as the way out: $out" \
	    sh -c 'echo "$1" | grep -q "is internal"' - "$out"
fi
if out=$(VIVARIUM_EGRESS_CONFIG=/nonexistent/egress.yaml egress-proxy/container.sh 2>&1); then
	notok "a missing config file was accepted"
else
	check "a missing config file is named" \
	    sh -c 'echo "$1" | grep -q "/nonexistent/egress.yaml: not readable"' - "$out"
fi
# A configuration the proxy refuses: container.sh fails with the proxy's
# own words (its -n, in a one-off container) and makes no container, so
# there is no restart loop; each restart of a container with a user
# namespace would leave a network namespace and a veth on the host
# (Podman 4.3.1), and the host's address list would grow with them.
if out=$(VIVARIUM_EGRESS_PORTS=0 egress-proxy/container.sh 2>&1); then
	notok "a configuration the proxy refuses was accepted"
else
	check "a refused configuration fails with the proxy's words: $out" \
	    sh -c 'echo "$1" | grep -q "refuses this configuration (no container made)" && echo "$1" | grep -q "VIVARIUM_EGRESS_PORTS=\"0\""' - "$out"
	st=$(eg_state)
	check "... and makes no container ($st)" test "$st" = missing
	veths=$(ip -o link show master "$VIVARIUM_EGRESS_BRIDGE" 2>/dev/null | wc -l)
	check "... and leaves no veth on the proxy's bridge ($veths)" test "$veths" = 0
fi
# One that passes -n but exits at start (no room for its 64 threads): the
# restart is seen at once, its log shown, the container removed, and the
# namespaces Podman leaves at each restart are deleted.  The limit leaves
# room for runc's own start (runc init is Go, with threads of its own that
# count against it: a limit of 2 sometimes failed there, before the proxy).
t0=$(date +%s%N)
if out=$(VIVARIUM_EGRESS_PIDS=16 VIVARIUM_EGRESS_WORKERS=64 egress-proxy/container.sh 2>&1); then
	notok "a proxy that cannot start was accepted"
else
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	if echo "$out" | grep -q "did not start" &&
	    echo "$out" | grep -q "pthread_create"; then
		ok "a proxy that exits at start fails with its log in $ms ms"
	else
		notok "a proxy that exits at start fails with its log in $ms ms"
		printf '%s\n' "$out" | sed 's/^/# /'
	fi
	st=$(eg_state)
	check "... and is removed ($st)" test "$st" = missing
	veths=$(ip -o link show master "$VIVARIUM_EGRESS_BRIDGE" 2>/dev/null | wc -l)
	check "... and what Podman left on the host is deleted ($veths veths on the bridge)" \
	    test "$veths" = 0
fi

# ---------------------------------------------------------------- origin
vp_on_exit "vpodman rm -f -t 0 $ORIGIN"
vpodman run -d --name "$ORIGIN" --network "$ORIGIN_NET" --image-volume ignore \
    --cap-drop ALL --read-only --entrypoint sh "$IMAGE" -c \
    "mkdir -p /tmp/www && echo hello-$tag >/tmp/www/hello.txt &&
     exec python3 -m http.server --bind 0.0.0.0 --directory /tmp/www 8000" >/dev/null
# Another user's sandbox, on a network the proxy will be connected to.
vp_on_exit "vpodman rm -f -t 0 $OTHER"
vpodman run -d --name "$OTHER" --network "$OTHER_NET" --image-volume ignore \
    --cap-drop ALL --read-only --entrypoint sh "$IMAGE" -c \
    "mkdir -p /tmp/www && echo other-$tag >/tmp/www/hello.txt &&
     exec python3 -m http.server --bind 0.0.0.0 --directory /tmp/www 8000" >/dev/null
other_ip=$(ip_on "$OTHER" "$OTHER_NET")
origin_ip=$(ip_on "$ORIGIN" "$ORIGIN_NET")
origin_subnet=$(vpodman network inspect --format '{{range .Subnets}}{{.Subnet}}{{end}}' "$ORIGIN_NET")
echo "# origin $origin_ip:8000 on $origin_subnet"

# ---------------------------------------------------------------- the container
export VIVARIUM_EGRESS_PORTS=80,443,8000
# The origin's subnet and, as an operator who opens "the LAN" might, the
# whole pool every test network is made from, the users' networks too.
export VIVARIUM_EGRESS_ALLOW_CIDRS="$origin_subnet,$VP_SUBNET_POOL"
t0=$(date +%s%N)
if ensure; then
	ok "container.sh made $EG in $(( ($(date +%s%N) - t0) / 1000000 )) ms (after a refused one)"
else
	notok "container.sh failed: $(cat "$VP_SVC_DIR/ensure.log")"
fi
id1=$(eg_id)
check "it runs" test "$(eg_state)" = running
hard=$(vpodman inspect --format '{{.HostConfig.ReadonlyRootfs}} caps=[{{range .EffectiveCaps}}{{.}} {{end}}] {{.HostConfig.SecurityOpt}} {{.HostConfig.Memory}} {{.HostConfig.PidsLimit}} {{.HostConfig.Init}} {{.OCIRuntime}} {{.Config.User}} {{.HostConfig.RestartPolicy.Name}}' "$EG")
echo "# $hard"
check "hardened: read-only root, no capabilities, no-new-privileges, limits, init, runc, uid 1000" \
    sh -c 'echo "$1" | grep -Eq "^true caps=\[\] \[no-new-privileges\] [1-9][0-9]* [1-9][0-9]* true runc 1000:1000 always$"' - "$hard"
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
nets=$(vpodman inspect --format '{{range $k, $v := .NetworkSettings.Networks}}{{$k}} {{end}}' "$EG")
check "on network $VIVARIUM_EGRESS_NETWORK only ($nets)" test "$nets" = "$VIVARIUM_EGRESS_NETWORK "
check "the network is normal (not internal)" \
    test "$(vpodman network inspect --format '{{.Internal}}' "$VIVARIUM_EGRESS_NETWORK")" = false
vols=$(vpodman inspect --format '{{range .Mounts}}{{.Type}}:{{.Destination}} {{end}}' "$EG")
check "no anonymous /workspace volume, the host address directory read-only ($vols)" \
    test "$vols" = "bind:/run/vivarium-host "
check "the host address file lists the host's addresses" \
    sh -c 'grep -qx 127.0.0.1 "$1" && grep -qx "$2" "$1"' - \
    "$VIVARIUM_EGRESS_HOST_DIR/host-addresses" \
    "$(ip -o -4 addr show dev "vto$tag" | awk '{ sub("/.*", "", $4); print $4 }')"

ensure && out=$(cat "$VP_SVC_DIR/ensure.log") || out="failed"
check "a second run leaves it alone ($out)" \
    sh -c 'test "$1" = "$2" && echo "$3" | grep -q "is running$"' - "$id1" "$(eg_id)" "$out"

vpodman stop -t 2 "$EG" >/dev/null
ensure || :
check "a stopped one is started again, not replaced" \
    sh -c 'test "$1" = "$2" && test "$3" = running' - "$id1" "$(eg_id)" "$(eg_state)"

# ---------------------------------------------------------------- through the proxy
vpodman network connect "$INNER_NET" "$EG"
vpodman network connect "$OTHER_NET" "$EG"
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
# An address the host gains while the proxy runs: container.sh host-addrs
# (what run.sh runs every 30 s) lists it and the proxy refuses it soon.
new_ip=${origin_subnet%.*/*}.200
ip addr add "$new_ip/32" dev "vto$tag"
res=$(client "new=get:$new_ip:8000" 2>&1) || :
check "before: a new host address is not yet known ($(line new))" \
    sh -c 'case "$1" in "403 "*) exit 1 ;; esac' - "$(line new)"
egress-proxy/container.sh host-addrs
sleep 3
res=$(client "new=get:$new_ip:8000" 2>&1) || :
check "after host-addrs the new host address gets 403 ($(line new))" \
    sh -c 'case "$1" in "403 "*"proxy'"'"'s host"*) ;; *) exit 1 ;; esac' - "$(line new)"
logs=$(vpodman logs "$EG" 2>&1)
check "the proxy logged the allowed request" \
    sh -c 'echo "$1" | grep -q "target=$2:8000 .*verdict=allow"' - "$logs" "$origin_ip"

# ---------------------------------------------------------------- changes
# Without the exception the same origin is private and refused: the
# container is replaced for the new configuration.
unset VIVARIUM_EGRESS_ALLOW_CIDRS
ensure || :
id2=$(eg_id)
check "a configuration change replaces it" \
    sh -c 'test "$1" != "$2" && test "$3" = running' - "$id1" "$id2" "$(eg_state)"
ip2=$(ip_on "$EG" "$INNER_NET" 2>/dev/null || :)
check "... connected again to the user network it was on, at the same address ($ip2)" \
    test "$ip2" = "$proxy_ip"
res=$(client "get=get:$origin_ip:8000" 2>&1) || :
check "without allow_cidrs the origin gets 403 ($(line get))" \
    sh -c 'case "$1" in "403 "*) ;; *) exit 1 ;; esac' - "$(line get)"

# Another image (a label on top of the sandbox image: a new image id).
ctx=$VP_SVC_DIR/alt
mkdir -p "$ctx"
printf 'FROM %s\nLABEL io.vivarium.test=%s\n' "$IMAGE" "$tag" >"$ctx/Containerfile"
vp_on_exit "vpodman rmi -f $ALT_IMAGE"
vpodman build -q -t "$ALT_IMAGE" "$ctx" >/dev/null
VIVARIUM_EGRESS_IMAGE=$ALT_IMAGE ensure || :
id3=$(eg_id)
img=$(vpodman inspect --format '{{.ImageName}}' "$EG" 2>/dev/null || :)
check "an image change replaces it ($img)" \
    sh -c 'test "$1" != "$2" && test "$3" = "$4" && test "$5" = running' - \
    "$id2" "$id3" "$img" "$ALT_IMAGE" "$(eg_state)"

# ---------------------------------------------------------------- make run
# supervisor/run.sh as `make run` runs it, on this private service: it
# starts the proxy (a new one: another name), tells the supervisor about it,
# and a user's sandbox fetches from the origin through it.
if [ -n "${VIVARIUM_SUPERVISOR_BIN:-}" ]; then
	run=$VP_SVC_DIR/run
	mkdir -p "$run/state"
	u=egt$tag
	port=$((20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 20000))
	tok=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
	(
	export VIVARIUM_RUN_DIR=$run VIVARIUM_STATE_DIR=$run/state \
	    VIVARIUM_SUPERVISOR_CONFIG=$run/none.yaml \
	    VIVARIUM_SUPERVISOR_TOKEN=$tok \
	    VIVARIUM_SUPERVISOR_LISTEN=127.0.0.1:$port VIVARIUM_SANDBOX_IMAGE=$IMAGE \
	    VIVARIUM_EGRESS_CONTAINER=vivtest-egress-run-$tag \
	    VIVARIUM_EGRESS_NETWORK=vivtest-egress-run-$tag VIVARIUM_EGRESS_BRIDGE=vtr$tag \
	    VIVARIUM_EGRESS_ALLOW_CIDRS=$origin_subnet
	unset VIVARIUM_EGRESS_IMAGE
	BIN=$(dirname "$VIVARIUM_SUPERVISOR_BIN") supervisor/run.sh >"$run/run.log" 2>&1 &
	echo $! >"$run/pid"
	)
	vp_on_exit "VIVARIUM_EGRESS_CONTAINER=vivtest-egress-run-$tag VIVARIUM_EGRESS_NETWORK=vivtest-egress-run-$tag egress-proxy/container.sh remove"
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
	check "run.sh started the proxy" \
	    test "$(vpodman inspect --format '{{.State.Status}}' vivtest-egress-run-$tag 2>/dev/null)" = running
	check "... and gave the supervisor an egress section naming it" \
	    grep -q "container: vivtest-egress-run-$tag" "$run/supervisor.yaml"
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
else
	echo "# VIVARIUM_SUPERVISOR_BIN not set: run.sh not tested"
fi

if [ "$fails" -ne 0 ]; then
	echo "test-egress-container: $fails failed"
	exit 1
fi
echo "test-egress-container: all passed"
