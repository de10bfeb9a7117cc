# image: the sandbox image (Containerfile at the top; docs/image.md).
#   make image       build localhost/vivarium-sandbox:$(VERSION) into the host's
#                    Podman storage, only when its inputs changed (FORCE=1: always)
#   make image-update  the same, with Debian's packages as they are today
#                    (security updates); no tracked file changes
#   make lock        resolve image/packages.txt into the exact versions of
#                    image/builder.lock and image/runtime.lock
#   make test-image  build it (into the tests' private storage) when needed
#                    and test it run hardened with the MCP SDK client
# Variables: SUITE=forky (the flavour with pyarrow, tagged $(VERSION)-forky),
# DEBIAN_MIRROR, PIP_EXTRAS=1 (the optional pip layer), PIP_WHEELS=DIR (its
# wheels from a directory, no index), VIVARIUM_BASE.

IMAGE_ENV = IMAGE_VERSION=$(VERSION) $(if $(SUITE),SUITE=$(SUITE))

.PHONY: image lock image-update image-base image-for-tests image-for-tests-forky test-image

image:
	@scripts/deps podman image
	@$(IMAGE_ENV) image/image.sh $(if $(FORCE),build,ensure)

# Debian's packages as they are today, security updates included, with no
# tracked file changed (image/image.sh update; what changed is printed).
image-update:
	@scripts/deps podman image
	@$(IMAGE_ENV) image/image.sh update

image-base:
	@scripts/deps podman image
	@$(IMAGE_ENV) image/image.sh base

lock:
	@scripts/deps podman image
	@$(IMAGE_ENV) image/image.sh lock

# The same image, in the private storage of tests/lib/podman.sh: other
# suites that need the sandbox image depend on this target.
image-for-tests:
	@scripts/deps podman image
	@$(IMAGE_ENV) VIVARIUM_IMAGE_STORE=test image/image.sh ensure

# The forky flavour, which only test-image needs.
image-for-tests-forky:
	@scripts/deps podman image
	@IMAGE_VERSION=$(VERSION) SUITE=forky VIVARIUM_IMAGE_STORE=test image/image.sh ensure

# Both flavours: the default one with every test, then forky's container.
test-image: image-for-tests image-for-tests-forky $(BIN)/vivarium-agent
	@IMAGE_VERSION=$(VERSION) AGENT_BIN=$(BIN)/vivarium-agent tests/image/run.sh
	@IMAGE_VERSION=$(VERSION) SUITE=forky tests/image/run.sh

