#!/usr/bin/env bash
# make plugin-archives: the kubectl plugin's release archives, one per
# platform krew installs it on (kubectl-mydeployment, its completion script
# kubectl_complete-mydeployment and LICENSE, reproducible: sorted, no
# owners or times), into dist/plugin, and the krew manifest
# plugins/mydeployment.yaml naming them with their sha256, for the
# release VERSION. Run it when cutting a release, and attach the archives
# to the GitHub release the manifest's URIs name.
# PLUGIN_PLATFORMS (default linux/amd64 linux/arm64 darwin/amd64
# darwin/arm64 windows/amd64) narrows the platforms.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
VERSION=${VERSION:?VERSION must be set (make plugin-archives sets it)}
OUT=$ROOT/dist/plugin
REPO=https://github.com/mydeployment-io/mydeployment-operator
PLATFORMS=${PLUGIN_PLATFORMS:-"linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64"}
mkdir -p "$OUT"

platforms=""
for p in $PLATFORMS; do
  os=${p%/*} arch=${p#*/} exe=kubectl-mydeployment
  [ "$os" = windows ] && exe=kubectl-mydeployment.exe
  archive=kubectl-mydeployment_v${VERSION}_${os}_${arch}.tar.gz
  dir=$(mktemp -d)
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -ldflags="-s -w" -o "$dir/$exe" ./cmd/kubectl-mydeployment
  cp cmd/kubectl-mydeployment/kubectl_complete-mydeployment LICENSE "$dir/"
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$dir" -cf - . | gzip -n >"$OUT/$archive"
  rm -rf "$dir"
  sha=$(sha256sum "$OUT/$archive" | cut -d' ' -f1)
  echo "$archive $sha"
  platforms+="  - selector:
      matchLabels:
        os: $os
        arch: $arch
    uri: $REPO/releases/download/v$VERSION/$archive
    sha256: $sha
    files:
    - from: $exe
      to: .
    - from: kubectl_complete-mydeployment
      to: .
    - from: LICENSE
      to: .
    bin: $exe
"
done

cat >plugins/mydeployment.yaml <<MANIFEST
# The krew manifest of the kubectl plugin (kubectl krew install
# --manifest=plugins/mydeployment.yaml), written by make plugin-archives
# with the sha256 of the archives it builds; make test-krew checks it with
# krew's own validator (validate-krew-manifest, as krew-index does).
apiVersion: krew.googlecontainertools.github.com/v1alpha2
kind: Plugin
metadata:
  name: mydeployment
spec:
  version: v$VERSION
  homepage: $REPO
  shortDescription: Rollout commands and kubectl get for MyDeployments
  description: |
    kubectl rollout knows only Deployments, StatefulSets and DaemonSets.
    This plugin gives MyDeployments (apps.mydeployment.io) the same verbs
    with kubectl's wording: rollout status (with a progress line),
    history, undo, restart, pause and resume; the canary verbs a
    Deployment lacks (rollout partition, promote, retry); and get, with
    -o json|yaml|name|wide|jsonpath, -l and --watch, whose STATUS column
    names the state to act on (Progressing, Paused, Held at partition N,
    Canary step i/n, Aborted at revision R, Draining, ...). Press TAB after
    kubectl mydeployment for verbs and names (kubectl 1.26+).
  platforms:
${platforms%$'\n'}
MANIFEST
echo "wrote plugins/mydeployment.yaml (v$VERSION)"
