# tests/kubeplay: the Pod and PVC of `vivariumctl render --kubernetes` played
# by `podman kube play` in the tests' private Podman, the agent reached over
# TCP with its secret (tests/kubeplay/README.md).  Included from
# supervisor/module.mk.
.PHONY: test-kubeplay
test-kubeplay:
	@scripts/deps build test podman
	@$(MAKE) --no-print-directory $(BIN)/vivariumctl $(E2E_NODE_MODULES)
	@$(MAKE) --no-print-directory image-for-tests
	@BIN=$(BIN) IMAGE_VERSION=$(VERSION) tests/kubeplay/run.sh
