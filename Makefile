# vivarium: one Makefile; each folder adds its programs and tests through its
# module.mk.  `make` builds bin/, `make test` runs every test, `make run`
# runs the service.  SANITIZE=address,undefined builds with sanitizers.

VERSION		:= 0.1.0
CC		?= cc
PKG_CONFIG	?= pkg-config
PYTHON		?= /usr/bin/python3

WARN	:= -Wall -Wextra -Wformat=2 -Wshadow -Wpointer-arith -Wcast-qual \
	   -Wstrict-prototypes -Wmissing-prototypes -Wvla -Wimplicit-fallthrough \
	   -Wundef -Wwrite-strings -Wno-unused-parameter
CFLAGS	?= -O2 -g
ALL_CFLAGS = -std=c11 -D_GNU_SOURCE -DVIVARIUM_VERSION='"$(VERSION)"' \
	   $(WARN) $(if $(DEVELOPER),-Werror) -Icommon -MMD -MP \
	   $(SAN_CFLAGS) $(CFLAGS)
LDFLAGS	?=
ALL_LDFLAGS = $(SAN_CFLAGS) $(LDFLAGS)

# Objects go to $(O); programs to $(BIN): bin/ for the normal build,
# build/san/bin/ for the sanitizer build, so both can coexist.
ifneq ($(SANITIZE),)
SAN_CFLAGS := -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
O	:= build/san
BIN	:= build/san/bin
else
O	:= build/rel
BIN	:= bin
endif

# pkg-config names; each program links only what it lists.
PC_cflags = $(shell $(PKG_CONFIG) --cflags $(1) 2>/dev/null)
PC_libs   = $(shell $(PKG_CONFIG) --libs $(1) 2>/dev/null)

PROGS		:=
UNIT_TESTS	:=

.PHONY: all
all: programs

# The shared code: every common/*.c goes into one static archive, and a
# program links the archive, so the linker takes only the modules it calls.
# A module that needs a library says so in common/module.mk; a program
# lists the libraries of the modules it uses in its PKGS_ (the link fails
# when one is missing, and an unused one would still be loaded: ldd).
COMMON_SRCS	:= $(wildcard common/*.c)
# Files compiled in (embed, below): the link pages' style and script.
COMMON_EMBEDS	:= common/page_style common/upload_script
COMMON_OBJS	 = $(COMMON_SRCS:%.c=$(O)/%.o) $(COMMON_EMBEDS:%=$(O)/gen/%.o)
COMMON_LIB	 = $(O)/common/libcommon.a
# Every library some common/ module needs (its compile flags, unit tests).
COMMON_PKGS	:=
PKGS_common	 = $(COMMON_PKGS)
AR		?= ar

$(O)/common/libcommon.a: $(COMMON_OBJS)
	@rm -f $@
	$(AR) rcs $@ $^

$(O)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(call PC_cflags,$(PKGS_$(firstword $(subst /, ,$*)))) -c -o $@ $<

# $(call embed,NAME,FILE): build/gen/NAME.c, which defines FILE's bytes as
# `const unsigned char NAME[]` (a NUL after them) and `NAME_len`, so that
# pages, styles and scripts are kept and reviewed as the files they are and
# compiled in; $(O)/gen/NAME.o is its object in each build flavour.
define embed
build/gen/$(1).c: $(2)
	@mkdir -p $$(@D)
	@{ echo '/* Generated from $(2) by the Makefile (embed). */'; \
	  echo '#include <stddef.h>'; \
	  echo 'extern const unsigned char $(notdir $(1))[];'; \
	  echo 'extern const size_t $(notdir $(1))_len;'; \
	  echo 'const unsigned char $(notdir $(1))[] = {'; \
	  od -An -v -tx1 $(2) | sed 's/ *\([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	  echo '0x00 };'; \
	  echo 'const size_t $(notdir $(1))_len = sizeof($(notdir $(1))) - 1;'; \
	} > $$@.tmp && mv $$@.tmp $$@
endef

$(O)/gen/%.o: build/gen/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

# $(call unit_test,NAME,TEST_SOURCE,EXTRA_OBJECTS,PKGS): a cmocka test binary
# built from a test source that may #include the .c it tests.
define unit_test
UNIT_TESTS += $(O)/t/$(1)
$(O)/t/$(1): $(2) $(3) $$(COMMON_LIB)
	@mkdir -p $$(@D)
	$$(CC) $$(ALL_CFLAGS) -Itests/unit $$(call PC_cflags,$(4) cmocka $$(COMMON_PKGS)) \
		-o $$@ $(2) $(3) $$(COMMON_LIB) $$(ALL_LDFLAGS) \
		$$(call PC_libs,$(4) cmocka $$(COMMON_PKGS)) -lm -lpthread
endef

