# sandbox-agent: vivarium-agent, the MCP server inside each sandbox.  Its
# settings are environment variables only, so no libyaml.
PKGS_sandbox-agent := libmicrohttpd jansson libpng

AGENT_SRCS	:= $(wildcard sandbox-agent/*.c)
AGENT_OBJS	 = $(AGENT_SRCS:%.c=$(O)/%.o)
PROGS		+= $(BIN)/vivarium-agent

$(BIN)/vivarium-agent: $(AGENT_OBJS) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) -o $@ $^ $(ALL_LDFLAGS) \
		$(call PC_libs,$(PKGS_sandbox-agent)) -lm -lpthread

# The pinned MCP SDK client for tests/e2e (node's test runner).  Defined
# before the fragments below, whose suites depend on it too.
E2E_NODE_MODULES := tests/e2e/node_modules/.package-lock.json

$(E2E_NODE_MODULES): tests/e2e/package.json tests/e2e/package-lock.json
	cd tests/e2e && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# The run/spawn/PNG half keeps its tests in its own fragment.
-include sandbox-agent/run.mk

# The MCP/HTTP half's unit tests (each includes the .c it tests).
AGENT_TEST_PKGS := libmicrohttpd jansson
$(eval $(call unit_test,agent_mcp,tests/unit/sandbox-agent/mcp.c,,$(AGENT_TEST_PKGS)))
$(eval $(call unit_test,agent_workspace,tests/unit/sandbox-agent/workspace.c,,$(AGENT_TEST_PKGS)))
$(eval $(call unit_test,agent_config,tests/unit/sandbox-agent/config.c,$(O)/sandbox-agent/sweep.o,$(AGENT_TEST_PKGS)))
$(eval $(call unit_test,agent_tools,tests/unit/sandbox-agent/tools.c,$(O)/sandbox-agent/result.o $(O)/sandbox-agent/workspace.o $(O)/sandbox-agent/sweep.o $(O)/sandbox-agent/files.o $(O)/sandbox-agent/elicit.o $(O)/sandbox-agent/jobs.o $(O)/sandbox-agent/cancel.o,$(AGENT_TEST_PKGS)))
$(eval $(call unit_test,agent_files,tests/unit/sandbox-agent/files.c,$(O)/sandbox-agent/workspace.o $(O)/sandbox-agent/elicit.o,$(AGENT_TEST_PKGS)))

# ---------------------------------------------------------------- e2e
# The MCP SDK client tests (tests/e2e, node's test runner) against the real
# agent on TCP and on a unix socket.  Other suites may depend on
# $(E2E_NODE_MODULES) to get the pinned client installed.

.PHONY: test-agent
TEST_SUITES += test-agent
test-agent: $(BIN)/vivarium-agent $(E2E_NODE_MODULES)
	cd tests/e2e && VIVARIUM_AGENT_BIN=$(CURDIR)/$(BIN)/vivarium-agent \
		VIVARIUM_PYTHON=$(PYTHON) VIVARIUM_PYTHONPATH=$(CURDIR)/python \
		node --test --test-concurrency=1 agent.test.mjs badinput.test.mjs \
		images.test.mjs \
		namespace.test.mjs longrun.test.mjs files_full.test.mjs files_fd.test.mjs \
		secret.test.mjs notebook.test.mjs linkinput.test.mjs limits.test.mjs

# Leftover processes killed after runs (VIVARIUM_SWEEP): unit tests, and the
# real agent in a PID namespace of its own.
include sandbox-agent/sweep.mk

# ---------------------------------------------------------------- fuzz
# Request handling under libFuzzer (clang, Debian's libclang-rt).
FUZZ_TIME	?= 30
FUZZ_AGENT	:= build/fuzz/agent-mcp

$(FUZZ_AGENT): tests/fuzz/agent/fuzz_mcp.c sandbox-agent/mcp.c \
		sandbox-agent/tools.c sandbox-agent/workspace.c sandbox-agent/agent.h \
		sandbox-agent/sweep.c sandbox-agent/result.c sandbox-agent/files.c sandbox-agent/elicit.c \
		sandbox-agent/jobs.c sandbox-agent/cancel.c common/fdpass.c
	@mkdir -p $(@D)
	clang -g -O1 -std=c11 -D_GNU_SOURCE -DVIVARIUM_VERSION='"fuzz"' \
		-Icommon -Isandbox-agent \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-o $@ tests/fuzz/agent/fuzz_mcp.c sandbox-agent/result.c \
		sandbox-agent/workspace.c sandbox-agent/files.c sandbox-agent/elicit.c sandbox-agent/jobs.c \
		sandbox-agent/cancel.c sandbox-agent/sweep.c common/buf.c common/log.c \
		common/link.c common/sha256.c common/fileweb.c common/mhd.c \
		common/guard.c common/text.c common/clock.c common/jsonrpc.c \
		common/fdpass.c -lmicrohttpd -ljansson -lm -lpthread

.PHONY: test-fuzz-agent
TEST_SUITES += test-fuzz-agent
test-fuzz-agent:
	@scripts/deps build test
	@$(MAKE) --no-print-directory $(FUZZ_AGENT) $(FUZZ_LINK)
	@mkdir -p build/fuzz/agent-corpus build/fuzz/link-corpus
	$(FUZZ_AGENT) -max_total_time=$(FUZZ_TIME) -max_len=4096 \
		-print_final_stats=1 -timeout=5 -dict=tests/fuzz/agent/json.dict \
		-artifact_prefix=build/fuzz/agent- \
		build/fuzz/agent-corpus tests/fuzz/agent/corpus
	$(FUZZ_LINK) -max_total_time=$(FUZZ_TIME) -max_len=8192 \
		-print_final_stats=1 -timeout=5 -artifact_prefix=build/fuzz/link- \
		build/fuzz/link-corpus tests/fuzz/link/corpus

# Link tokens and upload names: what a browser sends first.
FUZZ_LINK	:= build/fuzz/link
$(FUZZ_LINK): tests/fuzz/link/fuzz_link.c common/link.c common/sha256.c \
		common/fileweb.c common/link.h common/fileweb.h common/guard.c
	@mkdir -p $(@D)
	clang -g -O1 -std=c11 -D_GNU_SOURCE -Icommon \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-o $@ tests/fuzz/link/fuzz_link.c common/link.c common/sha256.c \
		common/fileweb.c common/mhd.c common/guard.c common/clock.c \
		common/buf.c common/log.c common/text.c -lmicrohttpd -ljansson \
		-lm -lpthread

fuzz: test-fuzz-agent
