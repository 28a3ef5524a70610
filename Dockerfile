# The manager image: one static binary on an empty base, run as a non-root
# user. The binary is built on the host by `make docker-build` (CGO disabled,
# so it needs no libc), which keeps the image buildable with no base image to
# pull: docker, podman or buildah (chroot isolation) all build it offline.
FROM scratch
# No default: BuildKit (docker buildx) sets TARGETARCH to each platform's
# architecture, and a default here would override it (docker/buildx#510);
# make passes it (--build-arg) to builders that do not set it.
ARG TARGETARCH
COPY dist/manager-linux-${TARGETARCH} /manager
USER 65532:65532
ENTRYPOINT ["/manager"]
