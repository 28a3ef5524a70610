#!/usr/bin/env bash
# A local Kubernetes cluster with no Docker: etcd, kube-apiserver,
# kube-controller-manager and kube-scheduler built from source (bin/k8s) and
# kwok (fake nodes; pods become Running/Ready without a kubelet), run as host
# processes by kwokctl's binary runtime.
#
#   hack/local-cluster.sh up   [NAME] [KUBECONFIG_OUT]  start (idempotent), wait until healthy
#   hack/local-cluster.sh down [NAME]                   stop, leave no process behind (idempotent)
#
# State lives in bin/clusters/clusters/NAME; the kubeconfig is copied to
# KUBECONFIG_OUT (default bin/local/kubeconfig). NODES (default 3) fake nodes;
# KWOKCTL_ARGS more flags for `kwokctl create cluster`, KWOKCTL_SCALE_ARGS for
# `kwokctl scale node` (e.g. --param '.podCIDRs=["10.213.0.0/24"]': pod IPs
# of the cluster's own). kwok plays the kubelet
# with the Stages in KWOK_STAGES (default hack/kwok/stages.yaml: readiness
# gates, image restarts, resizes; set it empty for kwokctl's built-in stages).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=$ROOT/bin
cmd=${1:?usage: $0 up|down [NAME] [KUBECONFIG_OUT]}
NAME=${2:-mydeployment}
OUT=${3:-$BIN/local/kubeconfig}
NODES=${NODES:-3}
KWOK_STAGES=${KWOK_STAGES-$ROOT/hack/kwok/stages.yaml}
export KWOK_WORKDIR=$BIN/clusters
# kwokctl downloads kubectl unless it is told where ours is.
export KWOK_KUBECTL_BINARY=$BIN/kubectl
STATE=$KWOK_WORKDIR/clusters/$NAME
mkdir -p "$KWOK_WORKDIR"

# shellcheck source=hack/progress.sh
. "$ROOT/hack/progress.sh"
log() { progress_say "$*"; }

# healthy: the API server is ready and every component kwokctl started is
# alive (a component that lost its port to another cluster starting at the
# same moment exits at once, and kwok-controller's death leaves every node
# NotReady behind a ready API server).
healthy() {
  [ -f "$STATE/kubeconfig.yaml" ] &&
    "$BIN/kubectl" --kubeconfig "$STATE/kubeconfig.yaml" get --raw /readyz >/dev/null 2>&1 &&
    alive
}

# alive: every pid in the cluster's pid files runs (and there are some).
alive() {
  local p n=0
  while read -r p; do
    [ -n "$p" ] || continue
    running "$p" || return 1
    n=$((n + 1))
  done < <(pids)
  [ $n -gt 0 ]
}

# running PID: the process exists and has not exited. kill -0 is not
# enough: kwokctl's components are reparented to this machine's init,
# which may not reap them, so one that exited stays a zombie.
running() {
  local st
  st=$(ps -o stat= -p "$1" 2>/dev/null) && [ -n "$st" ] && [ "${st:0:1}" != Z ]
}

