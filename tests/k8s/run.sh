#!/bin/sh
# tests/k8s/run.sh: the Kubernetes suite (make test-k8s).  Needs bin/ built,
# openssl (the fake API server's CA), and the node packages of tests/k8s
# (kubernetes-models, yaml) and tests/e2e (the MCP SDK client).
set -eu
cd "$(dirname "$0")/../.."
command -v openssl >/dev/null || { echo "test-k8s: openssl is needed (apt-get install openssl)" >&2; exit 1; }
for d in tests/e2e tests/k8s; do
	if [ ! -f $d/node_modules/.package-lock.json ] || [ $d/package-lock.json -nt $d/node_modules/.package-lock.json ]; then
		(cd $d && npm ci --no-audit --no-fund --loglevel=error)
	fi
done
exec node --test --test-concurrency=1 ${VIVARIUM_K8S_TESTS:-tests/k8s/validate.test.mjs tests/k8s/fakeapi.test.mjs tests/k8s/render.test.mjs \
    tests/k8s/supervisor.test.mjs tests/k8s/idle.test.mjs tests/k8s/faults.test.mjs tests/k8s/adopt.test.mjs tests/k8s/drift.test.mjs tests/k8s/reuse.test.mjs tests/k8s/userns.test.mjs}
