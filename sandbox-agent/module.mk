# sandbox-agent: vivarium-agent, the MCP server inside each sandbox.  Its
# settings are environment variables only, so no libyaml.
PKGS_sandbox-agent := libmicrohttpd jansson libpng

AGENT_SRCS	:= $(wildcard sandbox-agent/*.c)
AGENT_OBJS	 = $(AGENT_SRCS:%.c=$(O)/%.o) $(O)/sandbox-agent/ui_html.o
PROGS		+= $(BIN)/vivarium-agent

$(BIN)/vivarium-agent: $(AGENT_OBJS) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) -o $@ $^ $(ALL_LDFLAGS) \
		$(call PC_libs,$(PKGS_sandbox-agent)) -lm -lpthread

# The MCP Apps view (ui.c) is a real HTML file, embedded as a byte array
# by od and sed (coreutils, no xxd), with a NUL after it.
UI_HTML := sandbox-agent/ui/workspace.html

$(O)/sandbox-agent/ui_html.c: $(UI_HTML) sandbox-agent/module.mk
	@mkdir -p $(@D)
	@{ echo '/* Generated from $(UI_HTML) by sandbox-agent/module.mk. */'; \
	  echo '#include <stddef.h>'; \
	  echo 'extern const unsigned char ui_workspace_html[];'; \
	  echo 'extern const size_t ui_workspace_html_len;'; \
	  echo 'const unsigned char ui_workspace_html[] = {'; \
	  od -An -v -tx1 $(UI_HTML) | sed 's/ *\([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	  echo '0x00 };'; \
	  echo 'const size_t ui_workspace_html_len = sizeof(ui_workspace_html) - 1;'; \
	} > $@.tmp && mv $@.tmp $@

$(O)/sandbox-agent/ui_html.o: $(O)/sandbox-agent/ui_html.c
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

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
$(eval $(call unit_test,agent_mcp,tests/unit/sandbox-agent/mcp.c,$(O)/sandbox-agent/ui.o $(O)/sandbox-agent/ui_html.o,$(AGENT_TEST_PKGS)))
$(eval $(call unit_test,agent_workspace,tests/unit/sandbox-agent/workspace.c,,$(AGENT_TEST_PKGS)))
$(eval $(call unit_test,agent_config,tests/unit/sandbox-agent/config.c,$(O)/sandbox-agent/sweep.o,$(AGENT_TEST_PKGS)))
$(eval $(call unit_test,agent_tools,tests/unit/sandbox-agent/tools.c,$(O)/sandbox-agent/result.o $(O)/sandbox-agent/workspace.o $(O)/sandbox-agent/sweep.o $(O)/sandbox-agent/files.o $(O)/sandbox-agent/jobs.o $(O)/sandbox-agent/cancel.o,$(AGENT_TEST_PKGS)))
$(eval $(call unit_test,agent_files,tests/unit/sandbox-agent/files.c,$(O)/sandbox-agent/workspace.o,$(AGENT_TEST_PKGS)))

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
		sandbox-agent/sweep.c sandbox-agent/result.c sandbox-agent/files.c \
		sandbox-agent/jobs.c sandbox-agent/cancel.c common/fdpass.c \
		sandbox-agent/ui.c $(O)/sandbox-agent/ui_html.c
	@mkdir -p $(@D)
	clang -g -O1 -std=c11 -D_GNU_SOURCE -DVIVARIUM_VERSION='"fuzz"' \
		-Icommon -Isandbox-agent \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-o $@ tests/fuzz/agent/fuzz_mcp.c sandbox-agent/result.c \
		sandbox-agent/workspace.c sandbox-agent/files.c sandbox-agent/jobs.c \
		sandbox-agent/cancel.c sandbox-agent/sweep.c sandbox-agent/ui.c \
		$(O)/sandbox-agent/ui_html.c common/buf.c common/log.c \
		common/link.c common/base64.c common/sha256.c common/fileweb.c common/mhd.c \
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
		-o $@ tests/fuzz/link/fuzz_link.c common/link.c common/base64.c common/sha256.c \
		common/fileweb.c common/mhd.c common/guard.c common/clock.c \
		common/buf.c common/log.c common/text.c -lmicrohttpd -ljansson \
		-lm -lpthread

fuzz: test-fuzz-agent
