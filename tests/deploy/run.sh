#!/bin/sh
# tests/deploy/run.sh (make test-deploy): every deploy test in turn; fails
# when one failed.
cd "$(dirname "$0")/../.."
rc=0
for t in deps quadlet k8s-kubeplay agent-python limits run-smoke install \
    container export "front nginx" "front caddy"; do
	echo "--- tests/deploy/$t.sh"
	# shellcheck disable=SC2086: "front nginx" is a script and its argument
	set -- $t
	tests/deploy/$1.sh ${2:-} || rc=1
done
exit $rc
