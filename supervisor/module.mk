# supervisor: vivarium-supervisor (the multi-tenant front) and vivariumctl,
# sharing the backends through an archive, so that each takes only what it
# calls: vivariumctl serves no HTTP, keeps no pool and makes no file links,
# and loads no libmicrohttpd (tests/programs/libs.sh checks it).
PKGS_supervisor := libmicrohttpd jansson libcurl yaml-0.1
PKGS_ctl	:= jansson libcurl yaml-0.1

SV_LIB_SRCS	:= supervisor/conf.c supervisor/endpoint.c supervisor/forward.c \
		   supervisor/podman.c supervisor/sbenv.c supervisor/backend_podman_spec.c \
		   supervisor/backend_podman_objects.c \
		   supervisor/pool.c supervisor/metrics.c supervisor/files.c \
		   supervisor/relay.c \
		   supervisor/idmap.c supervisor/quota.c supervisor/egress.c \
		   supervisor/names.c supervisor/doctor.c \
		   supervisor/backend.c supervisor/backend_podman.c \
		   supervisor/kspec.c \
		   supervisor/kube.c supervisor/backend_kube.c
SV_LIB_OBJS	 = $(SV_LIB_SRCS:%.c=$(O)/%.o)
SV_LIB		 = $(O)/supervisor/libsupervisor.a
SV_LIBS		 = $(call PC_libs,$(PKGS_supervisor)) -lm -lpthread

$(SV_LIB): $(SV_LIB_OBJS)
	@rm -f $@
	$(AR) rcs $@ $^
PROGS		+= $(BIN)/vivarium-supervisor $(BIN)/vivariumctl

$(BIN)/vivarium-supervisor: $(O)/supervisor/main.o $(O)/supervisor/front.o \
		$(SV_LIB) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) -o $@ $^ $(ALL_LDFLAGS) $(SV_LIBS)

$(BIN)/vivariumctl: $(O)/supervisor/ctl.o $(O)/supervisor/ctl_user.o \
		$(O)/supervisor/ctl_data.o $(O)/supervisor/ctl_admin.o \
		$(O)/supervisor/render.o \
		$(O)/supervisor/tarown.o \
		$(SV_LIB) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) -o $@ $^ $(ALL_LDFLAGS) $(call PC_libs,$(PKGS_ctl)) -lm -lpthread

# Unit tests: the Podman client against recorded replies, config and endpoints;
# pool.c over a fake backend.
$(eval $(call unit_test,supervisor_podman,tests/unit/supervisor/podman.c,$(O)/supervisor/sbenv.o $(O)/supervisor/idmap.o $(O)/supervisor/quota.o,libcurl))
$(eval $(call unit_test,supervisor_conf,tests/unit/supervisor/conf.c,,))
$(eval $(call unit_test,supervisor_forward,tests/unit/supervisor/forward.c,,))
$(eval $(call unit_test,supervisor_files,tests/unit/supervisor/files.c,$(O)/supervisor/relay.o $(O)/supervisor/forward.o $(O)/supervisor/endpoint.o,))
$(eval $(call unit_test,supervisor_podman_objects,tests/unit/supervisor/backend_podman_objects.c,$(O)/supervisor/podman.o $(O)/supervisor/endpoint.o $(O)/supervisor/conf.o $(O)/supervisor/forward.o $(O)/supervisor/sbenv.o $(O)/supervisor/backend_podman_spec.o $(O)/supervisor/idmap.o $(O)/supervisor/quota.o,libcurl))
$(eval $(call unit_test,supervisor_egress,tests/unit/supervisor/egress.c,$(O)/supervisor/names.o $(O)/supervisor/podman.o $(O)/supervisor/backend_podman_objects.o $(O)/supervisor/sbenv.o $(O)/supervisor/backend_podman_spec.o $(O)/supervisor/quota.o $(O)/supervisor/endpoint.o $(O)/supervisor/conf.o $(O)/supervisor/forward.o $(O)/supervisor/idmap.o,libcurl))
$(eval $(call unit_test,supervisor_names,tests/unit/supervisor/names.c,$(O)/supervisor/endpoint.o,))
$(eval $(call unit_test,supervisor_sbenv,tests/unit/supervisor/sbenv.c,$(O)/supervisor/endpoint.o,))
$(eval $(call unit_test,supervisor_podman_spec,tests/unit/supervisor/backend_podman_spec.c,$(O)/supervisor/sbenv.o $(O)/supervisor/endpoint.o $(O)/supervisor/conf.o $(O)/supervisor/idmap.o,))
$(eval $(call unit_test,supervisor_pool,tests/unit/supervisor/pool.c,$(O)/supervisor/endpoint.o $(O)/supervisor/conf.o $(O)/supervisor/metrics.o,))
$(eval $(call unit_test,supervisor_kspec,tests/unit/supervisor/kspec.c,$(O)/supervisor/sbenv.o $(O)/supervisor/endpoint.o $(O)/supervisor/conf.o $(O)/supervisor/idmap.o,))
$(eval $(call unit_test,supervisor_kube,tests/unit/supervisor/kube.c,$(O)/supervisor/backend.o $(O)/supervisor/backend_podman.o $(O)/supervisor/doctor.o $(O)/supervisor/egress.o $(O)/supervisor/names.o $(O)/supervisor/backend_podman_objects.o $(O)/supervisor/quota.o $(O)/supervisor/kube.o $(O)/supervisor/forward.o $(O)/supervisor/podman.o $(O)/supervisor/kspec.o $(O)/supervisor/sbenv.o $(O)/supervisor/backend_podman_spec.o $(O)/supervisor/endpoint.o $(O)/supervisor/conf.o $(O)/supervisor/idmap.o,libcurl))
$(eval $(call unit_test,supervisor_tarown,tests/unit/supervisor/tarown.c,$(O)/supervisor/tarown.o,))
$(eval $(call unit_test,supervisor_render,tests/unit/supervisor/render.c,$(O)/supervisor/kspec.o $(O)/supervisor/sbenv.o $(O)/supervisor/backend_podman_spec.o $(O)/supervisor/endpoint.o $(O)/supervisor/conf.o $(O)/supervisor/podman.o $(O)/supervisor/idmap.o,libcurl))

