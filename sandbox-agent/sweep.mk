# sandbox-agent/sweep.mk: VIVARIUM_SWEEP (sandbox-agent/sweep.c).  Included
# by sandbox-agent/module.mk.

$(eval $(call unit_test,agent_sweep,tests/unit/sandbox-agent/sweep.c,,))

# The real agent as an unprivileged user in a PID namespace of its own
# (unshare, catatonit as its init), so its kill(-1) reaches nothing else:
# runs leave setsid'd sleepers behind and they are gone afterwards.  Needs
# root for the namespace.
.PHONY: test-sweep
test-sweep: $(BIN)/vivarium-agent $(E2E_NODE_MODULES)
	@scripts/deps podman
	cd tests/e2e && VIVARIUM_AGENT_BIN=$(CURDIR)/$(BIN)/vivarium-agent \
		VIVARIUM_PYTHON=$(PYTHON) VIVARIUM_PYTHONPATH=$(CURDIR)/python \
		node --test --test-concurrency=1 sweep.test.mjs
