# tests/host: the durable install in whole Debian hosts (tests/host/run.sh).
#   make test-host   for Debian 13 and Debian 12 side by side, a box (systemd as
#                    PID 1, its own Podman, no network) in the tests'
#                    Podman: make install in it, enable, reboot, check; an
#                    image rebuild; make uninstall PURGE=1 CONFIRM=yes.
#                    HOST_SUITES=trixie (or bookworm) for one of them.
# The box images are built once (tests/host/box.sh) and kept; the sandbox
# image is the one the other suites use.  Last in make test: the most
# expensive suite (two box images and two hosts, side by side).
.PHONY: test-host
test-host:
	@scripts/deps podman
	@$(MAKE) --no-print-directory image-for-tests
	@IMAGE_VERSION=$(VERSION) tests/host/run.sh $(HOST_SUITES)
