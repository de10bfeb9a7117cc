# sandbox-agent/run.mk: tests of the run half of vivarium-agent (spawning,
# output tails, PNG snapshots and thumbnails, run_python end to end).
# Included by sandbox-agent/module.mk.

$(eval $(call unit_test,common_spawn,tests/unit/common/spawn.c,,))
$(eval $(call unit_test,agent_png,tests/unit/sandbox-agent/png.c,,libpng))