# pids of this cluster's components, from kwokctl's pid files (no trailing newline).
pids() {
  local f
  for f in "$STATE"/pids/*.pid; do
    [ -f "$f" ] && { cat "$f"; echo; }
  done
  return 0
}

down() {
  [ -d "$STATE" ] || { log "cluster $NAME is not running"; return 0; }
  local p live=()
  mapfile -t live < <(pids)
  log "stopping cluster $NAME"
  "$BIN/kwokctl" delete cluster --name "$NAME" >/dev/null 2>&1 || true
  # kwokctl returns before its processes exit; wait, then make sure.
  for _ in $(seq 1 50); do
    local any=0
    for p in "${live[@]}"; do [ -n "$p" ] && running "$p" && any=1; done
    [ $any = 0 ] && break
    sleep 0.2
  done
  for p in "${live[@]}"; do [ -n "$p" ] && kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$STATE"
}

# create [kwokctl flags...]: one attempt at starting the cluster, healthy or not.
create() {
  "$BIN/kwokctl" create cluster --name "$NAME" --runtime binary \
    --etcd-binary "$BIN/k8s/etcd" \
    --kube-apiserver-binary "$BIN/k8s/kube-apiserver" \
    --kube-controller-manager-binary "$BIN/k8s/kube-controller-manager" \
    --kube-scheduler-binary "$BIN/k8s/kube-scheduler" \
    --kwok-controller-binary "$BIN/kwok" \
    --kubeconfig "" --wait 60s "$@" >"$KWOK_WORKDIR/$NAME-create.log" 2>&1 ||
    { cat "$KWOK_WORKDIR/$NAME-create.log" >&2; return 1; }
  # create exits 0 even when the apiserver never came up, or a component
  # died on a port another cluster took: check ourselves.
  for _ in $(seq 1 120); do healthy && return 0; alive || break; sleep 0.5; done
  alive || { log "a component of $NAME exited at start"; grep -h '"level":"ERROR"' "$STATE"/logs/*.log 2>/dev/null | tail -3 >&2; return 1; }
  log "kube-apiserver of $NAME is not ready"
  tail -5 "$STATE"/logs/kube-apiserver.log >&2 || true
  return 1
}

up() {
  if healthy; then
    log "cluster $NAME is already up"
  else
    [ -d "$STATE" ] && down
    log "starting cluster $NAME (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok)"
    # The apiserver advertises the host's address; on a host with no default
    # route give ADVERTISE_ADDRESS (any non-loopback address of this host).
    local extra=()
    # Stages given with -c replace all of kwokctl's built-in ones.
    [ -n "$KWOK_STAGES" ] && extra+=(-c "$KWOK_STAGES")
    [ -n "${ADVERTISE_ADDRESS:-}" ] && extra+=(--extra-args "kube-apiserver=advertise-address=$ADVERTISE_ADDRESS")
    # KWOKCTL_ARGS: more `kwokctl create cluster` flags (word-split), e.g.
    # "--extra-args kube-apiserver=enable-aggregator-routing=true".
    [ -n "${KWOKCTL_ARGS:-}" ] && read -r -a more <<<"$KWOKCTL_ARGS" && extra+=("${more[@]}")
    # kwokctl picks free ports, but another cluster starting at the same
    # moment can take one before our component binds it: try again, fresh.
    local attempt
    for attempt in 1 2 3; do
      create "${extra[@]}" && break
      [ $attempt = 3 ] && { log "cluster $NAME did not come up; logs in $STATE/logs"; exit 1; }
      log "cluster $NAME did not come up (attempt $attempt); starting it again"
      down
    done
  fi
  local have
  have=$("$BIN/kubectl" --kubeconfig "$STATE/kubeconfig.yaml" get nodes -o name 2>/dev/null | wc -l)
  if [ "$have" -lt "$NODES" ]; then
    local scale=()
    [ -n "${KWOKCTL_SCALE_ARGS:-}" ] && read -r -a scale <<<"$KWOKCTL_SCALE_ARGS"
    "$BIN/kwokctl" scale node --name "$NAME" --replicas "$NODES" "${scale[@]}" >"$KWOK_WORKDIR/$NAME-scale.log" 2>&1 ||
      { cat "$KWOK_WORKDIR/$NAME-scale.log" >&2; exit 1; }
  fi
  "$BIN/kubectl" --kubeconfig "$STATE/kubeconfig.yaml" wait --for=condition=Ready node --all --timeout=60s >/dev/null
  # The default service account is what pods of a fresh namespace need; wait for it.
  for _ in $(seq 1 60); do
    "$BIN/kubectl" --kubeconfig "$STATE/kubeconfig.yaml" get serviceaccount default >/dev/null 2>&1 && break
    sleep 0.5
  done
  mkdir -p "$(dirname "$OUT")"
  cp "$STATE/kubeconfig.yaml" "$OUT"
  log "cluster $NAME is up: KUBECONFIG=$OUT ($NODES fake nodes)"
}

case $cmd in
  up) up ;;
  down) down ;;
  *) echo "usage: $0 up|down [NAME] [KUBECONFIG_OUT]" >&2; exit 2 ;;
esac
