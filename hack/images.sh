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
#              release's catalog entry names it, and the manager image that
#              bundle's CSV names (its relatedImages), from the commit's
#              sources and Dockerfile (the static binary cached in
#              bin/release-manager/<commit>/): OLM runs it on a real node
#   catalog    CATALOG_IMG    catalog.Dockerfile on dist/catalog (make catalog)
#              in its serving form: opm serve /configs, as an OLM v0
#              CatalogSource runs it; OLM v1 reads /configs
#   scorecard  SCORECARD_IMG  scorecard.Dockerfile, test/scorecard's binary
#   operator-sdk's scorecard-test, as bundle/tests/scorecard/config.yaml
#              names it (quay.io/operator-framework/scorecard-test:TAG):
#              hack/scorecard-test.Dockerfile on bin/scorecard-test
#              (hack/tools.sh scorecard-test), for operator-sdk scorecard
#              on a real node
#   testweb    TESTWEB_IMG_BASE:v1 and :v2, test/testweb/Dockerfile
#   testsh     TESTSH_IMG, hack/realnode/sh/Dockerfile: a /bin/sh for the
#              tests' Jobs (the real-node suite's hooks)
#
#   the manager the CSV names, linux/amd64 (CSV_ARCH), by digest only, when
#              GOARCH is another (on amd64 it is the manager above)
#
# Then each image's name and digest, also written to bin/local/images.txt.
# The binaries go to dist/, named as the Dockerfiles copy them.
#
#   hack/images.sh digest IMG   builds nothing but the manager, pushes
#     nothing, and prints IMG's repository at the digest of the linux/amd64
#     manager image make images pushes (mydeployment.io/mydeployment-operator@sha256:...):
#     how make bundle names the manager in the CSV. Needs no registry.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# The architecture of the manager the CSV names by digest (docs/images.md:
# one architecture until a release names an image index of PLATFORMS).
CSV_ARCH=amd64
export CGO_ENABLED=0 GOOS=linux
# No VCS stamp in the binaries: an untracked file would otherwise mark them
# modified and change the digests of the same sources.
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-buildvcs=false"

# manager_spec NAME ARCH: builds the manager's static binary for linux/ARCH
# (hack/manager-binaries.sh: -trimpath, so the same sources give the same
# bytes wherever the checkout is) and prints the hack/images spec of its
# image as Dockerfile makes it, for ARCH whatever -arch says. make images
# and the CSV's digest both come from here: the image the CSV names is the
# one pushed.
manager_spec() {
  hack/manager-binaries.sh "linux/$2" >/dev/null
  echo "$1,file=Dockerfile,arg=TARGETARCH=$2,arch=$2"
}

# images ARGS: hack/images, itself built for this host whatever GOOS and
# GOARCH the binaries are for.
images() { GOOS=$(go env GOHOSTOS) GOARCH=$(go env GOHOSTARCH) go run ./hack/images "$@"; }

if [ "${1:-}" = digest ]; then
  img=${2:?usage: hack/images.sh digest IMG}
  spec=$(manager_spec "$img" "$CSV_ARCH")
  images -digest-only "$spec"
  exit
fi

: "${VERSION:?}" "${IMG:?}" "${BUNDLE_IMG:?}" "${CATALOG_IMG:?}" "${SCORECARD_IMG:?}" "${TESTWEB_IMG_BASE:?}" "${TESTSH_IMG:?}" "${LOCAL_REGISTRY:?}"
ARCH=${GOARCH:-$(go env GOARCH)}
PACKAGE=mydeployment-operator
OUT=bin/local

# Static binaries, as the Dockerfiles copy them.
manager=$(manager_spec "$IMG" "$ARCH")
GOARCH=$ARCH go build -trimpath -ldflags="-s -w" -o "dist/scorecard-tests-linux-$ARCH" ./test/scorecard/cmd
for v in v1 v2; do
  GOARCH=$ARCH go build -trimpath -ldflags="-s -w -X main.version=$v" -o "dist/testweb-$v-linux-$ARCH" ./test/testweb
done
mkdir -p dist/testsh
GOARCH=$ARCH go build -trimpath -ldflags="-s -w" -o dist/testsh/sh ./hack/realnode/sh

