#!/bin/sh
# tests/image/hostlibs.sh AGENT IMAGE: the agent built on this host (Debian
# 12, libmicrohttpd 0.9.75's headers) run on the sandbox image's libraries
# (trixie: libmicrohttpd 1.0.x under the same soname), as after a
# distribution upgrade without a rebuild; and, as the control, on this
# host's own.  Both must take good headers and refuse a NUL in one
# (tests/image/mhd-client.py).  Sourced podman.sh and a started service
# are the caller's (tests/image/run.sh).
set -eu
. tests/lib/podman.sh
vp_env
AGENT=$1
IMAGE=$2
SECRET=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
fails=0

echo "# the host's libmicrohttpd"
ws=$(mktemp -d)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
env VIVARIUM_HOST=127.0.0.1 VIVARIUM_PORT="$port" VIVARIUM_AGENT_SECRET="$SECRET" \
    VIVARIUM_USER_HEADER=X-User-Id VIVARIUM_WORKDIR="$ws" VIVARIUM_WARM=0 \
    VIVARIUM_SWEEP=0 "$AGENT" 2>"$ws.log" &
pid=$!
i=0
until curl -fs -o /dev/null "http://127.0.0.1:$port/health"; do
	i=$((i + 1))
	if [ $i -gt 100 ] || ! kill -0 $pid 2>/dev/null; then
		echo "not ok - the agent did not start on this host:"; cat "$ws.log"
		fails=1
		break
	fi
	sleep 0.1
done
[ $fails -ne 0 ] || python3 tests/image/mhd-client.py "$port" "$SECRET" || fails=1
kill $pid 2>/dev/null || :
wait $pid 2>/dev/null || :
rm -rf "$ws" "$ws.log"

echo "# the image's libmicrohttpd, same binary"
if ! vpodman run --rm --network none --user 1000:1000 \
    --volume "$(cd "$(dirname "$AGENT")" && pwd)/$(basename "$AGENT"):/host/vivarium-agent:ro" \
    --volume "$PWD/tests/image/mhd-client.py:/host/mhd-client.py:ro" \
    --env VIVARIUM_HOST=127.0.0.1 --env VIVARIUM_PORT=8123 \
    --env VIVARIUM_AGENT_SECRET="$SECRET" --env VIVARIUM_USER_HEADER=X-User-Id \
    --env VIVARIUM_WORKDIR=/tmp/ws --env VIVARIUM_WARM=0 --env VIVARIUM_SWEEP=0 \
    --entrypoint sh "$IMAGE" -c '
	mkdir -p /tmp/ws
	/host/vivarium-agent 2>/tmp/agent.log &
	i=0
	until python3 -c "import urllib.request; urllib.request.urlopen(\"http://127.0.0.1:8123/health\", timeout=1)" 2>/dev/null; do
		i=$((i + 1))
		if [ $i -gt 100 ]; then echo "not ok - the agent did not start:"; cat /tmp/agent.log; exit 1; fi
		sleep 0.1
	done
	python3 /host/mhd-client.py 8123 "$VIVARIUM_AGENT_SECRET"
	rc=$?
	[ $rc -eq 0 ] || cat /tmp/agent.log
	exit $rc'; then
	fails=1
fi
exit $fails
