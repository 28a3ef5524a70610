#!/usr/bin/env bash
# make olm-local: OLM v0 as real pods on the local cluster's real node real-0,
# from OLM's own module (the version hack/tools/olm/go.mod pins):
#
#   1. its image, quay.io/operator-framework/olm:VERSION, built FROM scratch
#      by hack/images from hack/olm.Dockerfile (OLM's Dockerfile's layout:
#      /bin/olm, /bin/catalog, /bin/package-server, /bin/copy-content,
#      /bin/cpb, /bin/cp, user 1001) with the static binaries of
#      `hack/tools.sh olm` and hack/realnode/cp, and the opm image its
#      catalog-operator runs in bundle-unpack Jobs (--opmImage: `opm alpha
#      bundle extract`), quay.io/operator-framework/opm:OPM_VERSION (the
#      version hack/tools/opm/go.mod pins; also tagged latest, the index
#      image `operator-sdk run bundle` runs by default) from
#      hack/opm.Dockerfile with hack/realnode/sh as its /bin/sh, and
#      hack/realnode/sh alone as the init image of run bundle's registry
#      pods, registry.access.redhat.com/ubi9/ubi:9.8 (operator-sdk's
#      default, read from its module; a stand-in: ubi9 cannot be built
#      here), all pushed to LOCAL_REGISTRY, which real-0's containerd
#      mirrors quay.io and registry.access.redhat.com to; their digests go
#      to bin/local/olm-images.txt;
#   2. OLM's manifests from the module, rendered as its release renders the
#      crds.yaml and olm.yaml it publishes (helm template of deploy/chart with
#      deploy/upstream/values.yaml), applied server-side, with OLM's image
#      (upstream: its own build's digest, which cannot be reproduced here) set
#      to NAME:VERSION@DIGEST of ours (the --util-image of bundle-unpack Jobs
#      too), --opmImage to our opm image by digest (upstream: its release's
#      opm by digest; the chart's default is opm:latest), and the
#      operatorhubio-catalog CatalogSource left out (it names
#      quay.io/operatorhubio/catalog, which nothing here serves);
#   3. waits for olm-operator and catalog-operator, the packageserver CSV
#      Succeeded, its pods Ready, the aggregated API
#      packages.operators.coreos.com/v1 answering and every object of
#      crds.yaml and olm.yaml there (what `operator-sdk olm status` checks,
#      which cannot run offline for this version: docs/testing.md).
#
# Idempotent: run again, it rebuilds the images (same sources, same digests)
# and re-applies. KUBECONFIG must name the local cluster, started with
# REAL_NODES=1 (the Makefile target starts it); LOCAL_REGISTRY (default
# 127.0.0.1:5001) must answer. The rendered manifests stay in bin/local/olm.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
: "${KUBECONFIG:?KUBECONFIG must name the local cluster}"
export KUBECONFIG
LOCAL_REGISTRY=${LOCAL_REGISTRY:-127.0.0.1:5001}
TIMEOUT=${OLM_TIMEOUT:-5m}
ARCH=${GOARCH:-$(go env GOARCH)}
K=bin/kubectl
M=github.com/operator-framework/operator-lifecycle-manager
V=$(awk -v m="$M" '$1==m && $2 ~ /^v[0-9]/ {print $2; exit}' hack/tools/olm/go.mod)
[ -n "$V" ] || { echo "olm-local: no pin for $M in hack/tools/olm/go.mod" >&2; exit 1; }
MODDIR=$(cd hack/tools/olm && GOFLAGS=-mod=mod go list -m -f '{{.Dir}}' "$M")
IMAGE=quay.io/operator-framework/olm:$V
CTX=dist/olm
R=github.com/operator-framework/operator-registry
RV=$(awk -v m="$R" '$1==m && $2 ~ /^v[0-9]/ {print $2; exit}' hack/tools/opm/go.mod)
[ -n "$RV" ] || { echo "olm-local: no pin for $R in hack/tools/opm/go.mod" >&2; exit 1; }
REGDIR=$(cd hack/tools/opm && GOFLAGS=-mod=mod go list -m -f '{{.Dir}}' "$R")
OPM_IMAGE=quay.io/operator-framework/opm:$RV
OPMCTX=dist/opm
SDK=github.com/operator-framework/operator-sdk
SDKDIR=$(cd hack/tools/operator-sdk && GOFLAGS=-mod=mod go list -m -f '{{.Dir}}' "$SDK")
INIT_IMAGE=$(sed -n 's/^[[:space:]]*DefaultInitImage = "\(.*\)"$/\1/p' "$SDKDIR/internal/olm/fbcutil/util.go")
[ -n "$INIT_IMAGE" ] || { echo "olm-local: no DefaultInitImage in $SDK's internal/olm/fbcutil/util.go" >&2; exit 1; }
SHCTX=dist/realnode-sh
OUT=bin/local/olm
start=$SECONDS
say() { printf '[%3ds] olm-local: %s\n' $((SECONDS - start)) "$*"; }

