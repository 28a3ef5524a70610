#!/usr/bin/env bash
# ci-failures.sh LOG: what failed in a `make test` log, short, for the end
# of a red CI run. CI shows only the last lines of its output, and after a
# failing suite come its clusters' teardown and make's own lines: the
# failure's message (a Ginkgo spec's [FAILED] block, a go test's failing
# lines, a make error) would be cut. This prints them again, colours
# stripped, the first failures first, at most MAX lines (default 30).
set -euo pipefail
log=${1:?usage: $0 LOG}
max=${MAX:-30}

# Colours go, and a time of day a caller put before each line (HH:MM:SS).
sed -E -e 's/\x1b\[[0-9;]*m//g' -e 's/^[0-9]{2}:[0-9]{2}:[0-9]{2} //' "$log" | awk -v max="$max" '
  # A Ginkgo failure: from [FAILED] (or [PANICKED], [TIMEDOUT]) to its
  # "In [It] at:" line: its first 8 lines and that one.
  /^[ \t]*\[(FAILED|PANICKED|TIMEDOUT|INTERRUPTED)\] / && !/\] in \[/ && n_blocks++ < 3 { inblock = 1; n = 0; out[++k] = "---" }
  inblock {
    if ($0 ~ /^[ \t]*In \[/) { inblock = 0; out[++k] = $0 } else if (n++ < 8) out[++k] = substr($0, 1, 400)
    next
  }
  # go test: a failing test, and the lines it logged (file_test.go:NN: ...).
  /^[ \t]*--- FAIL:/ || /^[ \t]+[A-Za-z0-9_]+_test\.go:[0-9]+: / || /^FAIL[ \t]/ { out[++k] = $0; next }
  /^make(\[[0-9]+\])?: \*\*\*/ { out[++k] = $0 }
  END {
    print "[ci] what failed (hack/ci-failures.sh):"
    for (i = 1; i <= k && i <= max; i++) print out[i]
    if (k > max) print "[ci] ... " k - max " more lines in the log"
  }'
