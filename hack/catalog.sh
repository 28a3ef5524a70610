#!/usr/bin/env bash
# The file-based catalog (FBC) of the operator, rendered with opm.
#
#   hack/catalog.sh          render catalog/releases/* plus the current bundle/
#                            (VERSION) into CATALOG_DIR (default dist/catalog),
#                            one stable channel: each version replaces the one
#                            before it and skips every older one; opm validate.
#   hack/catalog.sh release  record the current bundle/ as released: its render,
#                            with image BUNDLE_IMG, goes to catalog/releases/,
#                            and the commit it was built from (HEAD, which must
#                            be clean) to catalog/releases/commits, so upgrade
#                            tests can build that release's manager. Refused
#                            unless CHANGELOG.md has a dated section for
#                            VERSION ("## [x.y.z] - YYYY-MM-DD").
#
# CATALOG_INLINE=1 blanks every bundle image: OLM then installs the bundle
# content inline, with no unpack job (what a Docker-free local cluster needs).
# CATALOG_UNTIL=x.y.z leaves out every version above x.y.z (an older catalog,
# to test upgrades).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
VERSION=${VERSION:?VERSION is required}
PACKAGE=mydeployment-operator
CHANNEL=${DEFAULT_CHANNEL:-stable}
RELEASES=catalog/releases
OUT=${CATALOG_DIR:-dist/catalog}
BUNDLE_DIR=${BUNDLE_DIR:-bundle}

# render IMAGE: the olm.bundle blob of $BUNDLE_DIR with its image set.
render() { bin/opm render "$BUNDLE_DIR" --output yaml | sed "s|^image: \"\"$|image: \"$1\"|"; }

# changelog_names VERSION: CHANGELOG.md has a dated section for VERSION (Keep
# a Changelog: "## [x.y.z] - YYYY-MM-DD"), or the error says what to write.
changelog_names() {
  local heading today
  today=$(date -u +%F)
  heading=$(awk -v h="## [$1]" 'index($0, h) == 1 { print; exit }' CHANGELOG.md 2>/dev/null || true)
  if [ -z "$heading" ]; then
    echo "CHANGELOG.md names no release $1: add its section, '## [$1] - $today', saying what changed for users (and how to upgrade), then record the release" >&2
    return 1
  fi
  if ! [[ $heading =~ ^"## ["$1"] - "[0-9]{4}-[0-9]{2}-[0-9]{2}$ ]]; then
    echo "CHANGELOG.md's section for $1 is not dated ('$heading'): make it '## [$1] - $today' and commit that, then record the release" >&2
    return 1
  fi
}

if [ "${1:-}" = release ]; then
  changelog_names "$VERSION" || exit 1
  mkdir -p "$RELEASES"
  if [ -n "$(git status --porcelain -- . ':!catalog/releases')" ]; then
    echo "the working tree has uncommitted changes: a release is recorded from a commit" >&2
    exit 1
  fi
  render "${BUNDLE_IMG:?BUNDLE_IMG is required}" >"$RELEASES/$PACKAGE.v$VERSION.yaml"
  commits=$RELEASES/commits
  { grep -v "^$VERSION " "$commits" 2>/dev/null || true; echo "$VERSION $(git rev-parse HEAD)"; } | sort -V >"$commits.tmp"
  mv "$commits.tmp" "$commits"
  echo "released: $RELEASES/$PACKAGE.v$VERSION.yaml ($BUNDLE_IMG), source $(git rev-parse --short HEAD) in $commits"
  exit 0
fi

# le A B: version A <= version B.
le() { [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -1)" = "$1" ]; }
until=${CATALOG_UNTIL:-$VERSION}

rm -rf "$OUT" && mkdir -p "$OUT/$PACKAGE"
blobs=$OUT/$PACKAGE/bundles.yaml
: >"$blobs"
versions=()
for f in "$RELEASES"/$PACKAGE.v*.yaml; do
  [ -f "$f" ] || continue
  v=${f##*/$PACKAGE.v}; v=${v%.yaml}
  [ "$v" = "$VERSION" ] && continue # the current bundle/ wins over a stale record
  le "$v" "$until" || continue
  versions+=("$v"); cat "$f" >>"$blobs"
done
if le "$VERSION" "$until"; then
  versions+=("$VERSION"); render "${CATALOG_BUNDLE_IMAGE:-}" >>"$blobs"
fi
[ ${#versions[@]} -gt 0 ] || { echo "no bundle at or below $until" >&2; exit 1; }
[ "${CATALOG_INLINE:-}" = 1 ] && sed -i 's|^image: .*$|image: ""|' "$blobs"
mapfile -t versions < <(printf '%s\n' "${versions[@]}" | sort -V)

{
  bin/opm init "$PACKAGE" --default-channel="$CHANNEL" --output yaml \
    --icon=config/manifests/icon.svg --description=config/manifests/package-description.md
  printf -- '---\nschema: olm.channel\npackage: %s\nname: %s\nentries:\n' "$PACKAGE" "$CHANNEL"
  prev=""
  for v in "${versions[@]}"; do
    echo "- name: $PACKAGE.v$v"
    if [ -n "$prev" ]; then
      echo "  replaces: $PACKAGE.v$prev"
      echo "  skipRange: '>=${versions[0]} <$v'"
    fi
    prev=$v
  done
} >"$OUT/$PACKAGE/index.yaml"
bin/opm validate "$OUT"
echo "catalog: $OUT ($PACKAGE ${versions[*]} in channel $CHANNEL)"
