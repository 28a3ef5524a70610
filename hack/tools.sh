#!/usr/bin/env bash
# Builds the project's pinned tools from the Go module proxy (no other download)
# and caches each binary outside the repo, keyed by tool and version, so later
# runs, CI on the same machine and every checkout reuse it. bin/ only holds
# symlinks into that cache.
#
#   hack/tools.sh TOOL...   TOOL: controller-gen kustomize setup-envtest
#                           operator-sdk scorecard-test opm kwok kwokctl
#                           krew-validate (krew's validate-krew-manifest)
#                           grpc-health-probe (grpc_health_probe, in the
#                           catalog image make images builds)
#                           olm (olm, catalog-operator, package-server,
#                           copy-content, cpb and bin/olm-crds)
#                           helm (renders OLM's chart for make olm-local)
#                           olmv1 (catalogd, operator-controller, cert-manager
#                           and bin/olmv1-crds)
#                           control-plane (kube-apiserver, kube-controller-manager,
#                           kube-scheduler, kubectl, etcd laid out in bin/k8s
#                           for KUBEBUILDER_ASSETS)
#                           kubelet kube-proxy (both, for the local cluster's
#                           real node: hack/real-node.sh)
#                           coredns (the real node's cluster DNS: CoreDNS with
#                           the plugins hack/tools/coredns/main.go links)
#
# Versions live in the go.mod of each module under hack/tools/ and nowhere else.
#
# What it builds it numbers ("[2/6] building etcd v3.7.3"), with the time
# since it began, a line a minute while a build runs, and how long each
# took; go's own output (go: downloading ..., the compiler's) goes to
# TOOLS_LOG (default bin/tools-build.log), whose tail it prints when a
# build fails.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TOOLS=$ROOT/hack/tools
BIN=$ROOT/bin
CACHE=${MYDEPLOYMENT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mydeployment-operator}
TOOLS_LOG=${TOOLS_LOG:-$BIN/tools-build.log}
export CGO_ENABLED=0 GOFLAGS=-mod=mod
mkdir -p "$BIN" "$CACHE" "$(dirname "$TOOLS_LOG")"
# shellcheck source=hack/progress.sh
. "$ROOT/hack/progress.sh"

log() { progress_say "$*"; }

# Builds are counted first (COUNTING=1: build and control_plane only count
# what is missing, and nothing is linked), then made: steps says "i/n".
COUNTING=
planned=0
step=0

# gobuild DIR ARGS...: go build ARGS in the module DIR.
gobuild() {
  local dir=$1
  shift
  (cd "$dir" && go build "$@")
}

# building LABEL DIR ARGS...: the next numbered step, go build ARGS in DIR.
building() {
  local label=$1
  shift
  step=$((step + 1))
  progress_run "[$step/$planned] building $label" "$TOOLS_LOG" gobuild "$@"
}

# modversion MODDIR MODULE: the version MODDIR/go.mod pins for MODULE.
modversion() {
  local v
  v=$(awk -v m="$2" '$1==m && $2 ~ /^v[0-9]/ {print $2; exit} $1=="require" && $2==m {print $3; exit}' "$1/go.mod")
  [ -n "$v" ] || { echo "no pin for $2 in $1/go.mod" >&2; exit 1; }
  echo "$v"
}

# build NAME MODDIR VERSION PKG [go build args...]: cached build of one binary,
# linked as bin/NAME. Built into a temp dir and renamed, so an interrupted
# build never leaves a half-written binary in the cache.
build() {
  local name=$1 dir=$2 version=$3 pkg=$4; shift 4
  local out=$CACHE/$name-$version/$name
  if [ ! -x "$out" ]; then
    [ -n "$COUNTING" ] && { planned=$((planned + 1)); return; }
    local tmp; tmp=$(mktemp -d "$CACHE/.build.XXXXXX")
    building "$name $version" "$dir" -trimpath "$@" -o "$tmp/$name" "$pkg"
    mkdir -p "$(dirname "$out")" && mv "$tmp/$name" "$out" && rmdir "$tmp"
  fi
  [ -n "$COUNTING" ] || ln -sfn "$out" "$BIN/$name"
}

