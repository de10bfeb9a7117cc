# tests/files: download and upload links, and the MCP Apps view, in a real browser,
# through the standalone agent and through the supervisor; and bench/files.
# Included from supervisor/module.mk, after test-supervisor.
.PHONY: test-files bench-files

FILES_ENV = VIVARIUM_AGENT_BIN=$(abspath $(BIN))/vivarium-agent \
	    VIVARIUM_SUPERVISOR_BIN=$(abspath $(BIN))/vivarium-supervisor \
	    VIVARIUM_PYTHON=$(PYTHON) VIVARIUM_PYTHONPATH=$(CURDIR)/python \
	    VIVARIUM_SANDBOX_IMAGE=$${VIVARIUM_SANDBOX_IMAGE:-localhost/vivarium-sandbox:$(VERSION)}

test-files:
	@scripts/deps build test podman browser
	@$(MAKE) --no-print-directory $(BIN)/vivarium-agent $(BIN)/vivarium-supervisor
	@$(MAKE) --no-print-directory image-for-tests
	@$(FILES_ENV) tests/files/run.sh

# The MCP Apps view alone: the standalone agent, no image or Podman.
.PHONY: test-apps
test-apps:
	@scripts/deps build test browser
	@$(MAKE) --no-print-directory $(BIN)/vivarium-agent
	@$(FILES_ENV) VIVARIUM_FILES_TESTS=tests/files/apps.test.mjs tests/files/run.sh

# The upload ceiling's bare receiver (bench/files/receiver.c).
BENCH_RECEIVER := build/bench/receiver
$(BENCH_RECEIVER): bench/files/receiver.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -o $@ bench/files/receiver.c $(ALL_LDFLAGS)

bench-files:
	@scripts/deps build test podman browser
	@$(MAKE) --no-print-directory $(BIN)/vivarium-supervisor $(BENCH_RECEIVER) \
	    image-for-tests
	@for d in tests/e2e tests/files; do [ -d $$d/node_modules ] || \
	    (cd $$d && npm ci --no-audit --no-fund --loglevel=error); done
	@$(FILES_ENV) VIVARIUM_BENCH_RECEIVER=$(abspath $(BENCH_RECEIVER)) \
	    node bench/files/bench.mjs
