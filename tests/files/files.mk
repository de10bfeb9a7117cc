# tests/files: download and upload links in a real browser,
# through the standalone agent and through the supervisor.
# Included from supervisor/module.mk, after test-supervisor.
.PHONY: test-files

FILES_ENV = VIVARIUM_AGENT_BIN=$(abspath $(BIN))/vivarium-agent \
	    VIVARIUM_SUPERVISOR_BIN=$(abspath $(BIN))/vivarium-supervisor \
	    VIVARIUM_PYTHON=$(PYTHON) VIVARIUM_PYTHONPATH=$(CURDIR)/python \
	    VIVARIUM_SANDBOX_IMAGE=$${VIVARIUM_SANDBOX_IMAGE:-localhost/vivarium-sandbox:$(VERSION)}

TEST_SUITES += test-files
test-files:
	@scripts/deps build test podman browser
	@$(MAKE) --no-print-directory $(BIN)/vivarium-agent $(BIN)/vivarium-supervisor
	@$(MAKE) --no-print-directory image-for-tests
	@$(FILES_ENV) tests/files/run.sh

