#!/usr/bin/env bash
# The local image registry (hack/registry: go-containerregistry's registry on
# plain HTTP, its blobs and manifests on disk) as a background process.
#
#   hack/local-registry.sh up     start it unless it runs (idempotent), wait until it answers
#   hack/local-registry.sh down   stop it, by the pid in its pid file (idempotent)
#   hack/local-registry.sh running  exit 0 if it runs and answers (make test-real
#                                   stops it afterwards only if it started it)
#
# LOCAL_REGISTRY (default 127.0.0.1:5001) is where it listens; its store is
# LOCAL_REGISTRY_DIR (default bin/local/registry), its pid file
# bin/local/registry.pid and its log bin/local/registry.log. The binary is
# bin/local-registry (built here when missing or older than its source).
#
# As root it also serves HTTPS on LOCAL_REGISTRY_TLS (default
# 127.0.51.1:443), the same store, with a certificate for the names it
# stands in for (LOCAL_REGISTRY_TLS_NAMES, default quay.io and the
# IMAGE_TAG_BASE host) from a CA of its own kept in bin/local/registry-tls
# (ca.crt). A client that pulls over HTTPS only (operator-sdk run bundle on
# the host) reaches it through hack/registry-host.sh, which gives one
# command those names and that CA; containerd on the real node pulls from
# the plain-HTTP address through its mirrors. LOCAL_REGISTRY_TLS= (empty)
# turns it off.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
ADDR=${LOCAL_REGISTRY:-127.0.0.1:5001}
DIR=${LOCAL_REGISTRY_DIR:-$ROOT/bin/local/registry}
PIDFILE=$ROOT/bin/local/registry.pid
LOG=$ROOT/bin/local/registry.log
BINARY=$ROOT/bin/local-registry
TLS_DIR=$ROOT/bin/local/registry-tls
if [ "$(id -u)" = 0 ]; then TLS_ADDR=${LOCAL_REGISTRY_TLS-127.0.51.1:443}; else TLS_ADDR=${LOCAL_REGISTRY_TLS:-}; fi
TAG_HOST=${IMAGE_TAG_BASE:-mydeployment.io/mydeployment-operator}
TLS_NAMES=${LOCAL_REGISTRY_TLS_NAMES:-quay.io ${TAG_HOST%%/*}}
mkdir -p "$ROOT/bin/local"

# ours: the pid in the pid file, if that process is alive and is our registry
# binary (not another process that got the pid since).
ours() {
  local pid
  [ -f "$PIDFILE" ] || return 1
  pid=$(cat "$PIDFILE")
  [ -n "$pid" ] && [ -d "/proc/$pid" ] || return 1
  [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$BINARY" ] || [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$BINARY (deleted)" ] || return 1
  echo "$pid"
}

answers() {
  curl -fs -o /dev/null --max-time 2 "http://$ADDR/v2/" || return 1
  [ -z "$TLS_ADDR" ] || curl -fs -o /dev/null --max-time 2 --cacert "$TLS_DIR/ca.crt" \
    --resolve "${TLS_NAMES%% *}:${TLS_ADDR##*:}:${TLS_ADDR%:*}" "https://${TLS_NAMES%% *}:${TLS_ADDR##*:}/v2/"
}

case ${1:?usage: $0 up|down|running} in
running) ours >/dev/null && answers ;;
up)
  if pid=$(ours); then
    if answers; then echo "local registry: running at $ADDR (pid $pid)"; exit 0; fi
    echo "local registry: pid $pid does not answer at $ADDR; see $LOG" >&2; exit 1
  fi
  if answers; then
    echo "local registry: something else answers at $ADDR; stop it or set LOCAL_REGISTRY" >&2; exit 1
  fi
  if [ ! -x "$BINARY" ] || [ -n "$(find hack/registry -name '*.go' -newer "$BINARY")" ]; then
    CGO_ENABLED=0 go build -o "$BINARY" ./hack/registry
  fi
  # setsid: its own session, so the make that started it can end.
  tls=()
  [ -z "$TLS_ADDR" ] || tls=(-tls-addr "$TLS_ADDR" -tls-dir "$TLS_DIR" -tls-names "${TLS_NAMES// /,}")
  setsid "$BINARY" -addr "$ADDR" -dir "$DIR" "${tls[@]}" >>"$LOG" 2>&1 </dev/null &
  echo $! >"$PIDFILE"
  for _ in $(seq 1 100); do
    if answers; then echo "local registry: started at $ADDR${TLS_ADDR:+ and https://$TLS_ADDR as ${TLS_NAMES// /, }} (pid $(cat "$PIDFILE")), store $DIR"; exit 0; fi
    if ! ours >/dev/null; then break; fi
    sleep 0.1
  done
  echo "local registry: did not come up at $ADDR; the end of $LOG:" >&2
  tail -5 "$LOG" >&2
  if pid=$(ours); then kill "$pid"; fi
  rm -f "$PIDFILE"
  exit 1 ;;
down)
  if ! pid=$(ours); then
    rm -f "$PIDFILE"; echo "local registry: not running"; exit 0
  fi
  kill "$pid"
  for _ in $(seq 1 50); do
    [ -d "/proc/$pid" ] || { rm -f "$PIDFILE"; echo "local registry: stopped (pid $pid)"; exit 0; }
    sleep 0.1
  done
  echo "local registry: pid $pid still runs 5 s after SIGTERM; killing it" >&2
  kill -KILL "$pid"; rm -f "$PIDFILE" ;;
*) echo "usage: $0 up|down|running" >&2; exit 2 ;;
esac
