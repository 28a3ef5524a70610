#!/usr/bin/env bash
# make catalog: a file-based catalog (FBC) of the current bundle in
# dist/catalog: the package, the stable channel and the bundle rendered by opm,
# then `opm validate`. CATALOG_BUNDLE_IMAGE sets the bundle's image (what a
# cluster pulls); empty keeps the bundle inline with no image, the form OLM
# installs without an unpack job (what a Docker-free local cluster needs).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
VERSION=${VERSION:?VERSION is required}
PACKAGE=mydeployment-operator
CHANNEL=${DEFAULT_CHANNEL:-stable}
OUT=dist/catalog/$PACKAGE
rm -rf dist/catalog && mkdir -p "$OUT"
{
  bin/opm init "$PACKAGE" --default-channel="$CHANNEL" --output yaml
  cat <<YAML
---
schema: olm.channel
package: $PACKAGE
name: $CHANNEL
entries:
- name: $PACKAGE.v$VERSION
  skipRange: '<$VERSION'
YAML
  bin/opm render ./bundle --output yaml | sed "s|^image: \"\"$|image: \"${CATALOG_BUNDLE_IMAGE:-}\"|"
} >"$OUT/index.yaml"
bin/opm validate dist/catalog
echo "catalog: dist/catalog ($PACKAGE v$VERSION in channel $CHANNEL)"