# k8s_ldflags VERSION: the -X flags that stamp a k8s.io/kubernetes binary with
# VERSION (unstamped, /version says v0.0.0-master and whatever parses it breaks).
k8s_ldflags() {
  local kv=$1 minor p x=""
  minor=${kv#v1.}; minor=${minor%%.*}
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    x+=" -X $p.gitVersion=$kv -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
    x+=" -X $p.gitCommit=release-$kv -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  echo "$x"
}

control_plane() {
  local dir=$TOOLS/kubernetes kv ev
  kv=$(modversion "$dir" k8s.io/kubernetes)
  ev=$(modversion "$TOOLS/etcd" go.etcd.io/etcd/server/v3)
  local out=$CACHE/kubernetes-$kv
  if [ ! -x "$out/kubectl" ] && [ -n "$COUNTING" ]; then
    planned=$((planned + 1))
  elif [ ! -x "$out/kubectl" ]; then
    local tmp; tmp=$(mktemp -d "$CACHE/.build.XXXXXX")
    building "kube-apiserver, kube-controller-manager, kube-scheduler, kubectl $kv (5-10 minutes cold)" "$dir" \
      -trimpath -ldflags="-s -w$(k8s_ldflags "$kv")" -o "$tmp/" \
      k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
      k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl
    rm -rf "$out" && mv "$tmp" "$out"
  fi
  build etcd "$TOOLS/etcd" "$ev" go.etcd.io/etcd/server/v3 -ldflags=-s\ -w
  [ -n "$COUNTING" ] && return
  # envtest's layout: one directory with kube-apiserver, etcd and kubectl.
  mkdir -p "$BIN/k8s"
  for b in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
    ln -sfn "$out/$b" "$BIN/k8s/$b"; ln -sfn "$out/$b" "$BIN/$b"
  done
  ln -sfn "$CACHE/etcd-$ev/etcd" "$BIN/k8s/etcd"
}

# kubelet and kube-proxy of the local cluster's real node (hack/real-node.sh):
# built as the control plane is, from the same module at the same version with
# the same stamp, in one go build (they share most packages), and cached
# beside it as kubernetes-node-VERSION. Asked for twice (kubelet kube-proxy),
# counted and built once.
node_counted=
node_binaries() {
  local dir=$TOOLS/kubernetes kv
  kv=$(modversion "$dir" k8s.io/kubernetes)
  local out=$CACHE/kubernetes-node-$kv
  if [ ! -x "$out/kubelet" ] || [ ! -x "$out/kube-proxy" ]; then
    if [ -n "$COUNTING" ]; then
      [ -n "$node_counted" ] || planned=$((planned + 1))
      node_counted=1
      return
    fi
    local tmp; tmp=$(mktemp -d "$CACHE/.build.XXXXXX")
    building "kubelet, kube-proxy $kv (3-10 minutes cold)" "$dir" \
      -trimpath -ldflags="-s -w$(k8s_ldflags "$kv")" -o "$tmp/" \
      k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy
    rm -rf "$out" && mv "$tmp" "$out"
  fi
  [ -n "$COUNTING" ] && return
  ln -sfn "$out/kubelet" "$BIN/kubelet"
  ln -sfn "$out/kube-proxy" "$BIN/kube-proxy"
}

sdk_ldflags() {
  local v=$1 p=github.com/operator-framework/operator-sdk/internal/version
  local kv; kv=$(modversion "$TOOLS/operator-sdk" k8s.io/client-go); kv=v1.${kv#v0.}
  echo "-s -w -X $p.Version=$v -X $p.GitVersion=$v -X $p.GitCommit=release-$v -X $p.KubernetesVersion=$kv -X $p.ImageVersion=$v"
}

# tool TOOL: build (or, COUNTING, count) and link TOOL.
tool() {
  local tool=$1 v m api pkg cv d cd_ f
  case $tool in
    controller-gen) build controller-gen "$TOOLS/build" "$(modversion "$TOOLS/build" sigs.k8s.io/controller-tools)" sigs.k8s.io/controller-tools/cmd/controller-gen ;;
    kustomize) build kustomize "$TOOLS/build" "$(modversion "$TOOLS/build" sigs.k8s.io/kustomize/kustomize/v5)" sigs.k8s.io/kustomize/kustomize/v5 ;;
    setup-envtest) build setup-envtest "$TOOLS/build" "$(modversion "$TOOLS/build" sigs.k8s.io/controller-runtime/tools/setup-envtest)" sigs.k8s.io/controller-runtime/tools/setup-envtest ;;
    operator-sdk|scorecard-test)
      v=$(modversion "$TOOLS/operator-sdk" github.com/operator-framework/operator-sdk)
      # Built with a newer operator-framework/api than it pins (its validators
      # fixed a false deprecation warning on events.k8s.io): part of the key.
      api=$(modversion "$TOOLS/operator-sdk" github.com/operator-framework/api)
      pkg=github.com/operator-framework/operator-sdk/cmd/operator-sdk
      [ "$tool" = scorecard-test ] && pkg=github.com/operator-framework/operator-sdk/images/scorecard-test
      build "$tool" "$TOOLS/operator-sdk" "$v-api$api" "$pkg" -tags containers_image_openpgp -ldflags "$(sdk_ldflags "$v")" ;;
    opm)
      v=$(modversion "$TOOLS/opm" github.com/operator-framework/operator-registry)
      build opm "$TOOLS/opm" "$v" github.com/operator-framework/operator-registry/cmd/opm -tags containers_image_openpgp \
        -ldflags "-s -w -X github.com/operator-framework/operator-registry/cmd/opm/version.gitCommit=release-$v -X github.com/operator-framework/operator-registry/cmd/opm/version.opmVersion=$v" ;;
    olm)
      # OLM's two operators (run as host processes by the OLM e2e) and its
      # CRDs, linked from the module as bin/olm-crds.
      v=$(modversion "$TOOLS/olm" github.com/operator-framework/operator-lifecycle-manager)
      m=github.com/operator-framework/operator-lifecycle-manager
      build olm "$TOOLS/olm" "$v" $m/cmd/olm -tags containers_image_openpgp -ldflags=-s\ -w
      build catalog-operator "$TOOLS/olm" "$v" $m/cmd/catalog -tags containers_image_openpgp -ldflags=-s\ -w
      # The rest of OLM's image (make olm-local, hack/olm-image.sh): the
      # packageserver, and what bundle-unpack Jobs run from it.
      build package-server "$TOOLS/olm" "$v" $m/cmd/package-server -tags containers_image_openpgp -ldflags=-s\ -w
      build copy-content "$TOOLS/olm" "$v" $m/cmd/copy-content -tags containers_image_openpgp -ldflags=-s\ -w
      build cpb "$TOOLS/olm" "$v" $m/util/cpb -tags containers_image_openpgp -ldflags=-s\ -w
      [ -n "$COUNTING" ] && return
      ln -sfn "$(cd "$TOOLS/olm" && go list -m -f '{{.Dir}}' $m)/deploy/chart/crds" "$BIN/olm-crds" ;;
    olmv1)
      # OLM v1 (catalogd, operator-controller) and cert-manager, its webhook
      # certificate provider, run as host processes by the OLM v1 e2e; their
      # CRDs linked from the modules under bin/olmv1-crds.
      v=$(modversion "$TOOLS/olmv1" github.com/operator-framework/operator-controller)
      m=github.com/operator-framework/operator-controller
      build catalogd "$TOOLS/olmv1" "$v" $m/cmd/catalogd -tags containers_image_openpgp -ldflags=-s\ -w
      build operator-controller "$TOOLS/olmv1" "$v" $m/cmd/operator-controller -tags containers_image_openpgp -ldflags=-s\ -w
      # Our main.go is part of what is built: its hash is part of the key.
      cv=$(modversion "$TOOLS/cert-manager" github.com/cert-manager/cert-manager)-$(sha256sum "$TOOLS/cert-manager/main.go" | cut -c1-12)
      build cert-manager "$TOOLS/cert-manager" "$cv" . -ldflags=-s\ -w
      [ -n "$COUNTING" ] && return
      d=$(cd "$TOOLS/olmv1" && go list -m -f '{{.Dir}}' $m)
      cd_=$(cd "$TOOLS/cert-manager" && go list -m -f '{{.Dir}}' github.com/cert-manager/cert-manager)
      mkdir -p "$BIN/olmv1-crds"
      ln -sfn "$d/config/base/catalogd/crd/standard/olm.operatorframework.io_clustercatalogs.yaml" "$BIN/olmv1-crds/clustercatalogs.yaml"
      ln -sfn "$d/config/base/operator-controller/crd/standard/olm.operatorframework.io_clusterextensions.yaml" "$BIN/olmv1-crds/clusterextensions.yaml"
      for f in certificaterequests certificates issuers clusterissuers; do
        ln -sfn "$cd_/deploy/crds/cert-manager.io_$f.yaml" "$BIN/olmv1-crds/cert-manager.io_$f.yaml"
      done ;;
    helm)
      # helm renders OLM's chart for make olm-local (hack/olm-local.sh).
      v=$(modversion "$TOOLS/helm" helm.sh/helm/v3)
      build helm "$TOOLS/helm" "$v" helm.sh/helm/v3/cmd/helm -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$v" ;;
    grpc-health-probe) build grpc_health_probe "$TOOLS/grpc-health-probe" "$(modversion "$TOOLS/grpc-health-probe" github.com/grpc-ecosystem/grpc-health-probe)" github.com/grpc-ecosystem/grpc-health-probe -ldflags=-s\ -w ;;
    krew-validate) build validate-krew-manifest "$TOOLS/krew" "$(modversion "$TOOLS/krew" sigs.k8s.io/krew)" sigs.k8s.io/krew/cmd/validate-krew-manifest -ldflags=-s\ -w ;;
    kwok|kwokctl) build "$tool" "$TOOLS/kwok" "$(modversion "$TOOLS/kwok" sigs.k8s.io/kwok)" "sigs.k8s.io/kwok/cmd/$tool" -ldflags=-s\ -w ;;
    control-plane) control_plane ;;
    kubelet|kube-proxy) node_binaries ;;
    coredns)
      # Our main.go chooses the plugins: its hash is part of the key.
      v=$(modversion "$TOOLS/coredns" github.com/coredns/coredns)-$(sha256sum "$TOOLS/coredns/main.go" | cut -c1-12)
      build coredns "$TOOLS/coredns" "$v" . -ldflags=-s\ -w ;;
    *) echo "unknown tool: $tool" >&2; exit 2 ;;
  esac
}

COUNTING=1
for t in "$@"; do tool "$t"; done
COUNTING=
[ "$planned" -gt 0 ] && log "$planned to build from the Go module proxy (first use; cached in $CACHE); go's output: $TOOLS_LOG"
for t in "$@"; do tool "$t"; done
