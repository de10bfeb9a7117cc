#!/bin/sh
# supervisor/paste.sh HOST PORT TOKEN: what to paste into LibreChat for a
# supervisor listening on HOST:PORT, printed by `make run` once it serves.
#
# Where LibreChat runs decides the URL:
#   - on this host: the listen address itself (127.0.0.1 for 0.0.0.0);
#   - in a container (Docker Compose or Podman): 127.0.0.1 is the container
#     itself, so the supervisor must listen on an address the container
#     reaches (0.0.0.0, or the bridge's gateway), and LibreChat names the
#     host host.docker.internal (Docker: extra_hosts host-gateway, which
#     LibreChat's docker-compose.yml has) or host.containers.internal
#     (Podman adds it to every container).  docs/operating.md, "LibreChat".
# Then what LibreChat needs besides (a restart, the server picked in a
# chat) and where file links point (links: public_url).
set -eu
[ $# -eq 3 ] || { echo "usage: paste.sh HOST PORT TOKEN" >&2; exit 2; }
host=$1 port=$2 token=$3

entry() {	# URL-HOST: the mcpServers entry and allowedAddresses
	cat <<EOF
mcpServers:
  vivarium:
    type: streamable-http
    url: http://$1:$port/mcp
    headers:
      Authorization: "Bearer \${VIVARIUM_TOKEN}"
      X-User-ID: "{{LIBRECHAT_USER_ID}}"
      X-User-Name: "{{LIBRECHAT_USER_EMAIL}}"
    requiresOAuth: false
    timeout: 330000
    initTimeout: 60000
    serverInstructions: true
mcpSettings:
  allowedAddresses:
    - "$1:$port"
EOF
}

case "$host" in
0.0.0.0|::) local_host=127.0.0.1 container=1 ;;
127.*|::1|localhost) local_host=$host container=0 ;;
*:*) local_host="[$host]" container=1 ;;
*) local_host=$host container=1 ;;
esac

cat <<EOF

==================== vivarium is ready: paste this into LibreChat ====================
LibreChat's .env:

VIVARIUM_TOKEN=$token

librechat.yaml, LibreChat on this host:

EOF
entry "$local_host"
echo
if [ "$container" = 1 ]; then
	cat <<EOF
librechat.yaml, LibreChat in a container: the same entry with this host's name
inside the container, host.docker.internal for Docker Compose (LibreChat's
docker-compose.yml maps it with extra_hosts: host-gateway), or
host.containers.internal for Podman:

EOF
	entry host.docker.internal
	echo
	echo "(Podman: replace host.docker.internal by host.containers.internal, twice.)"
else
	cat <<EOF
LibreChat in a container (Docker Compose, Podman) cannot reach $host:$port:
that is the container itself.  Run the supervisor on an address it reaches
(the token guards it there too), then paste what that prints:

  VIVARIUM_SUPERVISOR_LISTEN=0.0.0.0:$port make run
EOF
fi
case "$host" in
127.*|::1|localhost|0.0.0.0|::) links="its default, http://$local_host:$port, opens only on this
machine: set it to an address the users' browsers reach" ;;
*) links="its default, http://$local_host:$port, works where browsers reach
that address; behind a TLS reverse proxy, set it to the proxy's https:// address" ;;
esac
cat <<EOF

Then restart LibreChat (it reads librechat.yaml and .env only at start), and in
a chat pick vivarium in the MCP servers menu, or add its tools to an agent.

File links the model gives out point at links: public_url in the supervisor's
config; $links
(docs/operating.md, "File links").

Check it from this host: make smoke$( [ "$local_host:$port" = 127.0.0.1:8787 ] || echo " VIVARIUM_URL=http://$local_host:$port")
=======================================================================================
EOF
