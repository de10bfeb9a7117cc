#!/bin/sh
# tests/supervisor/run.sh: the supervisor's integration tests (make
# test-supervisor).  Needs bin/ built, the sandbox image in the tests'
# private storage (make image-for-tests) and the MCP SDK client.
set -eu
cd "$(dirname "$0")/../.."
if [ ! -d tests/e2e/node_modules/@modelcontextprotocol/sdk ]; then
	(cd tests/e2e && npm ci --no-audit --no-fund --loglevel=error)
fi
exec node --test --test-concurrency=1 tests/supervisor/stream.test.mjs \
    tests/supervisor/supervisor.test.mjs tests/supervisor/longrun.test.mjs \
    tests/supervisor/notebook.test.mjs tests/supervisor/image.test.mjs \
    tests/supervisor/egress.test.mjs tests/supervisor/doctor.test.mjs \
    tests/supervisor/names.test.mjs tests/supervisor/backup.test.mjs \
    tests/supervisor/stateless.test.mjs
