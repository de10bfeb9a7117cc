# tests/rootless: the supervisor as an ordinary user against that user's
# rootless Podman (tests/rootless/run.sh makes the user; run as root).
# Included from supervisor/module.mk, after test-supervisor.
.PHONY: test-rootless
test-rootless:
	@scripts/deps build test podman rootless
	@$(MAKE) --no-print-directory $(BIN)/vivarium-supervisor $(BIN)/vivariumctl
	@$(MAKE) --no-print-directory image-for-tests
	@VIVARIUM_SUPERVISOR_BIN=$(abspath $(BIN))/vivarium-supervisor \
	    VIVARIUM_CTL_BIN=$(abspath $(BIN))/vivariumctl \
	    IMAGE_VERSION=$(VERSION) tests/rootless/run.sh
