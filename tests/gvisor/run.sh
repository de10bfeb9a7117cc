#!/bin/sh
# tests/gvisor/run.sh: a few supervisor tests with the sandboxes under
# gVisor (make test-gvisor).  Needs runsc (scripts/deps gvisor), bin/ built,
# the sandbox image in the tests' private storage (make image-for-tests)
# and the MCP SDK client.
set -eu
cd "$(dirname "$0")/../.."
if [ ! -x /usr/bin/runsc ]; then
	echo "test-gvisor: /usr/bin/runsc is missing (scripts/deps gvisor)" >&2
	exit 1
fi
if [ ! -d tests/e2e/node_modules/@modelcontextprotocol/sdk ]; then
	(cd tests/e2e && npm ci --no-audit --no-fund --loglevel=error)
fi
exec node --test --test-concurrency=1 tests/gvisor/gvisor.test.mjs
