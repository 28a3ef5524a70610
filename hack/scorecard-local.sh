#!/usr/bin/env bash
# make scorecard-local: every scorecard test of bundle/tests/scorecard/config.yaml
# that runs on the scorecard-test image, offline. The image's binary reads the
# bundle at the fixed path /bundle, so each test runs in a chroot holding the
# bundle and the binary (built from source); `operator-sdk scorecard` itself
# needs a cluster that runs pods. Fails unless every test's state is pass
# (the binary exits 0 even when a test fails). Needs root for chroot.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CONFIG=$ROOT/bundle/tests/scorecard/config.yaml
JAIL=$ROOT/bin/scorecard-root
rm -rf "$JAIL" && mkdir -p "$JAIL/tmp"
cp -r "$ROOT/bundle" "$JAIL/bundle"
cp -L "$ROOT/bin/scorecard-test" "$JAIL/scorecard-test"

# The test names: the argument after "- scorecard-test" in each entrypoint.
mapfile -t tests < <(awk '/- scorecard-test$/ {getline; sub(/^[ \t]*- /, ""); print}' "$CONFIG")
[ ${#tests[@]} -gt 0 ] || { echo "no scorecard-test entries in $CONFIG" >&2; exit 1; }

failed=0
for t in "${tests[@]}"; do
  out=$(chroot "$JAIL" /scorecard-test "$t" 2>&1) || true
  states=$(grep -o '"state": "[a-z]*"' <<<"$out" | cut -d'"' -f4 | sort -u | tr '\n' ' ')
  if [ "$states" = "pass " ]; then
    printf '%-28s pass\n' "$t"
  else
    printf '%-28s %s\n%s\n' "$t" "${states:-no result}" "$out"
    failed=1
  fi
done
[ $failed = 0 ] && echo "all ${#tests[@]} scorecard tests pass"
exit $failed
