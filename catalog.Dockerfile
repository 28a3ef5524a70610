# The file-based catalog, as configs only. opm's base image (which would add
# `opm serve` as the entrypoint) cannot be pulled where this is built, so the
# image is FROM scratch; on a machine that can pull it, `opm generate
# dockerfile dist/catalog` writes the serving variant. Here the catalog is
# served by a host `opm serve dist/catalog`; docs/install.md shows both ways.
FROM scratch
COPY dist/catalog /configs
LABEL operators.operatorframework.io.index.configs.v1=/configs
