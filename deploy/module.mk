# deploy: how operators run it (README "Ways to run it").
#   make smoke       probe the running supervisor as LibreChat would
#   make install     programs, runner, templates, examples, units, config
#   make uninstall   all of it but the config and the token (PURGE=1: those too)
#                    PREFIX, DESTDIR, BINDIR, LIBDIR, DATADIR, UNITDIR,
#                    CONFDIR, STATEDIR: deploy/install.sh says where
#   make test-deploy make run + make smoke, make install + the installed
#                    supervisor, against the tests' Podman
.PHONY: smoke install uninstall test-deploy

install: programs
	@VERSION=$(VERSION) BIN=$(BIN) deploy/install.sh install

uninstall:
	@VERSION=$(VERSION) BIN=$(BIN) deploy/install.sh uninstall

smoke:
	@supervisor/smoke.sh

test-deploy:
	@scripts/deps build test podman
	@$(MAKE) --no-print-directory $(BIN)/vivarium-supervisor $(BIN)/vivariumctl
	@$(MAKE) --no-print-directory image-for-tests
	@IMAGE_VERSION=$(VERSION) BIN=$(BIN) tests/deploy/run.sh
TEST_SUITES += test-deploy
