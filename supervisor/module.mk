# supervisor: vivarium-supervisor (the multi-tenant front) and vivariumctl,
# sharing the Podman client and the sandbox logic.
PKGS_supervisor := libmicrohttpd jansson libcurl

SV_LIB_SRCS	:= supervisor/conf.c supervisor/route.c supervisor/forward.c \
		   supervisor/podman.c supervisor/sandbox.c supervisor/pool.c \
		   supervisor/metrics.c
SV_LIB_OBJS	 = $(SV_LIB_SRCS:%.c=$(O)/%.o)
SV_LIBS		 = $(call PC_libs,$(PKGS_supervisor) $(COMMON_PKGS)) -lm -lpthread
PROGS		+= $(BIN)/vivarium-supervisor $(BIN)/vivariumctl

$(BIN)/vivarium-supervisor: $(O)/supervisor/main.o $(SV_LIB_OBJS) $(COMMON_OBJS)
	@mkdir -p $(@D)
	$(CC) -o $@ $^ $(ALL_LDFLAGS) $(SV_LIBS)

$(BIN)/vivariumctl: $(O)/supervisor/ctl.o $(SV_LIB_OBJS) $(COMMON_OBJS)
	@mkdir -p $(@D)
	$(CC) -o $@ $^ $(ALL_LDFLAGS) $(SV_LIBS)

# Unit tests: the Podman client against recorded replies, config and routes.
$(eval $(call unit_test,supervisor_podman,tests/unit/supervisor/podman.c,,libcurl))
$(eval $(call unit_test,supervisor_conf,tests/unit/supervisor/conf.c,,))
