#!/bin/sh
# tests/deploy/run.sh (make test-deploy): every deploy test in turn; fails
# when one failed.
cd "$(dirname "$0")/../.."
rc=0
for t in deps quadlet k8s-kubeplay agent-python limits run-smoke install container export nginx; do
	echo "--- tests/deploy/$t.sh"
	tests/deploy/$t.sh || rc=1
done
exit $rc
