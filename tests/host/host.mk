# tests/host: the durable install in whole Debian hosts (tests/host/run.sh).
#   make test-host   for Debian 13 and Debian 12 in turn, a box (systemd as
#                    PID 1, its own Podman, no network) in the tests'
#                    Podman: make install in it, enable, reboot, check; an
#                    image rebuild; make uninstall PURGE=1 CONFIRM=yes.
#                    HOST_SUITES=trixie (or bookworm) for one of them.
# The box images are built once (tests/host/box.sh) and kept; the sandbox
# image is the one the other suites use.
.PHONY: test-host
# Not in TEST_SUITES yet: the fixes of its last run are not run through it.
test-host:
	@scripts/deps podman
	@$(MAKE) --no-print-directory image-for-tests
	@IMAGE_VERSION=$(VERSION) tests/host/run.sh $(HOST_SUITES)
