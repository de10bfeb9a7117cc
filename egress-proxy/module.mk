# egress-proxy: vivarium-egress, the forward proxy that only reaches public
# addresses.  Internet-facing, so it links only libyaml (common/yconf.c, for
# its config file): no libmicrohttpd, jansson or GnuTLS (test-egress checks).
PKGS_egress-proxy := yaml-0.1

EGRESS_SRCS	:= $(wildcard egress-proxy/*.c)
EGRESS_OBJS	 = $(EGRESS_SRCS:%.c=$(O)/%.o)
EGRESS_LIBOBJS	 = $(filter-out $(O)/egress-proxy/main.o,$(EGRESS_OBJS))
PROGS		+= $(BIN)/vivarium-egress

$(BIN)/vivarium-egress: $(EGRESS_OBJS) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) -o $@ $^ $(ALL_LDFLAGS) $(call PC_libs,$(PKGS_egress-proxy)) -lpthread

# Unit tests include the .c they test and link the rest of the proxy.
$(eval $(call unit_test,egress_policy,tests/unit/egress-proxy/policy.c,$(filter-out $(O)/egress-proxy/policy.o,$(EGRESS_LIBOBJS)),))
$(eval $(call unit_test,egress_conf,tests/unit/egress-proxy/conf.c,$(filter-out $(O)/egress-proxy/conf.o,$(EGRESS_LIBOBJS)),))
$(eval $(call unit_test,egress_labels,tests/unit/egress-proxy/labels.c,$(filter-out $(O)/egress-proxy/labels.o,$(EGRESS_LIBOBJS)),))
# The relay without the loop: loop.o is left out, so this links only while
# relay code calls nothing of the loop's (ev.c has what it needs).
$(eval $(call unit_test,egress_relay,tests/unit/egress-proxy/relay.c,$(filter-out $(O)/egress-proxy/loop.o,$(EGRESS_LIBOBJS)),))

# ---------------------------------------------------------------- suites


.PHONY: test-egress test-egress-container test-fuzz-egress fuzz bench-egress

# Unit tests (ASan+UBSan) for the proxy, then the loopback integration test
# against a sanitizer build of the proxy.  Both builds are checked to load
# no library the proxy never calls (tests/programs/libs.sh, in test-unit).
test-egress:
	@scripts/deps build test
	@$(MAKE) --no-print-directory $(BIN)/vivarium-egress
	@$(MAKE) --no-print-directory SANITIZE=address,undefined \
		build/san/t/egress_policy build/san/t/common_http1 \
		build/san/t/egress_conf build/san/t/egress_relay \
		build/san/t/egress_labels build/san/bin/vivarium-egress
	@scripts/run-unit build/san/t/egress_policy build/san/t/common_http1 \
		build/san/t/egress_conf build/san/t/egress_relay \
		build/san/t/egress_labels
	@$(PYTHON) tests/egress/run.py build/san/bin/vivarium-egress

# The proxy as a container the supervisor makes and keeps (egress: manage)
# against the tests' private Podman and the sandbox image, then
# supervisor/run.sh (`make run`) on that service: a user's sandbox reaches
# an origin through the proxy.
test-egress-container: image-for-tests
	@scripts/deps build podman
	@$(MAKE) --no-print-directory $(BIN)/vivarium-supervisor $(BIN)/vivariumctl
	@VIVARIUM_SUPERVISOR_BIN=$(abspath $(BIN))/vivarium-supervisor \
	    tests/egress/container.sh

# The HTTP/1.1 parser (common/http1.c) under libFuzzer, clang and Debian's
# libclang-rt: one target per entry point (request, response, body), each
# with its own kept corpus in tests/fuzz/http1/.  They run here because the
# proxy is the parser's first user; the supervisor's reply reader has its
# own target (test-fuzz-supervisor).
FUZZ_HTTP1	:= request response body
$(foreach t,$(FUZZ_HTTP1),$(eval $(call fuzz_target,http1-$(t),\
	tests/fuzz/http1/fuzz_$(t).c,,tests/fuzz/http1/$(t),-max_len=8192)))

# The classifier and the host address file, against rules of its own.  The
# proxy logs each file it reads (thousands a second here): -close_fd_mask=2
# drops that, and libFuzzer still reports a crash on its own copy of stderr.
$(eval $(call fuzz_target,egress-policy,tests/fuzz/egress/fuzz_policy.c \
	egress-proxy/policy.c egress-proxy/conf.c,\
	-Iegress-proxy -lyaml -lpthread,tests/fuzz/egress/policy-corpus,\
	-max_len=4096 -close_fd_mask=2,egress-proxy/egress.h))

# The user labels file (labels.c), which the supervisor writes and the
# proxy's log lines carry.
$(eval $(call fuzz_target,egress-labels,tests/fuzz/egress/fuzz_labels.c,\
	-Iegress-proxy -lpthread,\
	tests/fuzz/egress/labels-corpus,-max_len=8192,egress-proxy/labels.c \
	egress-proxy/egress.h))

test-fuzz-egress:
	@scripts/deps build test
	@$(FUZZ_MAKE) $(FUZZ_HTTP1:%=fuzz-run-http1-%) \
		fuzz-run-egress-policy fuzz-run-egress-labels

# `make fuzz FUZZ_TIME=600` runs as long as you like.
fuzz: test-fuzz-egress

bench-egress:
	@scripts/deps build bench
	@$(MAKE) --no-print-directory $(BIN)/vivarium-egress build/bench/egress-load
	@$(PYTHON) bench/egress/run.py $(BIN)/vivarium-egress build/bench/egress-load

build/bench/egress-load: bench/egress/load.c
	@mkdir -p $(@D)
	$(CC) -O2 -g -std=c11 -D_GNU_SOURCE $(WARN) -Werror -Icommon -o $@ $<
