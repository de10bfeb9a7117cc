# deploy: how operators run it (README "Ways to run it").
#   make smoke       probe the running supervisor as LibreChat would
#   make test-deploy make run + make smoke against the tests' Podman
.PHONY: smoke test-deploy

smoke:
	@supervisor/smoke.sh

test-deploy:
	@scripts/deps build test podman
	@$(MAKE) --no-print-directory $(BIN)/vivarium-supervisor $(BIN)/vivariumctl
	@$(MAKE) --no-print-directory image-for-tests
	@IMAGE_VERSION=$(VERSION) BIN=$(BIN) tests/deploy/run.sh
TEST_SUITES += test-deploy
