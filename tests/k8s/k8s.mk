# tests/k8s: the Kubernetes backend without a cluster: a fake API server
# (HTTPS, its own CA, a bearer token) and a fake kubelet that runs each
# Pod as a real vivarium-agent on a loopback address; every object the
# supervisor sends checked by validate.mjs (the Kubernetes OpenAPI schemas
# and the restricted Pod Security Standard).  No Podman needed.
# Included from the top-level Makefile, before the Podman suites: it needs none.
.PHONY: test-k8s

K8S_NODE_MODULES := tests/k8s/node_modules/.package-lock.json
$(K8S_NODE_MODULES): tests/k8s/package.json tests/k8s/package-lock.json
	cd tests/k8s && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# The supervisor and vivariumctl run from the sanitizer build (ASan+UBSan,
# as test-unit builds them): the API client and the backend are exercised
# here more than anywhere, and tests/supervisor/lib.mjs fails a test whose
# supervisor reported a sanitizer error, a leak at exit included.
K8S_SAN_BIN := build/san/bin
test-k8s:
	@scripts/deps build test
	@$(MAKE) --no-print-directory $(BIN)/vivarium-agent $(BIN)/vivarium-egress \
	    $(E2E_NODE_MODULES) $(K8S_NODE_MODULES)
	@$(MAKE) --no-print-directory SANITIZE=address,undefined \
	    $(K8S_SAN_BIN)/vivarium-supervisor $(K8S_SAN_BIN)/vivariumctl
	@VIVARIUM_AGENT_BIN=$(abspath $(BIN))/vivarium-agent \
	    VIVARIUM_SUPERVISOR_BIN=$(abspath $(K8S_SAN_BIN))/vivarium-supervisor \
	    VIVARIUM_CTL_BIN=$(abspath $(K8S_SAN_BIN))/vivariumctl \
	    VIVARIUM_EGRESS_BIN=$(abspath $(BIN))/vivarium-egress \
	    VIVARIUM_PYTHON=$(PYTHON) VIVARIUM_PYTHONPATH=$(CURDIR)/python \
	    tests/k8s/run.sh
