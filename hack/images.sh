#!/usr/bin/env bash
# make images: every image of the project built with no container runtime
# and no base image (hack/images: the FROM-scratch Dockerfiles run in Go,
# reproducibly), pushed to the local registry (make local-registry) under
# the names a cluster pulls them by, each without its host (docs/images.md).
#
#   manager    IMG            Dockerfile, the static manager for GOARCH
#   bundle     BUNDLE_IMG     bundle.Dockerfile with bundle/
#   bundles of the releases in catalog/releases/commits, each from its
#              commit's bundle/ and bundle.Dockerfile (git archive: no
#              network, but the clone must have the commit), named as the
#              release's catalog entry names it
#   catalog    CATALOG_IMG    catalog.Dockerfile on dist/catalog (make catalog)
#              in its serving form: opm serve /configs, as an OLM v0
#              CatalogSource runs it; OLM v1 reads /configs
#   scorecard  SCORECARD_IMG  scorecard.Dockerfile, test/scorecard's binary
#   testweb    TESTWEB_IMG_BASE:v1 and :v2, test/testweb/Dockerfile
#
# Then each image's name and digest, also written to bin/local/images.txt.
# The binaries go to dist/, named as the Dockerfiles copy them.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
: "${VERSION:?}" "${IMG:?}" "${BUNDLE_IMG:?}" "${CATALOG_IMG:?}" "${SCORECARD_IMG:?}" "${TESTWEB_IMG_BASE:?}" "${LOCAL_REGISTRY:?}"
ARCH=${GOARCH:-$(go env GOARCH)}
PACKAGE=mydeployment-operator
OUT=bin/local
export CGO_ENABLED=0 GOOS=linux
# No VCS stamp in the binaries: an untracked file would otherwise mark them
# modified and change the digests of the same sources.
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-buildvcs=false"

# Static binaries, as the Dockerfiles copy them (-trimpath: the same
# sources give the same bytes wherever the checkout is).
hack/manager-binaries.sh "linux/$ARCH" >/dev/null
GOARCH=$ARCH go build -trimpath -ldflags="-s -w" -o "dist/scorecard-tests-linux-$ARCH" ./test/scorecard/cmd
for v in v1 v2; do
  GOARCH=$ARCH go build -trimpath -ldflags="-s -w -X main.version=$v" -o "dist/testweb-$v-linux-$ARCH" ./test/testweb
done

# opm and grpc_health_probe (hack/tools.sh) go into the catalog image as
# built: they must be static linux binaries of ARCH.
for b in bin/opm bin/grpc_health_probe; do
  info=$(go version -m "$b")
  for want in GOOS=linux "GOARCH=$ARCH" CGO_ENABLED=0; do
    grep -q "build[[:space:]]*$want\$" <<<"$info" || { echo "images: $b is not a $want build (hack/tools.sh builds for this host)" >&2; exit 1; }
  done
done

a="arg=TARGETARCH=$ARCH"
specs=(
  "$IMG,file=Dockerfile,$a"
  "$BUNDLE_IMG,file=bundle.Dockerfile"
)

# The released bundles, each from its own commit.
while read -r v commit; do
  [ -n "$v" ] && [ "$v" != "$VERSION" ] || continue
  record=catalog/releases/$PACKAGE.v$v.yaml
  name=$(sed -n 's/^image: "\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$record" | head -1)
  [ -n "$name" ] || { echo "images: $record names no bundle image" >&2; exit 1; }
  if ! git cat-file -e "$commit^{commit}" 2>/dev/null; then
    echo "images: commit $commit of release $v (catalog/releases/commits) is not in this clone: fetch the history (git fetch --unshallow)" >&2
    exit 1
  fi
  dir=$OUT/releases/$v
  rm -rf "$dir" && mkdir -p "$dir"
  git archive "$commit" bundle bundle.Dockerfile | tar -x -C "$dir"
  specs+=("$name,file=$dir/bundle.Dockerfile,context=$dir")
done <catalog/releases/commits

specs+=(
  "$CATALOG_IMG,file=catalog.Dockerfile,opm=bin/opm,grpc-health-probe=bin/grpc_health_probe"
  "$SCORECARD_IMG,file=scorecard.Dockerfile,$a"
  "$TESTWEB_IMG_BASE:v1,file=test/testweb/Dockerfile,$a,arg=VERSION=v1"
  "$TESTWEB_IMG_BASE:v2,file=test/testweb/Dockerfile,$a,arg=VERSION=v2"
)
go run ./hack/images -registry "$LOCAL_REGISTRY" -arch "$ARCH" -out "$OUT/images.txt" "${specs[@]}"
echo "images: $OUT/images.txt; pull them through a mirror of their hosts at http://$LOCAL_REGISTRY (docs/images.md)"