# $(call fuzz_target,NAME,SOURCES,LIBS,CORPUS,RUN_FLAGS,DEPS): build/fuzz/NAME,
# a libFuzzer driver built by clang (Debian's libclang-rt) with ASan and
# UBSan from SOURCES, the driver first (DEPS: what it #includes besides
# common/*.h), linked with common/ built the same way as an archive (so
# it takes the modules it calls, as the programs do); and fuzz-run-NAME,
# which runs it for FUZZ_TIME seconds on the CORPUS folder plus what
# earlier runs found (build/fuzz/NAME-corpus), crashes kept as
# build/fuzz/NAME-*.
FUZZ_TIME	?= 30
# A suite's drivers run FUZZ_JOBS at a time, each its output in one piece
# (-O): each for FUZZ_TIME seconds, so two on two cores halve the wait.
FUZZ_JOBS	?= 2
FUZZ_MAKE	 = $(MAKE) --no-print-directory -j$(FUZZ_JOBS) -Otarget
FUZZ_CFLAGS	:= -g -O1 -std=c11 -D_GNU_SOURCE -DVIVARIUM_VERSION='"fuzz"' \
		   -Icommon -fno-sanitize-recover=all
FUZZ_COMMON	:= build/fuzz/libcommon.a

build/fuzz/common/%.o: common/%.c
	@mkdir -p $(@D)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link,address,undefined \
		$(call PC_cflags,$(COMMON_PKGS)) -MMD -MP -c -o $@ $<

build/fuzz/gen/%.o: build/gen/%.c
	@mkdir -p $(@D)
	clang $(FUZZ_CFLAGS) -c -o $@ $<

$(FUZZ_COMMON): $(COMMON_SRCS:common/%.c=build/fuzz/common/%.o) \
		$(COMMON_EMBEDS:%=build/fuzz/gen/%.o)
	@rm -f $@
	$(AR) rcs $@ $^

define fuzz_target
build/fuzz/$(1): $(2) $(6) $$(FUZZ_COMMON)
	@mkdir -p $$(@D)
	clang $$(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined \
		-o $$@ $(2) $$(FUZZ_COMMON) $(3)
.PHONY: fuzz-run-$(1)
fuzz-run-$(1): build/fuzz/$(1)
	@mkdir -p build/fuzz/$(1)-corpus
	build/fuzz/$(1) -max_total_time=$$(FUZZ_TIME) -print_final_stats=1 \
		-timeout=5 -artifact_prefix=build/fuzz/$(1)- $(5) \
		build/fuzz/$(1)-corpus $(4)
endef

include $(wildcard common/module.mk python/module.mk sandbox-agent/module.mk \
	egress-proxy/module.mk tests/k8s/k8s.mk image/module.mk \
	supervisor/module.mk deploy/module.mk tests/bench/bench.mk \
	tests/host/host.mk)

.PHONY: programs
programs: $(PROGS)

# Every suite `make test` runs, in one list, cheapest first, so that a
# broken build or unit fails in minutes: the programs alone (unit tests,
# fuzzing, the agent and the proxy on loopback, the fake Kubernetes);
# then what needs the tests' Podman and the sandbox image (built in the
# background meanwhile: images-ahead, below); then the second image
# flavour (test-image), the benchmarks' short runs, and the whole hosts
# (tests/host), the dearest, last.  Each suite is defined next to its
# code, in a module.mk or tests/*/*.mk.
TEST_SUITES	:= test-unit test-run-suites test-python test-fuzz-agent test-fuzz-png \
		   test-fuzz-egress test-fuzz-supervisor test-egress \
		   test-sweep test-warm test-valgrind-agent test-agent \
		   test-k8s test-deploy-k8s test-netclean \
		   test-egress-container test-supervisor test-files \
		   test-gvisor test-kubeplay test-rootless test-deploy \
		   test-image test-bench test-host

# What dead test containers left on the host, and its cleaner (make test
# runs the cleaner first).
.PHONY: test-netclean
test-netclean:
	@tests/lib/netclean-test.sh

# make test's runner (scripts/run-suites), on suites of its own.
.PHONY: test-run-suites
test-run-suites:
	@tests/lib/run-suites-test.sh

# ---------------------------------------------------------------- tests

.PHONY: test deps unit-tests test-unit
test: deps
	@scripts/deps podman image
	@tests/lib/netclean.sh
	@scripts/run-suites -b '$(MAKE) --no-print-directory images-ahead' \
		$(MAKE) $(TEST_SUITES)

# What make test builds in the background while its first suites, which
# need no image, run: the sandbox image, its forky flavour and the host
# boxes, in the order the suites need them.  Each suite still asks for its
# own image: the locks of image/image.sh and tests/host/box.sh make it wait
# for a build under way, or build it itself if this one failed.
.PHONY: images-ahead
images-ahead:
	@$(MAKE) --no-print-directory image-for-tests
	@$(MAKE) --no-print-directory image-for-tests-forky
	@tests/host/box.sh trixie >/dev/null
	@tests/host/box.sh bookworm >/dev/null

deps:
	@scripts/deps build test

# Unit tests always run under AddressSanitizer and UBSan; then the
# programs' command lines (options, usage, -n) under the same build.
unit-tests: $(UNIT_TESTS)

test-unit:
	@$(MAKE) --no-print-directory SANITIZE=address,undefined unit-tests \
		$(patsubst bin/%,build/san/bin/%,$(PROGS))
	@scripts/run-unit $(patsubst build/rel/%,build/san/%,$(UNIT_TESTS))
	@tests/programs/run.sh build/san/bin $(VERSION)
	@$(MAKE) --no-print-directory $(PROGS)
	@tests/programs/libs.sh $(BIN)
	@tests/programs/libs.sh build/san/bin

# ---------------------------------------------------------------- misc

.PHONY: clean
clean:
	rm -rf build bin

-include $(shell find build -name '*.d' -type f 2>/dev/null)