# Integration: real Podman (a private service), the real sandbox image.
.PHONY: test-supervisor bench-supervisor run
test-supervisor:
	@scripts/deps build test podman
	@$(MAKE) --no-print-directory $(BIN)/vivarium-supervisor $(BIN)/vivariumctl
	@$(MAKE) --no-print-directory image-for-tests
	@VIVARIUM_SUPERVISOR_BIN=$(abspath $(BIN))/vivarium-supervisor \
	    VIVARIUM_CTL_BIN=$(abspath $(BIN))/vivariumctl tests/supervisor/run.sh

# A few of those with the sandboxes under gVisor (deploy/vivarium-runsc).
.PHONY: test-gvisor
test-gvisor:
	@scripts/deps build test podman gvisor
	@$(MAKE) --no-print-directory $(BIN)/vivarium-supervisor
	@$(MAKE) --no-print-directory image-for-tests
	@VIVARIUM_SUPERVISOR_BIN=$(abspath $(BIN))/vivarium-supervisor \
	    tests/gvisor/run.sh

# Download and upload links in a real browser.  "-": the image builds the
# supervisor from a context without tests/ (Containerfile).
-include tests/files/files.mk
-include tests/kubeplay/kubeplay.mk
# The supervisor as an ordinary user with rootless Podman.
-include tests/rootless/rootless.mk

bench-supervisor:
	@scripts/deps build test podman
	@$(MAKE) --no-print-directory $(BIN)/vivarium-supervisor image-for-tests
	@if [ ! -d tests/e2e/node_modules/undici ]; then \
	    (cd tests/e2e && npm ci --no-audit --no-fund --loglevel=error); fi
	@VIVARIUM_SUPERVISOR_BIN=$(abspath $(BIN))/vivarium-supervisor \
	    node bench/supervisor/bench.mjs

# runc against runsc: cold start, a warm call, import pandas.
.PHONY: bench-gvisor
bench-gvisor:
	@scripts/deps build test podman
	@$(MAKE) --no-print-directory $(BIN)/vivarium-supervisor image-for-tests
	@if [ ! -d tests/e2e/node_modules/@modelcontextprotocol/sdk ]; then \
	    (cd tests/e2e && npm ci --no-audit --no-fund --loglevel=error); fi
	@VIVARIUM_SUPERVISOR_BIN=$(abspath $(BIN))/vivarium-supervisor \
	    node bench/gvisor/bench.mjs

# make run: the service on this machine, in the foreground (supervisor/run.sh).
run:
	@scripts/deps build podman $(if $(filter runsc,$(VIVARIUM_RUNTIME)),gvisor)
	@$(MAKE) --no-print-directory $(BIN)/vivarium-supervisor $(BIN)/vivariumctl
	@$(MAKE) --no-print-directory image
	@BIN=$(BIN) supervisor/run.sh

# Under libFuzzer: the agent-reply parser, and the tar import passes on.
$(eval $(call fuzz_target,supervisor-relay,tests/fuzz/supervisor/fuzz_relay.c,\
	$(call PC_cflags,jansson),tests/fuzz/supervisor/corpus,-max_len=8192,\
	supervisor/forward.c supervisor/supervisor.h))
$(eval $(call fuzz_target,tarown,tests/fuzz/tarown/fuzz_tarown.c \
	supervisor/tarown.c,,tests/fuzz/tarown/corpus,-max_len=16384,\
	supervisor/tarown.h))

.PHONY: test-fuzz-supervisor
test-fuzz-supervisor:
	@scripts/deps build test
	@$(FUZZ_MAKE) fuzz-run-supervisor-relay fuzz-run-tarown
