#!/usr/bin/env bash
# make scorecard-local: every test of bundle/tests/scorecard/config.yaml,
# offline. `operator-sdk scorecard` runs each test's entrypoint in a pod of the
# test's image with the bundle at /bundle, so it needs a cluster that runs
# pods; here each image is replaced by the binary it holds, built from source,
# run through the same entrypoint in a chroot laid out like the image (binary
# in /usr/local/bin, bundle at /bundle, the image's user):
#   quay.io/operator-framework/scorecard-test:*  bin/scorecard-test (basic, olm)
#   $SCORECARD_IMG                               bin/mydeployment-scorecard-tests (ours)
# An image with no local binary fails. Fails unless every test's state is pass
# (the binaries exit 0 even when a test fails). Needs root for chroot.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CONFIG=$ROOT/bundle/tests/scorecard/config.yaml
JAILS=$ROOT/bin/scorecard-root
CHROOT=$(command -v chroot) # found before PATH becomes the image's
SCORECARD_IMG=${SCORECARD_IMG:?SCORECARD_IMG is required (the image of our tests, as in the config)}

# jail IMAGE: prints the chroot standing in for IMAGE, making it on first use.
jail() {
  local name bin user
  case $1 in
    quay.io/operator-framework/scorecard-test:*) name=scorecard-test user=1001:0 ;;
    "$SCORECARD_IMG") name=mydeployment-scorecard-tests user=65532:65532 ;;
    *) echo "no local binary for image $1 (SCORECARD_IMG=$SCORECARD_IMG)" >&2; return 1 ;;
  esac
  local dir=$JAILS/$name
  if [ ! -d "$dir" ]; then
    mkdir -p "$dir/usr/local/bin" "$dir/tmp"
    chmod 1777 "$dir/tmp"
    cp -r "$ROOT/bundle" "$dir/bundle"
    cp -L "$ROOT/bin/$name" "$dir/usr/local/bin/$name"
    echo "$user" >"$dir/.user"
  fi
  echo "$dir"
}

# One line per test: image, then the entrypoint's words (tab-separated).
mapfile -t tests < <(awk '
  function flush() { if (n) print img "\t" ep; n = 0; img = ""; ep = ""; key = "" }
  /^[^ ]/ { flush() }
  /^  - / { flush(); n = 1; sub(/^  - /, "    ") }
  n && /^    [a-zA-Z]+:/ { key = $1; sub(/:$/, "", key); if (key == "image") img = $2; next }
  n && key == "entrypoint" && /^    - / { a = $0; sub(/^    - /, "", a); ep = ep (ep == "" ? "" : "\t") a }
  END { flush() }' "$CONFIG")
[ ${#tests[@]} -gt 0 ] || { echo "no tests in $CONFIG" >&2; exit 1; }

rm -rf "$JAILS"
failed=0
for line in "${tests[@]}"; do
  IFS=$'\t' read -r -a words <<<"$line"
  image=${words[0]}
  entrypoint=("${words[@]:1}")
  name=${entrypoint[*]:1}
  if [ ${#entrypoint[@]} -lt 1 ] || ! dir=$(jail "$image"); then
    printf '%-28s %s\n' "${name:-?}" "cannot run: image $image, entrypoint ${entrypoint[*]}"
    failed=1
    continue
  fi
  out=$(PATH=/usr/local/bin "$CHROOT" --userspec="$(cat "$dir/.user")" "$dir" "${entrypoint[@]}" 2>&1) || true
  states=$(grep -o '"state": "[a-z]*"' <<<"$out" | cut -d'"' -f4 | sort -u | tr '\n' ' ' || true)
  if [ "$states" = "pass " ]; then
    printf '%-28s pass  (%s)\n' "$name" "${image##*/}"
  else
    # The built-in tests' logs can hold a whole CRD: leave out huge log lines.
    printf '%-28s %s\n%s\n' "$name" "${states:-no result}" "$(awk 'length <= 2000 || !/"log":/' <<<"$out")"
    failed=1
  fi
done
[ $failed = 0 ] && echo "all ${#tests[@]} scorecard tests pass"
exit $failed
