# sandbox-agent: vivarium-agent, the MCP server inside each sandbox.
PKGS_sandbox-agent := libmicrohttpd jansson libpng

AGENT_SRCS	:= $(wildcard sandbox-agent/*.c)
AGENT_OBJS	 = $(AGENT_SRCS:%.c=$(O)/%.o)
PROGS		+= $(BIN)/vivarium-agent

$(BIN)/vivarium-agent: $(AGENT_OBJS) $(COMMON_OBJS)
	@mkdir -p $(@D)
	$(CC) -o $@ $^ $(ALL_LDFLAGS) \
		$(call PC_libs,$(PKGS_sandbox-agent) $(COMMON_PKGS)) -lm -lpthread

# The run/spawn/PNG half keeps its tests in its own fragment.
-include sandbox-agent/run.mk

# The MCP/HTTP half's unit tests (each includes the .c it tests).
AGENT_TEST_PKGS := libmicrohttpd jansson
$(eval $(call unit_test,agent_mcp,tests/unit/sandbox-agent/mcp.c,,$(AGENT_TEST_PKGS)))
$(eval $(call unit_test,agent_workspace,tests/unit/sandbox-agent/workspace.c,,$(AGENT_TEST_PKGS)))
$(eval $(call unit_test,agent_config,tests/unit/sandbox-agent/config.c,,$(AGENT_TEST_PKGS)))
$(eval $(call unit_test,agent_tools,tests/unit/sandbox-agent/tools.c,$(O)/sandbox-agent/workspace.o,$(AGENT_TEST_PKGS)))
