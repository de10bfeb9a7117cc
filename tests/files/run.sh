#!/bin/sh
# tests/files/run.sh: download and upload links in a real browser (make
# test-files): the standalone agent, then the supervisor with real Podman
# and the sandbox image.  Needs bin/ built, the image in the tests'
# private storage (make image-for-tests), chromium, and the node packages
# of tests/e2e (the MCP SDK client) and tests/files (playwright-core, and
# @modelcontextprotocol/ext-apps for the MCP Apps view's host page).
set -eu
cd "$(dirname "$0")/../.."
for d in tests/e2e tests/files; do
	if [ ! -f $d/node_modules/.package-lock.json ] || [ $d/package-lock.json -nt $d/node_modules/.package-lock.json ]; then
		(cd $d && npm ci --no-audit --no-fund --loglevel=error)
	fi
done
exec node --test --test-concurrency=1 ${VIVARIUM_FILES_TESTS:-tests/files/agent.test.mjs tests/files/supervisor.test.mjs tests/files/lockout.test.mjs tests/files/apps.test.mjs tests/files/elicit.test.mjs}
