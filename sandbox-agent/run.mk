# sandbox-agent/run.mk: tests of the run half of vivarium-agent (spawning,
# output tails, workspace diffs, PNG thumbnails, run_python end to end).
# Included by sandbox-agent/module.mk.

$(eval $(call unit_test,common_spawn,tests/unit/common/spawn.c,,))
$(eval $(call unit_test,agent_quant,tests/unit/sandbox-agent/quant.c,,))
$(eval $(call unit_test,agent_png,tests/unit/sandbox-agent/png.c,$(O)/sandbox-agent/quant.o,libpng))
$(eval $(call unit_test,agent_wsdiff,tests/unit/sandbox-agent/wsdiff.c,,))
$(eval $(call unit_test,agent_run_output,tests/unit/sandbox-agent/run_output.c,$(O)/sandbox-agent/result.o $(O)/sandbox-agent/images.o $(O)/sandbox-agent/wsdiff.o $(O)/sandbox-agent/workspace.o $(O)/sandbox-agent/quant.o $(O)/sandbox-agent/warm.o,jansson libpng))
$(eval $(call unit_test,agent_run,tests/unit/sandbox-agent/run.c,$(O)/sandbox-agent/result.o $(O)/sandbox-agent/images.o $(O)/sandbox-agent/wsdiff.o $(O)/sandbox-agent/workspace.o $(O)/sandbox-agent/quant.o $(O)/sandbox-agent/warm.o,jansson libpng))

# The tests of spawning, tails, images and run_python under valgrind (a build
# without sanitizers: the two do not mix).  The child side of a fork is not
# checked: it only calls async-signal-safe functions before exec.
VALGRIND_RUN := valgrind -q --error-exitcode=9 --leak-check=full \
	--errors-for-leak-kinds=definite,indirect --child-silent-after-fork=yes

.PHONY: test-valgrind-agent
test-valgrind-agent:
	@$(MAKE) --no-print-directory SANITIZE= build/rel/t/common_spawn \
		build/rel/t/agent_quant build/rel/t/agent_png \
		build/rel/t/agent_wsdiff build/rel/t/agent_run_output \
		build/rel/t/agent_run
	SPAWN_TEST_MB=64 $(VALGRIND_RUN) build/rel/t/common_spawn
	$(VALGRIND_RUN) build/rel/t/agent_quant
	$(VALGRIND_RUN) build/rel/t/agent_png
	$(VALGRIND_RUN) build/rel/t/agent_wsdiff
	$(VALGRIND_RUN) build/rel/t/agent_run_output
	RUN_TEST_MB=64 $(VALGRIND_RUN) build/rel/t/agent_run


# The thumbnailer under libFuzzer (clang, Debian's libclang-rt), seeded
# with the fixtures.  `make fuzz FUZZ_TIME=600` runs it longer.
$(eval $(call fuzz_target,agent-png,tests/fuzz/png/fuzz_thumb.c \
	sandbox-agent/images.c sandbox-agent/quant.c,\
	-Isandbox-agent $(call PC_cflags,libpng) $(call PC_libs,libpng) -lm,\
	tests/data/png,-max_len=65536 -rss_limit_mb=1024 -timeout=10,\
	sandbox-agent/images.h sandbox-agent/quant.h))

.PHONY: test-fuzz-png fuzz
test-fuzz-png:
	@scripts/deps build test
	@$(MAKE) --no-print-directory fuzz-run-agent-png

fuzz: test-fuzz-png

# Warm runs: unit and e2e tests, bench-run.
include sandbox-agent/warm.mk

# bench-images: bytes and time per returned PNG before (averaged to
# max_side, truecolour, as it was) and after (palette when faithful, then
# smaller until the per-image budget fits), on the same figures in one run.
BENCH_IMAGES := build/bench/images
BENCH_FIGURES := chart.png scatter3000.png noise1.png noise2.png noise3.png \
	noise4.png gradient.png
# VIVARIUM_BENCH_SHORT=1 (make test-bench): a palette figure and a
# truecolour one, one round each.
ifeq ($(VIVARIUM_BENCH_SHORT),1)
BENCH_FIGURES := chart.png gradient.png
endif

$(BENCH_IMAGES): bench/images/bench.c sandbox-agent/images.c \
		sandbox-agent/images.h sandbox-agent/quant.c sandbox-agent/quant.h \
		common/buf.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Isandbox-agent $(call PC_cflags,libpng) -o $@ \
		bench/images/bench.c sandbox-agent/images.c sandbox-agent/quant.c \
		common/buf.c $(ALL_LDFLAGS) $(call PC_libs,libpng) -lm

.PHONY: bench-images
bench-images: $(BENCH_IMAGES)
	@scripts/deps build test
	@d=$$(mktemp -d) && trap 'rm -rf "$$d"' EXIT && \
	PYTHONPATH=python MPLBACKEND=Agg $(PYTHON) bench/images/figures.py "$$d" \
		$(BENCH_FIGURES) >/dev/null && \
	$(BENCH_IMAGES) "$$d" 1280 25600 $(BENCH_FIGURES)