# 1. The images. OLM's binaries as hack/tools.sh built them (static, linux,
# ARCH: they go into the image as they are), renamed as OLM's Dockerfile
# copies them; cp built here the same way. opm and grpc_health_probe as
# hack/tools.sh built them, for the opm image.
rm -rf "$CTX" "$OPMCTX" "$SHCTX" && mkdir -p "$CTX/tmp" "$OPMCTX/tmp" "$SHCTX" "$OUT"
static() {
  local b=$1 info want
  [ -x "$b" ] || { echo "olm-local: $b missing: hack/tools.sh builds it" >&2; exit 1; }
  info=$(go version -m "$b")
  for want in GOOS=linux "GOARCH=$ARCH" CGO_ENABLED=0; do
    grep -q "build[[:space:]]*$want\$" <<<"$info" || { echo "olm-local: $b is not a $want build" >&2; exit 1; }
  done
}
for pair in olm:olm catalog-operator:catalog package-server:package-server copy-content:copy-content cpb:cpb; do
  static "bin/${pair%%:*}"
  cp -L "bin/${pair%%:*}" "$CTX/${pair##*:}"
done
CGO_ENABLED=0 GOOS=linux GOARCH=$ARCH go build -buildvcs=false -trimpath -ldflags="-s -w" -o "$CTX/cp" ./hack/realnode/cp
for b in opm grpc_health_probe; do
  static "bin/$b"
  cp -L "bin/$b" "$OPMCTX/$b"
done
CGO_ENABLED=0 GOOS=linux GOARCH=$ARCH go build -buildvcs=false -trimpath -ldflags="-s -w" -o "$OPMCTX/sh" ./hack/realnode/sh
cp "$OPMCTX/sh" "$SHCTX/sh"
cp "$REGDIR/nsswitch.conf" "$OPMCTX/nsswitch.conf"
go run ./hack/images -registry "$LOCAL_REGISTRY" -arch "$ARCH" -out bin/local/olm-images.txt \
  "$IMAGE,file=hack/olm.Dockerfile,context=$CTX" "$OPM_IMAGE,file=hack/opm.Dockerfile,context=$OPMCTX" \
  "${OPM_IMAGE%:*}:latest,file=hack/opm.Dockerfile,context=$OPMCTX" \
  "$INIT_IMAGE,file=hack/realnode/sh/Dockerfile,context=$SHCTX"
digest=$(awk -v i="$IMAGE" '$1 == i {print $2}' bin/local/olm-images.txt)
opm_digest=$(awk -v i="$OPM_IMAGE" '$1 == i {print $2}' bin/local/olm-images.txt)
if [ -z "$digest" ] || [ -z "$opm_digest" ]; then echo "olm-local: no digest for $IMAGE or $OPM_IMAGE in bin/local/olm-images.txt" >&2; exit 1; fi
say "$IMAGE@$digest, $OPM_IMAGE@$opm_digest (also :latest) and $INIT_IMAGE (a stand-in: hack/realnode/sh) pushed to $LOCAL_REGISTRY"

