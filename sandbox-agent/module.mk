# sandbox-agent: vivarium-agent, the MCP server inside each sandbox.  Its
# settings are environment variables only, so no libyaml.
PKGS_sandbox-agent := libmicrohttpd jansson libpng

# The MCP Apps view (ui.c) is a real HTML file, compiled in (embed).
$(eval $(call embed,sandbox-agent/ui_workspace_html,sandbox-agent/ui/workspace.html))
UI_HTML_OBJ	 = $(O)/gen/sandbox-agent/ui_workspace_html.o

# Each tool's definition is a JSON file (tools.c), compiled in as tooldef_NAME.
TOOL_JSON	:= $(wildcard sandbox-agent/tools/*.json)
TOOL_GEN	:= $(TOOL_JSON:sandbox-agent/tools/%.json=build/gen/sandbox-agent/tooldef_%.c)
TOOL_OBJS	 = $(TOOL_GEN:build/gen/%.c=$(O)/gen/%.o)
$(foreach f,$(TOOL_JSON),$(eval $(call embed,sandbox-agent/tooldef_$(basename $(notdir $(f))),$(f))))

AGENT_SRCS	:= $(wildcard sandbox-agent/*.c)
AGENT_OBJS	 = $(AGENT_SRCS:%.c=$(O)/%.o) $(UI_HTML_OBJ) $(TOOL_OBJS)
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
$(eval $(call unit_test,agent_mcp,tests/unit/sandbox-agent/mcp.c,$(O)/sandbox-agent/ui.o $(UI_HTML_OBJ) $(O)/gen/sandbox-agent/tooldef_workspace_view.o,$(AGENT_TEST_PKGS)))
$(eval $(call unit_test,agent_workspace,tests/unit/sandbox-agent/workspace.c,,$(AGENT_TEST_PKGS)))
$(eval $(call unit_test,agent_config,tests/unit/sandbox-agent/config.c,$(O)/sandbox-agent/sweep.o,$(AGENT_TEST_PKGS)))
$(eval $(call unit_test,agent_tools,tests/unit/sandbox-agent/tools.c,$(O)/sandbox-agent/result.o $(O)/sandbox-agent/workspace.o $(O)/sandbox-agent/sweep.o $(O)/sandbox-agent/files.o $(O)/sandbox-agent/elicit.o $(O)/sandbox-agent/jobs.o $(O)/sandbox-agent/cancel.o $(TOOL_OBJS),$(AGENT_TEST_PKGS)))
$(eval $(call unit_test,agent_files,tests/unit/sandbox-agent/files.c,$(O)/sandbox-agent/workspace.o $(O)/sandbox-agent/elicit.o,$(AGENT_TEST_PKGS)))

# ---------------------------------------------------------------- e2e
# The MCP SDK client tests (tests/e2e, node's test runner) against the real
# agent on TCP and on a unix socket.  Other suites may depend on
# $(E2E_NODE_MODULES) to get the pinned client installed.

.PHONY: test-agent
test-agent: $(BIN)/vivarium-agent $(E2E_NODE_MODULES)
	cd tests/e2e && VIVARIUM_AGENT_BIN=$(CURDIR)/$(BIN)/vivarium-agent \
		VIVARIUM_PYTHON=$(PYTHON) VIVARIUM_PYTHONPATH=$(CURDIR)/python \
		node --test --test-concurrency=1 agent.test.mjs badinput.test.mjs \
		images.test.mjs \
		namespace.test.mjs longrun.test.mjs files_full.test.mjs files_fd.test.mjs \
		secret.test.mjs notebook.test.mjs linkinput.test.mjs limits.test.mjs \
		stateless.test.mjs conformance.test.mjs

# Leftover processes killed after runs (VIVARIUM_SWEEP): unit tests, and the
# real agent in a PID namespace of its own.
include sandbox-agent/sweep.mk

# ---------------------------------------------------------------- fuzz
# Request handling (the driver includes mcp.c and tools.c), link tokens
# and upload names, what a browser sends first, and the upload form's
# reader; under libFuzzer.
AGENT_FUZZ_LIBS	:= -Isandbox-agent -lmicrohttpd -ljansson -lm -lpthread
$(eval $(call fuzz_target,agent-mcp,tests/fuzz/agent/fuzz_mcp.c \
	sandbox-agent/result.c sandbox-agent/workspace.c sandbox-agent/files.c \
	sandbox-agent/jobs.c sandbox-agent/cancel.c sandbox-agent/sweep.c \
	sandbox-agent/ui.c sandbox-agent/elicit.c \
	build/gen/sandbox-agent/ui_workspace_html.c $(TOOL_GEN),\
	$(AGENT_FUZZ_LIBS),tests/fuzz/agent/corpus,\
	-max_len=4096 -dict=tests/fuzz/agent/json.dict,\
	sandbox-agent/mcp.c sandbox-agent/tools.c sandbox-agent/agent.h))
$(eval $(call fuzz_target,link,tests/fuzz/link/fuzz_link.c,\
	-lmicrohttpd -ljansson -lm -lpthread,tests/fuzz/link/corpus,\
	-max_len=8192))
$(eval $(call fuzz_target,multipart,tests/fuzz/multipart/fuzz_multipart.c,\
	-lmicrohttpd -ljansson -lm -lpthread,tests/fuzz/multipart/corpus,\
	-max_len=8192))

.PHONY: test-fuzz-agent
test-fuzz-agent:
	@scripts/deps build test
	@$(FUZZ_MAKE) fuzz-run-agent-mcp fuzz-run-link fuzz-run-multipart

fuzz: test-fuzz-agent
