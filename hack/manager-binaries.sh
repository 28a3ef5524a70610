#!/usr/bin/env bash
# Builds the manager's static binary for each platform of a comma-separated
# list (PLATFORMS of the Makefile: linux/arm64,linux/amd64,...), named as the
# Dockerfile copies it for that platform, dist/manager-linux-${TARGETARCH}
# (buildx sets TARGETARCH to the platform's architecture; linux/arm/v7 is
# TARGETARCH arm, built with GOARM=7). Each binary is checked after it is
# built: a static (CGO_ENABLED=0) linux binary of that architecture, as Go
# recorded it. Anything else (a platform not linux, an architecture Go
# cannot build, a binary of another architecture) stops with an error
# naming the platform: make docker-buildx then builds no image.
#
# usage: hack/manager-binaries.sh PLATFORMS [OUTDIR]   (OUTDIR: dist)
set -euo pipefail
platforms=${1:?usage: $0 PLATFORMS [OUTDIR]}
out=${2:-dist}
mkdir -p "$out"
known=" $(go tool dist list | tr '\n' ' ') "
IFS=, read -r -a list <<<"$platforms"
[ "${#list[@]}" -gt 0 ] || { echo "manager-binaries: no platform in '$platforms'" >&2; exit 1; }
# Every platform is checked before any is built: a bad one fails at once.
for platform in "${list[@]}"; do
  IFS=/ read -r os arch _ <<<"$platform"
  if [ "$os" != linux ] || [[ "$known" != *" linux/$arch "* ]]; then
    echo "manager-binaries: cannot build platform '$platform': want linux/<arch> with an <arch> Go builds (go tool dist list)" >&2
    exit 1
  fi
done
for platform in "${list[@]}"; do
  IFS=/ read -r os arch variant <<<"$platform"
  goarm=""
  if [ "$arch" = arm ] && [ -n "$variant" ]; then goarm=${variant#v}; fi
  bin="$out/manager-linux-$arch"
  echo "building $bin for $platform"
  CGO_ENABLED=0 GOOS=linux GOARCH="$arch" GOARM="$goarm" go build -trimpath -ldflags="-s -w" -o "$bin" ./cmd
  info=$(go version -m "$bin")
  for want in "GOOS=linux" "GOARCH=$arch" "CGO_ENABLED=0"; do
    if ! grep -q "build[[:space:]]*$want\$" <<<"$info"; then
      echo "manager-binaries: $bin is not a $want build:" >&2
      echo "$info" >&2
      exit 1
    fi
  done
done
