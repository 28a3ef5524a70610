# operator-registry's opm image (quay.io/operator-framework/opm), as its
# release/goreleaser.opm.Dockerfile lays it out, built FROM scratch by
# hack/olm-local.sh (hack/images; no container runtime, no base image):
# /bin/opm (hack/tools.sh opm), /bin/grpc_health_probe (hack/tools.sh
# grpc-health-probe), operator-registry's /etc/nsswitch.conf, user 1001,
# entrypoint /bin/opm. Upstream starts FROM gcr.io/distroless/static:debug,
# whose busybox gives it a shell; here /bin/sh is hack/realnode/sh (a Go
# shell with cat and gzip in process), and /tmp (distroless has one) is
# made here. OLM's catalog-operator runs it (its --opmImage) as the extract
# container of bundle-unpack Jobs: `opm alpha bundle extract ...`, no shell
# needed. `operator-sdk run bundle` runs it as its default index image
# (opm:latest) with `sh -c 'opm serve ...'`, and, as its
# --decompression-image, `sh -c '... cat ${f} | gzip -d -c ...'`. The
# context is the directory hack/olm-local.sh fills (dist/opm).
FROM scratch
COPY grpc_health_probe /bin/grpc_health_probe
COPY nsswitch.conf /etc/nsswitch.conf
COPY opm /bin/opm
COPY sh /bin/sh
COPY --chmod=1777 tmp /tmp
USER 1001
ENTRYPOINT ["/bin/opm"]
