# sandbox-agent/warm.mk: warm runs (sandbox-agent/warm.c and
# python/vivarium/_zygote.py): their unit tests, the end-to-end test and the
# cold-vs-warm benchmark.  Included by sandbox-agent/run.mk.

$(eval $(call unit_test,agent_warm,tests/unit/sandbox-agent/warm.c,$(O)/sandbox-agent/result.o $(O)/sandbox-agent/images.o $(O)/sandbox-agent/wsdiff.o $(O)/sandbox-agent/workspace.o $(O)/sandbox-agent/quant.o,jansson libpng))

# Per-user workspaces, parallel users and a killed zygote through the real
# agent and the MCP SDK client.
.PHONY: test-warm
test-warm: $(BIN)/vivarium-agent $(E2E_NODE_MODULES)
	cd tests/e2e && VIVARIUM_AGENT_BIN=$(CURDIR)/$(BIN)/vivarium-agent \
		VIVARIUM_PYTHON=$(PYTHON) VIVARIUM_PYTHONPATH=$(CURDIR)/python \
		node --test --test-concurrency=1 warm.test.mjs

# Cold vs warm through the agent's HTTP on a unix socket, side by side.
.PHONY: bench-run
bench-run: $(BIN)/vivarium-agent $(E2E_NODE_MODULES)
	@scripts/deps test
	VIVARIUM_AGENT_BIN=$(CURDIR)/$(BIN)/vivarium-agent \
		VIVARIUM_PYTHON=$(PYTHON) VIVARIUM_PYTHONPATH=$(CURDIR)/python \
		node bench/run/bench.mjs
