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
#
# REAL_NODES=1 (default 0; needs root) adds one real node, real-0: kubelet,
# kube-proxy, containerd, runc and a CNI bridge on this machine
# (hack/real-node.sh). The cluster is then made for it: kwok manages only the
# nodes annotated kwok.x-k8s.io/node=fake (the fake nodes, tainted
# kwok.x-k8s.io/node=fake:NoSchedule so that pods land on real-0 unless they
# tolerate it, their InternalIPs on loopback), and kube-apiserver reaches
# kubelets at their InternalIP with the admin certificate, Services have a
# range of their own and the API server's certificate names the kubernetes
# Service's ClusterIP (in-cluster clients dial that). down removes a real
# node first, whatever REAL_NODES says.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=$ROOT/bin
cmd=${1:?usage: $0 up|down [NAME] [KUBECONFIG_OUT]}
NAME=${2:-mydeployment}
OUT=${3:-$BIN/local/kubeconfig}
NODES=${NODES:-3}
KWOK_STAGES=${KWOK_STAGES-$ROOT/hack/kwok/stages.yaml}
REAL_NODES=${REAL_NODES:-0}
case $REAL_NODES in 0 | 1) ;; *) echo "REAL_NODES must be 0 or 1" >&2; exit 2 ;; esac
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
  # A real node first, while the API server is there; its mounts must be gone
  # before kwokctl removes the state directory they are in.
  if [ -d "$STATE/real-0" ]; then
    "$ROOT/hack/real-node.sh" down "$NAME" || { log "the real node of $NAME is not gone: cluster left running"; exit 1; }
  fi
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