# 2. OLM's manifests as its release makes them (scripts/package_release.sh):
# the chart in deploy/chart, its version set to the release's, rendered by
# helm with deploy/upstream/values.yaml and the image references set to ours
# (the release sets them to its own build's digest), the CRDs in crds.yaml
# and the rest in olm.yaml, as the release publishes them. Not
# deploy/upstream/quickstart: in the module at v0.46.0 that is a stale
# render of OLM 0.18.3's (packageserver CSV olm.version 0.18.3, CRDs from
# controller-gen v0.4.1, no OLMConfig CRD), which v0.46.0's binaries do not
# run on. The chart's operatorhubio-catalog CatalogSource is left out: it
# names quay.io/operatorhubio/catalog, which nothing here serves.
rm -rf "$OUT/chart" "$OUT/render" && cp -R "$MODDIR/deploy/chart" "$OUT/chart" && chmod -R u+w "$OUT/chart"
sed -i "s/^[Vv]ersion:.*\$/version: ${V#v}/" "$OUT/chart/Chart.yaml"
rm "$OUT/chart/templates/0000_50_olm_17-upstream-operators.catalogsource.yaml"
ref=$IMAGE@$digest
bin/helm template -n olm -f "$MODDIR/deploy/upstream/values.yaml" --include-crds \
  --set "olm.image.ref=$ref,catalog.image.ref=$ref,package.image.ref=$ref" \
  --set-string "catalog.opmImageArgs=--opmImage=$OPM_IMAGE@$opm_digest" \
  --output-dir "$OUT/render" "$OUT/chart" >/dev/null
cat_docs() { local f; for f in "$@"; do printf -- '---\n'; cat "$f"; done; }
cat_docs "$OUT"/render/olm/crds/*.yaml >"$OUT/crds.yaml"
cat_docs "$OUT"/render/olm/templates/*.yaml >"$OUT/olm.yaml"
if grep -n 'operatorhubio\|olm@sha256\|opm:latest' "$OUT/olm.yaml" >&2; then
  echo "olm-local: $OUT/olm.yaml still names upstream's images (above)" >&2
  exit 1
fi
say "applying $OUT/crds.yaml and $OUT/olm.yaml (from $M@$V)"
$K apply --server-side --force-conflicts -f "$OUT/crds.yaml" >/dev/null
$K wait --for=condition=Established -f "$OUT/crds.yaml" --timeout=1m >/dev/null
$K apply --server-side --force-conflicts -f "$OUT/olm.yaml" >/dev/null

# 3. Running.
$K -n olm rollout status deployment/olm-operator --timeout="$TIMEOUT"
$K -n olm rollout status deployment/catalog-operator --timeout="$TIMEOUT"
$K -n olm wait --for=jsonpath='{.status.phase}'=Succeeded csv/packageserver --timeout="$TIMEOUT"
$K -n olm rollout status deployment/packageserver --timeout="$TIMEOUT"
$K wait --for=condition=Available apiservice/v1.packages.operators.coreos.com --timeout="$TIMEOUT"
$K get packagemanifests >/dev/null
# What `operator-sdk olm status` checks (that every object of crds.yaml and
# olm.yaml exists), done with kubectl: operator-sdk v1.42.3 fetches the
# manifests of any OLM version but 0.25.0-0.27.0 from github.com, which is
# not reachable here (docs/testing.md).
$K get -f "$OUT/crds.yaml" -f "$OUT/olm.yaml" >/dev/null
$K -n olm get pods -o wide
say "OLM $V runs on real-0: olm-operator, catalog-operator, packageserver (csv Succeeded), packagemanifests answer, every object of crds.yaml and olm.yaml exists"
