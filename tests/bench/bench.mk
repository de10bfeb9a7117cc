# tests/bench: every benchmark once in its short mode (tests/bench/run.sh),
# so that make test sees a benchmark that breaks.  Included after the
# modules whose suites build the sandbox image: bench-supervisor and
# bench-files reuse it.
.PHONY: test-bench
test-bench:
	@tests/bench/run.sh "$(MAKE)"
