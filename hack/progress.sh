# Progress lines of long commands (make run-local, hack/tools.sh), sourced
# by them: every line says how long ago the command began ([m:ss]), a step
# that runs for minutes says so once a minute, and the noise of the tools
# it runs (go: downloading ..., compiler output) goes to a log file the
# command names; a failing step prints that log's tail.
#
# PROGRESS_START (seconds since the epoch) is exported, so a script that
# runs another counts from its own start.

PROGRESS_START=${PROGRESS_START:-$(date +%s)}
export PROGRESS_START
# PROGRESS_TICK: seconds between the lines of a step that still runs.
PROGRESS_TICK=${PROGRESS_TICK:-60}

# progress_since T0: the time since T0 (seconds since the epoch), as 1m05s.
progress_since() {
  local s=$(($(date +%s) - $1))
  if [ "$s" -ge 60 ]; then printf '%dm%02ds' $((s / 60)) $((s % 60)); else printf '%ds' "$s"; fi
}

# progress_say TEXT...: one line on stderr, after the time since the start.
progress_say() {
  local s=$(($(date +%s) - PROGRESS_START))
  printf '[%3d:%02d] %s\n' $((s / 60)) $((s % 60)) "$*" >&2
}

# progress_run LABEL LOG CMD...: runs CMD (a command or a function) with
# its output appended to LOG; says LABEL when it starts, once a minute
# while it runs (every PROGRESS_TICK seconds), and how long it took; when it fails, the last 30 lines
# of LOG, and returns its status.
progress_run() {
  local label=$1 log=$2 t0 ticker rc=0
  shift 2
  t0=$(date +%s)
  progress_say "$label ..."
  # One-second sleeps: a killed ticker leaves no sleep behind for long.
  (
    next=$((t0 + PROGRESS_TICK))
    while sleep 1; do
      [ "$(date +%s)" -ge "$next" ] || continue
      progress_say "  ... still $label ($(progress_since "$t0"))"
      next=$((next + PROGRESS_TICK))
    done
  ) &
  ticker=$!
  "$@" >>"$log" 2>&1 || rc=$?
  kill "$ticker" 2>/dev/null || true
  wait "$ticker" 2>/dev/null || true
  if [ "$rc" != 0 ]; then
    progress_say "FAILED: $label after $(progress_since "$t0"); the end of $log:"
    tail -n 30 "$log" >&2
    return "$rc"
  fi
  progress_say "  done in $(progress_since "$t0")"
}
