# python/: the runner (vivarium._runner) and vivarium_charts run inside the
# sandbox's interpreter; nothing to compile.  Their tests use Debian's
# python3 and its pandas/matplotlib/cloudpickle ($(PYTHON), /usr/bin/python3
# unless overridden, e.g. by the image's test to run them on trixie's).

.PHONY: test-python bench-namespace

test-python:
	@scripts/deps test
	PYTHONDONTWRITEBYTECODE=1 VIVARIUM_TEST_PYTHON=$(PYTHON) \
		$(PYTHON) -m unittest discover -s tests/python -t tests/python -p 'test_*.py'

# Save + restore round trip of a 1M-row DataFrame and a 10,000-key dict,
# next to a naive single-pickle baseline.  Files go to the current directory
# (the disk the workspace would be on); BENCH_DIR=... to measure elsewhere.
bench-namespace:
	@scripts/deps test
	$(PYTHON) bench/namespace/bench.py
