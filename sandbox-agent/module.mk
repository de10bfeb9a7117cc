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
