#!/usr/bin/env bash
# hack/registry-host.sh CMD [ARGS...]: runs CMD as a host that knows the
# local registry by the names it stands in for, the way a user's host knows
# their registry: those names (LOCAL_REGISTRY_TLS_NAMES, default quay.io and
# the IMAGE_TAG_BASE host) resolve to its HTTPS address (LOCAL_REGISTRY_TLS,
# default 127.0.51.1:443: hack/local-registry.sh up, as root), and its CA
# (bin/local/registry-tls/ca.crt) is trusted beside the system's.
#
# Nothing on the host changes: CMD runs in a mount namespace of its own
# (unshare, as root) where /etc/hosts is a copy with one more line, bind
# mounted; the CA reaches it as SSL_CERT_FILE (Go reads it; so does curl's
# OpenSSL). Both end with CMD. Used for `operator-sdk run bundle` and
# `run bundle-upgrade`, which read images over HTTPS from the host, as
# README writes them.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[ $# -gt 0 ] || { echo "usage: $0 CMD [ARGS...]" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "registry-host: needs root (a mount namespace for /etc/hosts)" >&2; exit 1; }
TLS_ADDR=${LOCAL_REGISTRY_TLS-127.0.51.1:443}
[ -n "$TLS_ADDR" ] || { echo "registry-host: LOCAL_REGISTRY_TLS is empty: the local registry serves no HTTPS" >&2; exit 1; }
TAG_HOST=${IMAGE_TAG_BASE:-mydeployment.io/mydeployment-operator}
TLS_NAMES=${LOCAL_REGISTRY_TLS_NAMES:-quay.io ${TAG_HOST%%/*}}
CA=$ROOT/bin/local/registry-tls/ca.crt
[ -f "$CA" ] || { echo "registry-host: no $CA: start the registry as root (hack/local-registry.sh up)" >&2; exit 1; }
if [ "${TLS_ADDR##*:}" != 443 ]; then
  echo "registry-host: LOCAL_REGISTRY_TLS is $TLS_ADDR: an image name without a port is pulled from port 443" >&2; exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
{ cat /etc/hosts; echo "${TLS_ADDR%:*} $TLS_NAMES # hack/registry-host.sh: the local registry"; } >"$work/hosts"
system=/etc/ssl/certs/ca-certificates.crt
{ [ ! -f "$system" ] || cat "$system"; cat "$CA"; } >"$work/ca.crt"
SSL_CERT_FILE=$work/ca.crt unshare --mount --propagation private \
  sh -c 'mount --bind "$1" /etc/hosts && shift && exec "$@"' sh "$work/hosts" "$@"