# real_node_config: the kwokctl configuration of a cluster with a real node
# (the settings of the REAL_NODES=1 note above); prints its path. Its
# Services get a range of their own, 10.96.0.0/16 (REAL_NODE_SERVICE_CIDR),
# not the default 10.0.0.0/24 where kwok's pod IPs are: kube-proxy's rules
# on this host then catch no address another cluster's tests use.
real_node_config() {
  local f=$KWOK_WORKDIR/$NAME-real-node.yaml cidr=${REAL_NODE_SERVICE_CIDR:-10.96.0.0/16}
  local net=${cidr%/*}
  cat >"$f" <<EOF
apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokctlConfiguration
options:
  # The kubernetes Service's ClusterIP (the first of the range), which
  # in-cluster clients dial and check the certificate against.
  kubeApiserverCertSANs: ["${net%.*}.$((${net##*.} + 1))"]
componentsPatches:
- name: kube-apiserver
  extraArgs:
  - {key: service-cluster-ip-range, value: "$cidr"}
  - {key: kubelet-preferred-address-types, value: InternalIP}
  - {key: kubelet-client-certificate, value: "$STATE/pki/admin.crt"}
  - {key: kubelet-client-key, value: "$STATE/pki/admin.key"}
- name: kube-controller-manager
  extraArgs:
  - {key: service-cluster-ip-range, value: "$cidr"}
- name: kwok-controller
  extraArgs:
  - {key: manage-all-nodes, value: "false"}
  - {key: manage-nodes-with-annotation-selector, value: kwok.x-k8s.io/node=fake}
EOF
  echo "$f"
}

up() {
  if healthy; then
    log "cluster $NAME is already up"
    if [ "$REAL_NODES" = 1 ] && [ ! -f "$STATE/real-nodes" ]; then
      log "cluster $NAME was started without REAL_NODES=1: stop it first (make local-down)"
      exit 1
    fi
  else
    [ -d "$STATE" ] && down
    log "starting cluster $NAME (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok)"
    # The apiserver advertises the host's address; on a host with no default
    # route give ADVERTISE_ADDRESS (any non-loopback address of this host).
    local extra=()
    # Stages given with -c replace all of kwokctl's built-in ones.
    [ -n "$KWOK_STAGES" ] && extra+=(-c "$KWOK_STAGES")
    [ "$REAL_NODES" = 1 ] && extra+=(-c "$(real_node_config)")
    [ -n "${ADVERTISE_ADDRESS:-}" ] && extra+=(--extra-args "kube-apiserver=advertise-address=$ADVERTISE_ADDRESS")
    # KWOKCTL_ARGS: more `kwokctl create cluster` flags (word-split), e.g.
    # "--extra-args kube-apiserver=enable-aggregator-routing=true".
    [ -n "${KWOKCTL_ARGS:-}" ] && read -r -a more <<<"$KWOKCTL_ARGS" && extra+=("${more[@]}")
    # kwokctl picks free ports, but another cluster starting at the same
    # moment can take one before our component binds it: try again, fresh.
    local attempt
    for attempt in 1 2 3; do
      create "${extra[@]}" && { [ "$REAL_NODES" = 0 ] || touch "$STATE/real-nodes"; break; }
      [ $attempt = 3 ] && { log "cluster $NAME did not come up; logs in $STATE/logs"; exit 1; }
      log "cluster $NAME did not come up (attempt $attempt); starting it again"
      down
    done
  fi
  local have
  # The fake nodes: a real node is not one.
  have=$("$BIN/kubectl" --kubeconfig "$STATE/kubeconfig.yaml" get nodes -o name 2>/dev/null | { grep -vx node/real-0 || true; } | wc -l)
  if [ "$have" -lt "$NODES" ]; then
    local scale=() more=()
    # Beside a real node the API server dials nodes' InternalIPs (logs, exec):
    # the fake nodes' default ones (192.0.2.1 on) are off this machine.
    [ "$REAL_NODES" = 1 ] && scale+=(--param '.nodeIPs=["127.0.0.2"]')
    [ -n "${KWOKCTL_SCALE_ARGS:-}" ] && read -r -a more <<<"$KWOKCTL_SCALE_ARGS" && scale+=("${more[@]}")
    "$BIN/kwokctl" scale node --name "$NAME" --replicas "$NODES" "${scale[@]}" >"$KWOK_WORKDIR/$NAME-scale.log" 2>&1 ||
      { cat "$KWOK_WORKDIR/$NAME-scale.log" >&2; exit 1; }
  fi
  if [ "$REAL_NODES" = 1 ]; then
    local n
    for n in $("$BIN/kubectl" --kubeconfig "$STATE/kubeconfig.yaml" get nodes \
      -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.annotations.kwok\.x-k8s\.io/node}{"\n"}{end}' | awk '$2 == "fake" {print $1}'); do
      "$BIN/kubectl" --kubeconfig "$STATE/kubeconfig.yaml" taint nodes "$n" kwok.x-k8s.io/node=fake:NoSchedule --overwrite >/dev/null
    done
    "$ROOT/hack/real-node.sh" up "$NAME" "$STATE/kubeconfig.yaml"
  fi
  "$BIN/kubectl" --kubeconfig "$STATE/kubeconfig.yaml" wait --for=condition=Ready node --all --timeout=60s >/dev/null
  # The default service account is what pods of a fresh namespace need; wait for it.
  for _ in $(seq 1 60); do
    "$BIN/kubectl" --kubeconfig "$STATE/kubeconfig.yaml" get serviceaccount default >/dev/null 2>&1 && break
    sleep 0.5
  done
  mkdir -p "$(dirname "$OUT")"
  cp "$STATE/kubeconfig.yaml" "$OUT"
  if [ "$REAL_NODES" = 1 ]; then
    log "cluster $NAME is up: KUBECONFIG=$OUT ($NODES fake nodes, tainted kwok.x-k8s.io/node=fake:NoSchedule, and the real node real-0)"
  else
    log "cluster $NAME is up: KUBECONFIG=$OUT ($NODES fake nodes)"
  fi
}

case $cmd in
  up) up ;;
  down) down ;;
  *) echo "usage: $0 up|down [NAME] [KUBECONFIG_OUT]" >&2; exit 2 ;;
esac
