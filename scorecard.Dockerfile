# The image of the project's own scorecard tests (test/scorecard), named in
# bundle/tests/scorecard/config.yaml. One static binary on an empty base,
# built on the host by `make scorecard-image-build` like the manager's. The
# scorecard pod runs the config's entrypoint (binary name, test name), found
# through PATH, with the bundle mounted at /bundle.
FROM scratch
# No default: BuildKit (docker buildx) sets TARGETARCH to each platform's
# architecture, and a default here would override it (docker/buildx#510);
# make passes it (--build-arg) to builders that do not set it.
ARG TARGETARCH
COPY dist/scorecard-tests-linux-${TARGETARCH} /usr/local/bin/mydeployment-scorecard-tests
ENV PATH=/usr/local/bin
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/mydeployment-scorecard-tests"]
