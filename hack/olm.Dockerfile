# OLM v0's image (quay.io/operator-framework/olm), as operator-lifecycle-manager
# v0.46.0's Dockerfile lays it out, built FROM scratch by hack/olm-local.sh
# (hack/images; no container runtime, no base image) from binaries built from
# OLM's module source (hack/tools.sh olm). Upstream starts FROM
# gcr.io/distroless/static:debug and links /bin/cp to busybox's cp, which
# bundle-unpack Jobs run (/bin/cp -Rv /bin/cpb /util/cpb); here /bin/cp is
# hack/realnode/cp, and /tmp (distroless has one) is made here. No shell.
# The context is the directory hack/olm-local.sh fills (dist/olm).
FROM scratch
LABEL stage=olm
WORKDIR /
COPY cp /bin/cp
COPY olm /bin/olm
COPY catalog /bin/catalog
COPY package-server /bin/package-server
COPY copy-content /bin/copy-content
COPY cpb /bin/cpb
COPY --chmod=1777 tmp /tmp
EXPOSE 8080
EXPOSE 5443
USER 1001
ENTRYPOINT ["/bin/olm"]
