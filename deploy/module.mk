# deploy: how operators run it (README, docs/operating.md).
#   make smoke       probe the running supervisor as LibreChat would
#   make install     programs, runner, templates, examples, units, config
#   make uninstall   all of it but the config, the state and Podman's objects,
#                    saying what it kept (PURGE=1 CONFIRM=yes: those too)
#                    PREFIX, DESTDIR, BINDIR, LIBDIR, DATADIR, UNITDIR,
#                    CONFDIR, STATEDIR: deploy/install.sh says where
#   make test-deploy make run + make smoke, make install + the installed
#                    supervisor, the nginx snippet of docs/operating.md,
#                    against the tests' Podman
#   make test-deploy-k8s  deploy/kubernetes/ validated (schemas, restricted
#                    Pod Security) and checked against the programs and the
#                    Kubernetes backend; no cluster, no Podman
.PHONY: smoke install uninstall test-deploy test-deploy-k8s

install: programs
	@VERSION=$(VERSION) BIN=$(BIN) deploy/install.sh install

uninstall:
	@VERSION=$(VERSION) BIN=$(BIN) deploy/install.sh uninstall

smoke:
	@supervisor/smoke.sh

test-deploy:
	@scripts/deps build test podman deploy
	@$(MAKE) --no-print-directory $(BIN)/vivarium-supervisor $(BIN)/vivariumctl \
		$(K8S_NODE_MODULES)
	@$(MAKE) --no-print-directory image-for-tests
	@IMAGE_VERSION=$(VERSION) BIN=$(BIN) tests/deploy/run.sh

# The schemas, the YAML parser and the fake cluster are tests/k8s/'s; its
# session drives the supervisor with tests/e2e's MCP client.
test-deploy-k8s:
	@scripts/deps build test
	@$(MAKE) --no-print-directory $(BIN)/vivarium-supervisor $(BIN)/vivariumctl \
		$(BIN)/vivarium-egress $(BIN)/vivarium-agent $(K8S_NODE_MODULES) \
		$(E2E_NODE_MODULES)
	@BIN=$(BIN) VIVARIUM_AGENT_BIN=$(abspath $(BIN))/vivarium-agent \
	    VIVARIUM_SUPERVISOR_BIN=$(abspath $(BIN))/vivarium-supervisor \
	    VIVARIUM_CTL_BIN=$(abspath $(BIN))/vivariumctl \
	    VIVARIUM_EGRESS_BIN=$(abspath $(BIN))/vivarium-egress \
	    VIVARIUM_PYTHON=$(PYTHON) VIVARIUM_PYTHONPATH=$(CURDIR)/python \
	    node tests/deploy/k8s-manifests.mjs