# opm and grpc_health_probe (hack/tools.sh) go into the catalog image as
# built, scorecard-test into its image: they must be static linux binaries
# of ARCH.
for b in bin/opm bin/grpc_health_probe bin/scorecard-test; do
  info=$(go version -m "$b")
  for want in GOOS=linux "GOARCH=$ARCH" CGO_ENABLED=0; do
    grep -q "build[[:space:]]*$want\$" <<<"$info" || { echo "images: $b is not a $want build (hack/tools.sh builds for this host)" >&2; exit 1; }
  done
done

a="arg=TARGETARCH=$ARCH"
specs=(
  "$manager"
  "$BUNDLE_IMG,file=bundle.Dockerfile"
)
if [ "$ARCH" != "$CSV_ARCH" ]; then
  csv_manager=$(manager_spec "$IMG" "$CSV_ARCH")
  specs+=("$csv_manager,push=digest")
fi

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
  # Its manager, as the release's `make docker-build` built it: the static
  # binary at dist/manager-linux-ARCH of the commit's tree, its Dockerfile.
  mgr=$(sed -n 's/^- image: "\{0,1\}\([^"@]*\)"\{0,1\}$/\1/p' "$record" | grep -v -- '-bundle:' | head -1)
  [ -n "$mgr" ] || { echo "images: $record names no manager image (relatedImages)" >&2; exit 1; }
  cached=bin/release-manager/$commit/manager-linux-$ARCH
  if [ ! -x "$cached" ]; then
    src=$dir/src && mkdir -p "$src" "$(dirname "$cached")"
    git archive "$commit" | tar -x -C "$src"
    (cd "$src" && GOARCH=$ARCH go build -trimpath -ldflags="-s -w" -o "$ROOT/$cached.tmp" ./cmd)
    mv "$cached.tmp" "$cached"
    rm -rf "$src"
  fi
  mkdir -p "$dir/manager/dist" && cp "$cached" "$dir/manager/dist/manager-linux-$ARCH"
  git show "$commit:Dockerfile" >"$dir/manager/Dockerfile"
  specs+=("$mgr,file=$dir/manager/Dockerfile,context=$dir/manager,$a")
done <catalog/releases/commits

scorecard_test=$(sed -n 's|^ *image: \(quay.io/operator-framework/scorecard-test:.*\)$|\1|p' bundle/tests/scorecard/config.yaml | sort -u)
[ "$(wc -l <<<"$scorecard_test")" = 1 ] && [ -n "$scorecard_test" ] || { echo "images: bundle/tests/scorecard/config.yaml names no one scorecard-test image: '$scorecard_test'" >&2; exit 1; }
rm -rf dist/scorecard-test && mkdir -p dist/scorecard-test && cp -L bin/scorecard-test dist/scorecard-test/scorecard-test

specs+=(
  "$scorecard_test,file=hack/scorecard-test.Dockerfile,context=dist/scorecard-test"
  "$CATALOG_IMG,file=catalog.Dockerfile,opm=bin/opm,grpc-health-probe=bin/grpc_health_probe"
  "$SCORECARD_IMG,file=scorecard.Dockerfile,$a"
  "$TESTWEB_IMG_BASE:v1,file=test/testweb/Dockerfile,$a,arg=VERSION=v1"
  "$TESTWEB_IMG_BASE:v2,file=test/testweb/Dockerfile,$a,arg=VERSION=v2"
  "$TESTSH_IMG,file=hack/realnode/sh/Dockerfile,context=dist/testsh"
)
images -registry "$LOCAL_REGISTRY" -arch "$ARCH" -out "$OUT/images.txt" "${specs[@]}"

# The CSV names the manager by digest (make bundle): that image is pushed
# only if bundle/ was made from these sources.
csv=bundle/manifests/$PACKAGE.clusterserviceversion.yaml
named=$(sed -n 's/^    containerImage: //p' "$csv")
if [[ $named == *@sha256:* ]] && ! grep -q " ${named#*@}\$" "$OUT/images.txt"; then
  echo "images: warning: $csv names the manager $named, which these sources do not build:" >&2
  echo "images: warning: run make bundle (the CSV names the manager by digest, so any change to its sources changes it), then make images" >&2
fi
echo "images: $OUT/images.txt; pull them through a mirror of their hosts at http://$LOCAL_REGISTRY (docs/images.md)"
