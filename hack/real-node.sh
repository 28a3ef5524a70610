#!/usr/bin/env bash
# One real node, real-0, in a local cluster of hack/local-cluster.sh, beside
# kwok's fake nodes: kubelet and kube-proxy (built from source:
# hack/tools.sh kubelet kube-proxy), containerd and runc (Debian's), a CNI
# bridge of its own, all as processes of this machine; and the cluster's
# DNS, CoreDNS (hack/tools.sh coredns) in a pod on it. Needs root.
#
#   hack/real-node.sh up    CLUSTER [KUBECONFIG]  start it (idempotent), wait until Ready
#   hack/real-node.sh down  CLUSTER               undo everything up did (also after a killed up)
#   hack/real-node.sh check CLUSTER [KUBECONFIG]  prove it: a server pod with a readiness
#                                                 probe, a Service from the host and a pod,
#                                                 by address and by name, in-cluster config,
#                                                 logs, exec
#
# `make local-up REAL_NODES=1` runs up, `make local-down` runs down. The
# cluster must have been created with REAL_NODES=1 (hack/local-cluster.sh):
# kwok then manages only nodes annotated kwok.x-k8s.io/node=fake, the API
# server prefers nodes' InternalIPs, authenticates to kubelets with the admin
# certificate, Services have a range of their own (10.96.0.0/16) and the API
# server's certificate names the kubernetes Service's ClusterIP.
#
# Everything lives in bin/clusters/clusters/CLUSTER/real-0 (containerd's
# root, state and sockets, kubelet's root dir, certificates and pod logs, the
# CNI config and IPAM state, the logs of the three processes, their pids), so
# kwokctl's state and this node's go together. What it changes outside that
# directory is recorded there as it goes, and down undoes it: the processes
# (stopped by pid, never by name: other clusters and CI share the machine),
# the cgroup tree under cgroupRoot in every hierarchy, the bridge and its
# veths, the nftables tables, the sysctls kubelet and the bridge plugin set,
# kubelet's links in /var/log/containers and its device plugin socket,
# libcni's cache in /var/lib/cni, the shims' sockets in /run/containerd/s.
#
# The network stays on this machine: pods get addresses from
# REAL_NODE_POD_CIDR (default 10.88.0.0/24) on the bridge REAL_NODE_BRIDGE
# (default mdreal0), with routes to the bridge and to the Service range via
# the host only (no default route, no masquerade); the nftables table
# mydeployment_real_node rejects what the bridge would forward to another
# interface and what kube-proxy would translate to an address off this
# machine (a fake pod's). kube-proxy (nftables mode) serves ClusterIPs to
# pods and to the host, NodePorts on the bridge's address only (never on
# this host's own address, where other clusters listen). Pods resolve
# cluster names through kube-dns (CoreDNS on this node), and no other name.
# containerd pulls only through hosts.toml mirrors:
# quay.io, registry.access.redhat.com, the IMAGE_TAG_BASE host
# (mydeployment.io) and LOCAL_REGISTRY itself
# go to LOCAL_REGISTRY (default 127.0.0.1:5001, plain HTTP); any other pull
# fails at once (its proxy is a closed local port).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=$ROOT/bin
cmd=${1:?usage: $0 up|down|check CLUSTER [KUBECONFIG]}
CLUSTER=${2:-mydeployment}
NODE=real-0
STATE=${KWOK_WORKDIR:-$BIN/clusters}/clusters/$CLUSTER
KCFG=${3:-$STATE/kubeconfig.yaml}
W=$STATE/$NODE
KUBECTL=$BIN/kubectl

POD_CIDR=${REAL_NODE_POD_CIDR:-10.88.0.0/24}
BRIDGE=${REAL_NODE_BRIDGE:-mdreal0}
NFT_TABLE=mydeployment_real_node
CNI_NETWORK=mydeployment-$NODE
LOCAL_REGISTRY=${LOCAL_REGISTRY:-127.0.0.1:5001}
IMAGE_TAG_BASE=${IMAGE_TAG_BASE:-mydeployment.io/mydeployment-operator}
# registry.access.redhat.com: only operator-sdk run bundle's init image,
# which hack/olm-local.sh pushes (a stand-in; see hack/realnode/sh/Dockerfile).
MIRRORED="quay.io registry.access.redhat.com ${IMAGE_TAG_BASE%%/*} $LOCAL_REGISTRY"
PAUSE_IMAGE=mydeployment.io/realnode/pause:v1
NETTOOL_IMAGE=mydeployment.io/realnode/nettool:v1
# The cluster's DNS (CoreDNS, hack/realnode/coredns): tagged with its
# module's version when built.
COREDNS_IMAGE=mydeployment.io/realnode/coredns
# Ports away from the control plane's (kwokctl counts down from 32767) and
# from a kubelet's defaults.
KUBELET_PORT=10450
KUBELET_HEALTHZ_PORT=10448
PROXY_HEALTHZ_PORT=10456
PROXY_METRICS_PORT=10449
# What kubelet (container manager), kube-proxy and the bridge plugin may set:
# recorded at up, put back at down.
SYSCTLS="vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
kernel.keys.root_maxkeys kernel.keys.root_maxbytes net.ipv4.ip_forward
net.ipv4.conf.all.route_localnet net.bridge.bridge-nf-call-iptables
net.bridge.bridge-nf-call-ip6tables net.netfilter.nf_conntrack_max
net.netfilter.nf_conntrack_tcp_timeout_established
net.netfilter.nf_conntrack_tcp_timeout_close_wait"
# Host directories the node may create whatever its config says (kubelet's
# links to pod logs, and its device plugin socket
# /var/lib/kubelet/device-plugins/kubelet.sock; libcni's cache; the shims'
# sockets; umount's /run/mount): its own files there go at down, and each
# directory that was absent at up goes too if nothing else wrote to it.
HOST_DIRS="/var/log/containers /var/lib/kubelet /var/lib/cni /run/containerd /run/mount"
# One real node on this machine at a time (its bridge, ports and cgroup
# names are fixed): this file names the state directory of the one there is.
CLAIM=/run/mydeployment-real-node

SOCK=$W/containerd/containerd.sock
CGROUP_ROOT=/$CLUSTER-$NODE
[ -f "$W/cgroup-root" ] && CGROUP_ROOT=$(cat "$W/cgroup-root")

# shellcheck source=hack/progress.sh
. "$ROOT/hack/progress.sh"
log() { progress_say "real node: $*"; }
die() { log "$*"; exit 1; }
k() { "$KUBECTL" --kubeconfig "$KCFG" "$@"; }

need_root() { [ "$(id -u)" = 0 ] || die "needs root (kubelet, containerd, cgroups, the bridge, nftables)"; }

# --- processes, by pid ---------------------------------------------------

# ours PID: PID is alive and a process of this node (its command line names
# the state directory). The command line is read whole, then matched: with
# pipefail, a `grep -q` that stops reading early can fail the pipe it
# matched in. While a wrapper (env) execs its daemon, the command line can
# read empty for a moment: a live process that shows none yet is taken for
# the one started (a containerd that had booted was once reported exited).
ours() {
  local pid=$1 cmd
  [ -n "$pid" ] || return 1
  # The redirection's error (a pid gone since) is the shell's: silenced too.
  cmd=$({ tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null) || return 1
  [[ $cmd == *"$W"* ]] && return 0
  [ -z "$cmd" ] && kill -0 "$pid" 2>/dev/null
}

pid_of() { [ -f "$W/pids/$1.pid" ] && cat "$W/pids/$1.pid" || true; }

alive() { ours "$(pid_of "$1")"; }

# start NAME CMD...: CMD in a session of its own (make's Ctrl-C does not reach
# it), output to logs/NAME.log, pid to pids/NAME.pid, unless it already runs.
start() {
  local name=$1
  shift
  alive "$name" && return 0
  mkdir -p "$W/logs" "$W/pids"
  # A background subshell is no process group leader: setsid execs CMD in
  # place, so $! is CMD's pid.
  (exec setsid "$@" >>"$W/logs/$name.log" 2>&1 </dev/null) &
  local pid=$!
  echo "$pid" >"$W/pids/$name.pid"
  # Until it execs, the pid is this script's subshell: wait for CMD.
  for _ in $(seq 1 50); do ours "$pid" && return 0; kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  ours "$pid" || { tail -20 "$W/logs/$name.log" >&2; die "$name did not start (log: $W/logs/$name.log)"; }
}

# stop NAME: SIGTERM the recorded pid if it is ours, SIGKILL after 10 s.
stop() {
  local name=$1 pid
  pid=$(pid_of "$name")
  if ours "$pid"; then
    log "stopping $name (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do ours "$pid" || break; sleep 0.2; done
    ours "$pid" && kill -KILL "$pid" 2>/dev/null || true
    # Gone from the process table too (reaped by its parent or by init).
    for _ in $(seq 1 50); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
  fi
  rm -f "$W/pids/$name.pid"
}

# stray_pids: processes whose command line names the state directory and
# that no pid file holds (started by an up killed before it wrote one).
stray_pids() {
  local f p
  for f in $(grep -laF -- "$W" /proc/[0-9]*/cmdline 2>/dev/null); do
    p=${f#/proc/}
    p=${p%/cmdline}
    [ "$p" = "$$" ] || [ "$p" = "$BASHPID" ] || ! running "$p" || echo "$p"
  done
  return 0
}

# running PID: PID exists and is no zombie.
running() { [ -r "/proc/$1/stat" ] && ! awk '{exit $3 == "Z" ? 0 : 1}' "/proc/$1/stat" 2>/dev/null; }

# put FILE: stdin into FILE, unless FILE already says that (kube-proxy exits
# when its configuration file is written, even with the same content).
put() {
  local tmp=$1.tmp
  cat >"$tmp"
  if cmp -s "$tmp" "$1"; then rm -f "$tmp"; else mv "$tmp" "$1"; fi
}

# --- host facts ------------------------------------------------------------

# shellcheck disable=SC2086 # split on dots
ip2int() { local IFS=.; set -- $1; echo $((($1 << 24) + ($2 << 16) + ($3 << 8) + $4)); }
int2ip() { echo "$(($1 >> 24 & 255)).$(($1 >> 16 & 255)).$(($1 >> 8 & 255)).$(($1 & 255))"; }
# overlap A/a B/b: the two IPv4 CIDRs share an address.
overlap() {
  local l=$((${1#*/} < ${2#*/} ? ${1#*/} : ${2#*/}))
  local mask=$(((0xffffffff << (32 - l)) & 0xffffffff))
  [ $(($(ip2int "${1%/*}") & mask)) = $(($(ip2int "${2%/*}") & mask)) ]
}
GATEWAY=$(int2ip $(($(ip2int "${POD_CIDR%/*}") + 1)))

# cgroup_mounts: every cgroup v1 hierarchy and the unified (v2) one.
cgroup_mounts() {
  awk '{for (i = 7; i <= NF; i++) if ($i == "-") { if ($(i+1) == "cgroup" || $(i+1) == "cgroup2") print $5; break }}' /proc/self/mountinfo
}

# mounts_under DIR: mount points at or under DIR, deepest first.
mounts_under() {
  awk -v d="$1" '{m = $5; gsub(/\\040/, " ", m); if (m == d || index(m, d "/") == 1) print length(m), m}' /proc/self/mountinfo |
    sort -rn | cut -d' ' -f2- | uniq
}

# --- up ----------------------------------------------------------------------

packages() {
  local missing=()
  command -v containerd >/dev/null || missing+=(containerd)
  command -v runc >/dev/null || missing+=(runc)
  [ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/host-local ] && [ -x /usr/lib/cni/loopback ] ||
    missing+=(containernetworking-plugins)
  command -v nft >/dev/null || missing+=(nftables)
  [ ${#missing[@]} = 0 ] && return 0
  log "installing ${missing[*]} (apt-get)"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

claim() {
  if [ -f "$CLAIM" ]; then
    local other
    other=$(cat "$CLAIM")
    [ "$other" = "$W" ] || [ ! -d "$other" ] ||
      die "this machine already runs a real node ($other): hack/real-node.sh down it first"
  fi
  echo "$W" >"$CLAIM"
}

# record: what down must put back, written once (a second up, or one after
# a killed up, must not record the node's own changes as the originals).
record() {
  mkdir -p "$W"
  [ -f "$W/recorded" ] && return 0
  local s v d
  for s in $SYSCTLS; do
    v=$(sysctl -n "$s" 2>/dev/null) && echo "$s=$v"
  done >"$W/sysctl.orig"
  nft list tables >"$W/nft-tables.before"
  for d in $HOST_DIRS; do [ -e "$d" ] || echo "$d"; done >"$W/host-dirs.absent"
  echo "$CGROUP_ROOT" >"$W/cgroup-root"
  touch "$W/recorded"
}

# addresses: the node's IP (the address the API server advertises in the
# kubernetes Service: a host address pods reach), the Service range, and a
# pod range that collides with neither nor with a route of this host.
addresses() {
  NODE_IP=${REAL_NODE_IP:-$(k get endpointslices -n default -l kubernetes.io/service-name=kubernetes \
    -o jsonpath='{.items[0].endpoints[0].addresses[0]}')}
  ip -o addr show | awk '{split($4, a, "/"); print a[1]}' | grep -qxF "$NODE_IP" ||
    die "the API server advertises $NODE_IP, not an address of this host: set ADVERTISE_ADDRESS (hack/local-cluster.sh)"
  SERVICE_CIDR=$(k get servicecidrs.networking.k8s.io kubernetes -o jsonpath='{.spec.cidrs[0]}')
  [ -n "$SERVICE_CIDR" ] || die "no ServiceCIDR kubernetes"
  # kube-dns's address, the tenth of the Service range, as kubeadm's: in
  # the range's static band, which the API server never hands out itself.
  case $SERVICE_CIDR in
    *.0/*) DNS_IP=${SERVICE_CIDR%.0/*}.10 ;;
    *) die "Service range $SERVICE_CIDR: kube-dns's address is its tenth, which needs an IPv4 range ending in .0" ;;
  esac
  local c
  for c in $SERVICE_CIDR $(k get nodes -o jsonpath='{.items[*].spec.podCIDRs[*]}'); do
    case $c in *:*) continue ;; esac
    overlap "$c" "$POD_CIDR" && die "pod range $POD_CIDR overlaps $c of the cluster: set REAL_NODE_POD_CIDR"
  done
  local route
  while read -r route; do
    # shellcheck disable=SC2086 # split into words
    set -- $route
    case $1 in blackhole | unreachable | prohibit | throw | unicast) shift ;; esac
    c=$1
    [ "$c" = default ] && continue
    case " $route " in *" dev $BRIDGE "*) continue ;; esac
    case $c in */*) ;; *) c=$c/32 ;; esac
    overlap "$c" "$POD_CIDR" && die "pod range $POD_CIDR overlaps the route to $c of this host: set REAL_NODE_POD_CIDR"
  done < <(ip -4 route show table main)
  return 0
}

# coredns_image: CoreDNS (hack/tools.sh coredns, cached beside the control
# plane) packed as COREDNS_IMAGE:VERSION by its Dockerfile in
# bin/realnode/coredns.tar; the tag is printed.
coredns_image() {
  local v
  v=$(cd "$ROOT/hack/tools/coredns" && go list -m -f '{{.Version}}' github.com/coredns/coredns)
  [ -x "$BIN/coredns" ] || "$ROOT/hack/tools.sh" coredns >&2
  mkdir -p "$BIN/realnode"
  cp -f "$(readlink -f "$BIN/coredns")" "$BIN/realnode/coredns"
  (cd "$ROOT" && go run ./hack/images \
    "$COREDNS_IMAGE:$v,file=hack/realnode/coredns/Dockerfile,context=$BIN/realnode,tar=$BIN/realnode/coredns.tar") >/dev/null
  echo "$COREDNS_IMAGE:$v"
}

# cluster_dns: kube-dns at DNS_IP, CoreDNS in a pod on this node, so pods
# reach Services by name (OLM's catalog-operator dials a CatalogSource's
# registry Service by its DNS name). Waits until it answers.
cluster_dns() {
  local image=$1
  log "starting the cluster DNS: CoreDNS ($image) as kube-dns at $DNS_IP"
  import_image "$BIN/realnode/coredns.tar"
  sed -e "s#image: IMAGE#image: $image#" -e "s#clusterIP: 10.96.0.10#clusterIP: $DNS_IP#" \
    -e "s#kubernetes.io/hostname: real-0#kubernetes.io/hostname: $NODE#" \
    "$ROOT/hack/realnode/coredns/coredns.yaml" | k apply --server-side -f - >/dev/null
  k -n kube-system rollout status deployment/coredns --timeout=120s >/dev/null ||
    { k -n kube-system get pods -l k8s-app=kube-dns -o wide >&2; die "the cluster DNS (CoreDNS) is not Ready"; }
}

# static_image NAME PKG TAG: a static binary of PKG built into bin/realnode
# and packed as image TAG by PKG's Dockerfile (hack/images, as make images
# builds every image) in bin/realnode/NAME.tar.
static_image() {
  local name=$1 pkg=$2 tag=$3
  mkdir -p "$BIN/realnode"
  (cd "$ROOT" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w -buildid=' -o "$BIN/realnode/$name" "$pkg" &&
    go run ./hack/images "$tag,file=$pkg/Dockerfile,context=$BIN/realnode,tar=$BIN/realnode/$name.tar") >/dev/null
}

ctr_() { ctr --address "$SOCK" -n k8s.io "$@"; }

import_image() { ctr_ image import "$1" >/dev/null; }

cgroups() {
  local m parent
  for m in $(cgroup_mounts); do
    mkdir -p "$m$CGROUP_ROOT"
    # A new cpuset has no cpus and mems: copy its parent's.
    if [ -f "$m$CGROUP_ROOT/cpuset.cpus" ]; then
      parent=$(dirname "$m$CGROUP_ROOT")
      [ -n "$(cat "$m$CGROUP_ROOT/cpuset.cpus")" ] || cat "$parent/cpuset.cpus" >"$m$CGROUP_ROOT/cpuset.cpus"
      [ -n "$(cat "$m$CGROUP_ROOT/cpuset.mems")" ] || cat "$parent/cpuset.mems" >"$m$CGROUP_ROOT/cpuset.mems"
    fi
  done
}

# bridge: made here rather than by the CNI plugin at the first pod, so that
# kube-proxy finds its address for NodePorts when it starts.
bridge() {
  ip link show "$BRIDGE" >/dev/null 2>&1 || ip link add "$BRIDGE" type bridge
  ip -4 addr show dev "$BRIDGE" | grep -qF " $GATEWAY/" || ip addr add "$GATEWAY/${POD_CIDR#*/}" dev "$BRIDGE"
  ip link set "$BRIDGE" up
}

cni_config() {
  mkdir -p "$W/cni/net.d" "$W/cni/ipam"
  # No default route and no masquerade: a pod reaches the bridge, the host
  # (its gateway) and, through the host's kube-proxy, the Service range.
  put "$W/cni/net.d/10-$CNI_NETWORK.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "$CNI_NETWORK",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$BRIDGE",
      "isGateway": true,
      "isDefaultGateway": false,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$W/cni/ipam",
        "ranges": [[{"subnet": "$POD_CIDR", "gateway": "$GATEWAY"}]],
        "routes": [{"dst": "$SERVICE_CIDR"}]
      }
    }
  ]
}
EOF
}

# guard: nothing the node does leaves this machine. Forwarded traffic
# between the bridge and any other interface is dropped (pods have no route
# out anyway), and so is what kube-proxy translates to an address off this
# machine (a Service of fake pods: their IPs are nowhere) or what is sent to
# a Service IP kube-proxy does not translate, and, when this host forwarded
# nothing before, anything forwarded elsewhere. (In the output hook the
# interface is still the one routed to before kube-proxy's DNAT: the
# translated address is what tells.)
guard() {
  # The bridge plugin turns IPv4 forwarding on; if it was off, this host
  # forwards nothing else while the node is up either.
  local others=""
  grep -qx 'net.ipv4.ip_forward=0' "$W/sysctl.orig" &&
    others="iifname != \"$BRIDGE\" oifname != \"$BRIDGE\" meta nfproto ipv4 counter drop"
  nft -f - <<EOF
table inet $NFT_TABLE
delete table inet $NFT_TABLE
table inet $NFT_TABLE {
  chain forward {
    type filter hook forward priority filter; policy accept;
    iifname "$BRIDGE" oifname != "$BRIDGE" counter reject with icmpx type admin-prohibited
    oifname "$BRIDGE" iifname != "$BRIDGE" counter drop
    $others
  }
  chain output {
    type filter hook output priority filter; policy accept;
    ct status dnat ip daddr != { 127.0.0.0/8, $POD_CIDR } fib daddr type != local counter reject with icmpx type admin-prohibited
    ip daddr $SERVICE_CIDR oifname != { "lo", "$BRIDGE" } counter reject with icmpx type admin-prohibited
  }
}
EOF
}

containerd_up() {
  local c=$W/containerd h
  mkdir -p "$c/certs.d"
  for h in $MIRRORED; do
    mkdir -p "$c/certs.d/$h"
    put "$c/certs.d/$h/hosts.toml" <<EOF
# $h is pulled from the local registry only (server: no fallback to $h).
server = "http://$LOCAL_REGISTRY"

[host."http://$LOCAL_REGISTRY"]
  capabilities = ["pull", "resolve"]
EOF
  done
  put "$c/config.toml" <<EOF
version = 2
root = "$c/root"
state = "$c/state"
oom_score = 0
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "$SOCK"

[ttrpc]
  address = "$SOCK.ttrpc"

[plugins]
  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = "$PAUSE_IMAGE"
    # Lowering oom_score_adj needs CAP_SYS_RESOURCE, which this machine withholds.
    restrict_oom_score_adj = true
    netns_mounts_under_state_dir = true
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = "/usr/lib/cni"
      conf_dir = "$W/cni/net.d"
      max_conf_num = 1
    [plugins."io.containerd.grpc.v1.cri".containerd]
      snapshotter = "overlayfs"
      default_runtime_name = "runc"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          Root = "$c/runc"
          SystemdCgroup = false
    [plugins."io.containerd.grpc.v1.cri".registry]
      config_path = "$c/certs.d"
  [plugins."io.containerd.internal.v1.opt"]
    path = "$c/opt"
EOF
  if ! alive containerd; then
    log "starting containerd"
    local reg=${LOCAL_REGISTRY%:*}
    # A proxy that is a closed local port: a pull of anything not mirrored
    # to the local registry fails at once, with no lookup or connection off
    # this machine (loopback and NO_PROXY addresses are reached directly).
    start containerd env HTTP_PROXY=http://127.0.0.1:1 HTTPS_PROXY=http://127.0.0.1:1 \
      NO_PROXY="$reg,$LOCAL_REGISTRY,127.0.0.1,localhost,::1" \
      containerd --config "$c/config.toml"
  fi
  for _ in $(seq 1 100); do
    [ -S "$SOCK" ] && ctr_ version >/dev/null 2>&1 && break
    alive containerd || { tail -20 "$W/logs/containerd.log" >&2; die "containerd exited (log: $W/logs/containerd.log)"; }
    sleep 0.2
  done
  ctr_ version >/dev/null 2>&1 || die "containerd did not answer on $SOCK"
  import_image "$BIN/realnode/pause.tar"
}

kubelet_up() {
  mkdir -p "$W/kubelet" "$W/pod-logs" "$W/volume-plugins"
  put "$W/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HEALTHZ_PORT
# The API server authenticates with the cluster's admin certificate
# (kube-apiserver --kubelet-client-certificate); kubelet asks it who may.
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: $STATE/pki/ca.crt
authorization:
  mode: Webhook
# cgroup v1 without systemd: cgroupfs, under a root of this node's own.
cgroupDriver: cgroupfs
failCgroupV1: false
cgroupRoot: $CGROUP_ROOT
containerRuntimeEndpoint: unix://$SOCK
podLogsDir: $W/pod-logs
volumePluginDir: $W/volume-plugins
# Pods' DNS is the cluster's (cluster_dns), and only it: the host's
# resolver is off this machine, so pods of dnsPolicy Default get none.
resolvConf: ""
clusterDNS: [$DNS_IP]
clusterDomain: cluster.local
# kube-proxy runs in nftables mode: no iptables chains from kubelet.
makeIPTablesUtilChains: false
# Lowering it needs CAP_SYS_RESOURCE.
oomScoreAdj: 0
failSwapOn: false
# The node's filesystems are this machine's disk, shared with its builds,
# caches and other clusters. Kubelet's default thresholds (imagefs 15%,
# nodefs 10% free) measure that whole disk: with 15% of it free, kubelet
# tainted real-0 DiskPressure and new pods stayed Pending (seen: a manager
# upgrade stuck for minutes). It evicts only when the disk is really out,
# and never deletes images to meet a percentage.
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1Gi
  nodefs.inodesFree: 1%
  imagefs.available: 1Gi
  imagefs.inodesFree: 1%
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
EOF
  if ! alive kubelet; then
    log "starting kubelet"
    start kubelet "$BIN/kubelet" --config "$W/kubelet.yaml" --kubeconfig "$KCFG" \
      --hostname-override "$NODE" --node-ip "$NODE_IP" \
      --root-dir "$W/kubelet" --cert-dir "$W/kubelet/pki" --v=1
  fi
}

kube_proxy_up() {
  put "$W/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: nftables
clientConnection:
  kubeconfig: $KCFG
hostnameOverride: $NODE
clusterCIDR: $POD_CIDR
detectLocalMode: ClusterCIDR
healthzBindAddress: 127.0.0.1:$PROXY_HEALTHZ_PORT
metricsBindAddress: 127.0.0.1:$PROXY_METRICS_PORT
# NodePorts on the bridge's address only: kube-proxy's rules then never
# touch traffic to this host's own address (other clusters' ports).
nodePortAddresses: ["$GATEWAY/32"]
oomScoreAdj: 0
# Zero: leave the host's conntrack sysctls as they are.
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
EOF
  if ! alive kube-proxy; then
    log "starting kube-proxy (nftables)"
    start kube-proxy "$BIN/kube-proxy" --config "$W/kube-proxy.yaml" --v=1
  fi
  for _ in $(seq 1 100); do
    curl -fsS --max-time 2 "http://127.0.0.1:$PROXY_HEALTHZ_PORT/healthz" >/dev/null 2>&1 && return 0
    alive kube-proxy || { tail -20 "$W/logs/kube-proxy.log" >&2; die "kube-proxy exited (log: $W/logs/kube-proxy.log)"; }
    sleep 0.3
  done
  die "kube-proxy is not healthy (log: $W/logs/kube-proxy.log)"
}

wait_ready() {
  for _ in $(seq 1 120); do
    k get node "$NODE" >/dev/null 2>&1 && break
    alive kubelet || { tail -20 "$W/logs/kubelet.log" >&2; die "kubelet exited (log: $W/logs/kubelet.log)"; }
    sleep 0.5
  done
  k wait --for=condition=Ready "node/$NODE" --timeout=120s >/dev/null ||
    { tail -20 "$W/logs/kubelet.log" >&2; die "node $NODE is not Ready (log: $W/logs/kubelet.log)"; }
}

up() {
  need_root
  [ -f "$KCFG" ] || die "no kubeconfig $KCFG: is cluster $CLUSTER up?"
  packages
  [ -x "$BIN/kubelet" ] && [ -x "$BIN/kube-proxy" ] || "$ROOT/hack/tools.sh" kubelet kube-proxy
  claim
  record
  addresses
  log "building the sandbox image $PAUSE_IMAGE"
  static_image pause ./hack/realnode/pause "$PAUSE_IMAGE"
  local dns_image
  dns_image=$(coredns_image)
  cgroups
  cni_config
  guard
  bridge
  containerd_up
  kubelet_up
  kube_proxy_up
  wait_ready
  cluster_dns "$dns_image"
  log "$NODE is Ready: $NODE_IP, pods on $POD_CIDR (bridge $BRIDGE), Services $SERVICE_CIDR, DNS $DNS_IP; logs in $W/logs"
}

# --- down --------------------------------------------------------------------

api_up() { [ -f "$KCFG" ] && k --request-timeout=3s get --raw /readyz >/dev/null 2>&1; }

# drain: while the API server is there, kubelet itself removes the node's
# pods (sandboxes stopped through CRI, so CNI releases their addresses).
drain() {
  api_up || return 0
  k get node "$NODE" >/dev/null 2>&1 || return 0
  alive kubelet && alive containerd || return 0
  log "removing the pods of $NODE"
  k cordon "$NODE" >/dev/null 2>&1 || true
  k delete pods -A --field-selector "spec.nodeName=$NODE" --wait=false >/dev/null 2>&1 || true
  for _ in $(seq 1 60); do
    [ -z "$(k get pods -A --field-selector "spec.nodeName=$NODE" -o name 2>/dev/null)" ] && break
    sleep 0.5
  done
}

# task_dirs: containerd's bundle of every container (sandboxes included).
task_dirs() {
  local d
  for d in "$W"/containerd/state/io.containerd.runtime.v2.task/*/*/; do
    [ -d "$d" ] && echo "${d%/}"
  done
  return 0
}

# cgroup_pids: every process in the node's cgroup tree.
cgroup_pids() {
  local m
  for m in $(cgroup_mounts); do
    [ -d "$m$CGROUP_ROOT" ] && find "$m$CGROUP_ROOT" -name cgroup.procs -exec cat {} + 2>/dev/null
  done | sort -un
}

# kill_containers: every container process (by the pids in the node's
# cgroups and containerd's init.pid files), then every shim (shim.pid, if its
# command line names this node's containerd).
kill_containers() {
  local p d n=0
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    local pids=()
    mapfile -t pids < <(cgroup_pids)
    for d in $(task_dirs); do [ -f "$d/init.pid" ] && pids+=("$(cat "$d/init.pid")"); done
    local live=()
    for p in "${pids[@]}"; do
      [ -n "$p" ] && running "$p" && grep -qF -- "$CGROUP_ROOT" "/proc/$p/cgroup" 2>/dev/null && live+=("$p")
    done
    [ ${#live[@]} = 0 ] && break
    n=$((n + ${#live[@]}))
    kill -KILL "${live[@]}" 2>/dev/null || true
    sleep 0.3
  done
  [ $n = 0 ] || log "killed $n container processes"
  # Then the shims: SIGTERM, SIGKILL what is left after 5 s. A shim's socket
  # lives under /run/containerd/s whatever the state dir: removed too.
  local shims=() a
  for d in $(task_dirs); do
    p=$(cat "$d/shim.pid" 2>/dev/null || true)
    ours "$p" && shims+=("$p")
  done
  if [ ${#shims[@]} -gt 0 ]; then
    kill -TERM "${shims[@]}" 2>/dev/null || true
    for _ in $(seq 1 25); do
      local any=0
      for p in "${shims[@]}"; do ours "$p" && any=1; done
      [ $any = 0 ] && break
      sleep 0.2
    done
    for p in "${shims[@]}"; do ours "$p" && kill -KILL "$p" 2>/dev/null || true; done
    log "stopped ${#shims[@]} shims"
  fi
  for d in $(task_dirs); do
    a=$(cat "$d/address" 2>/dev/null || true)
    a=${a#unix://}
    case $a in /run/containerd/s/*) rm -f "$a" ;; esac
  done
}

unmount_all() {
  local m
  for _ in 1 2 3 4 5; do
    [ -n "$(mounts_under "$W")" ] || return 0
    while read -r m; do
      [ -n "$m" ] || continue
      umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
    done < <(mounts_under "$W")
  done
}

remove_cgroups() {
  local m
  for m in $(cgroup_mounts); do
    [ -d "$m$CGROUP_ROOT" ] || continue
    for _ in 1 2 3 4 5; do
      find "$m$CGROUP_ROOT" -depth -type d -exec rmdir {} + 2>/dev/null || true
      [ -d "$m$CGROUP_ROOT" ] || break
      kill_containers
      sleep 0.3
    done
  done
}

remove_network() {
  local v
  if ip link show "$BRIDGE" >/dev/null 2>&1; then
    for v in $(ip -o link show master "$BRIDGE" | awk -F': ' '{print $2}' | cut -d@ -f1); do
      ip link delete "$v" 2>/dev/null || true
    done
    ip link delete "$BRIDGE" || true
    log "deleted the bridge $BRIDGE"
  fi
}

# new_tables: nftables tables of kube-proxy or iptables-nft that were not
# there at up ("table FAMILY NAME").
new_tables() {
  [ -f "$W/nft-tables.before" ] || return 0
  local t
  nft list tables | while read -r t; do
    grep -qxF "$t" "$W/nft-tables.before" && continue
    case ${t##* } in kube-proxy | filter | nat | mangle | raw | security) echo "$t" ;; esac
  done
}

# remove_nft: our guard table, and the tables kube-proxy (and iptables-nft,
# should kubelet or kube-proxy have used it) made since up; chains named
# KUBE-* left in tables that were there before lose their jumps and go.
remove_nft() {
  local t fam tab ipt
  nft list table inet "$NFT_TABLE" >/dev/null 2>&1 && nft delete table inet "$NFT_TABLE"
  while read -r t; do
    [ -n "$t" ] || continue
    read -r _ fam tab <<<"$t"
    nft delete table "$fam" "$tab" && log "deleted nftables table $fam $tab"
  done < <(new_tables)
  for ipt in iptables ip6tables; do
    command -v $ipt >/dev/null || continue
    for tab in filter nat mangle raw; do
      $ipt -t $tab -S 2>/dev/null | awk '$1 == "-A" && / -j KUBE-/ {sub(/^-A/, "-D"); print}' | while read -r rule; do
        eval "$ipt -t $tab $rule" || true
      done
      $ipt -t $tab -S 2>/dev/null | awk '$1 == "-N" && $2 ~ /^KUBE-/ {print $2}' | while read -r chain; do
        $ipt -t $tab -F "$chain" && $ipt -t $tab -X "$chain" && log "deleted $ipt chain $tab/$chain"
      done
    done
  done
}

# cleanup_files: kubelet's links to pod logs, libcni's cache of our network,
# and host directories that were absent at up and are empty now.
cleanup_files() {
  local f d
  for f in /var/log/containers/*; do
    [ -L "$f" ] && case $(readlink "$f") in "$W"/*) rm -f "$f" ;; esac
  done
  rm -f /var/lib/cni/results/"$CNI_NETWORK"-* 2>/dev/null || true
  [ -f "$W/host-dirs.absent" ] || return 0
  if grep -qxF /var/lib/kubelet "$W/host-dirs.absent"; then
    rm -f /var/lib/kubelet/device-plugins/kubelet.sock /var/lib/kubelet/device-plugins/kubelet_internal_checkpoint
  fi
  while read -r d; do
    [ -d "$d" ] || continue
    find "$d" -depth -type d -empty -delete 2>/dev/null || true
    [ -d "$d" ] && log "note: $d (absent at up) holds files of another program now; left alone"
  done <"$W/host-dirs.absent"
  return 0
}

restore_sysctls() {
  [ -f "$W/sysctl.orig" ] || return 0
  local s v now
  while IFS='=' read -r s v; do
    now=$(sysctl -n "$s" 2>/dev/null) || continue
    [ "$now" = "$v" ] && continue
    sysctl -qw "$s=$v" && log "sysctl $s: $now -> $v"
  done <"$W/sysctl.orig"
}

# leftovers: what down should have removed and did not, one line each.
leftovers() {
  local n m s v f
  for n in kube-proxy kubelet containerd; do alive "$n" && echo "process $n (pid $(pid_of "$n"))"; done
  for d in $(task_dirs); do ours "$(cat "$d/shim.pid" 2>/dev/null)" && echo "shim $(basename "$d")"; done
  for p in $(cgroup_pids); do running "$p" && echo "process $p in $CGROUP_ROOT"; done
  for p in $(stray_pids); do echo "process $p: $(tr '\0' ' ' <"/proc/$p/cmdline" | cut -c1-100)"; done
  mounts_under "$W" | sed 's/^/mount /'
  for m in $(cgroup_mounts); do [ -d "$m$CGROUP_ROOT" ] && echo "cgroup $m$CGROUP_ROOT"; done
  ip link show "$BRIDGE" >/dev/null 2>&1 && echo "bridge $BRIDGE"
  nft list table inet "$NFT_TABLE" >/dev/null 2>&1 && echo "nftables table inet $NFT_TABLE"
  new_tables | sed 's/^/nftables /'
  nft list ruleset 2>/dev/null | grep -q 'KUBE-' && echo "nftables chains KUBE-*"
  if [ -f "$W/sysctl.orig" ]; then
    while IFS='=' read -r s v; do
      [ "$(sysctl -n "$s" 2>/dev/null)" = "$v" ] || echo "sysctl $s"
    done <"$W/sysctl.orig"
  fi
  for f in /var/log/containers/*; do
    [ -L "$f" ] && case $(readlink "$f") in "$W"/*) echo "link $f" ;; esac
  done
  for f in /var/lib/cni/results/"$CNI_NETWORK"-*; do [ -e "$f" ] && echo "file $f"; done
  if [ -f "$W/host-dirs.absent" ] && grep -qxF /var/lib/kubelet "$W/host-dirs.absent"; then
    [ -e /var/lib/kubelet/device-plugins/kubelet.sock ] && echo "socket /var/lib/kubelet/device-plugins/kubelet.sock"
  fi
  return 0
}

down() {
  [ -d "$W" ] || { log "no real node in cluster $CLUSTER"; return 0; }
  need_root
  drain
  stop kube-proxy
  stop kubelet
  if api_up && k get node "$NODE" >/dev/null 2>&1; then k delete node "$NODE" >/dev/null 2>&1 || true; fi
  kill_containers
  stop containerd
  local strays
  strays=$(stray_pids)
  if [ -n "$strays" ]; then
    log "stopping processes of $NODE no pid file names: $(echo $strays)"
    # shellcheck disable=SC2086 # a list of pids
    kill -TERM $strays 2>/dev/null || true
    sleep 2
    # shellcheck disable=SC2046
    kill -KILL $(stray_pids) 2>/dev/null || true
  fi
  unmount_all
  remove_cgroups
  remove_network
  remove_nft
  cleanup_files
  restore_sysctls
  local left
  left=$(leftovers)
  [ -z "$left" ] || die "could not undo everything (state kept in $W):
$left"
  rm -rf --one-file-system "$W"
  [ "$(cat "$CLAIM" 2>/dev/null)" = "$W" ] && rm -f "$CLAIM"
  log "$NODE is gone: no process, mount, cgroup, bridge or nftables table of it left, sysctls restored"
}

# --- check -------------------------------------------------------------------

# check: the real node runs real pods. Prints each command and its output.
check() {
  need_root
  alive kubelet || die "no real node in cluster $CLUSTER: make local-up REAL_NODES=1"
  local ns=realnode-check
  run() {
    local shown=("$@")
    [ "$1" = k ] && shown[0]=kubectl
    echo "\$ ${shown[*]}" >&2
    "$@"
  }
  log "building the test image $NETTOOL_IMAGE (hack/realnode/nettool)"
  static_image nettool ./hack/realnode/nettool "$NETTOOL_IMAGE"
  import_image "$BIN/realnode/nettool.tar"
  k delete namespace "$ns" --ignore-not-found --wait=true >/dev/null
  k create namespace "$ns" >/dev/null
  for _ in $(seq 1 60); do k -n "$ns" get serviceaccount default >/dev/null 2>&1 && break; sleep 0.5; done
  k -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  containers:
  - name: web
    image: $NETTOOL_IMAGE
    imagePullPolicy: Never
    args: [serve, ":8080"]
    ports: [{containerPort: 8080}]
    readinessProbe:
      httpGet: {path: /healthz, port: 8080}
      periodSeconds: 1
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
EOF
  local t0=$SECONDS
  run k -n "$ns" wait --for=condition=Ready pod/web --timeout=90s
  echo "(Ready after $((SECONDS - t0)) s)" >&2
  run k -n "$ns" get pod web -o wide
  local ip
  ip=$(k -n "$ns" get service web -o jsonpath='{.spec.clusterIP}')
  for _ in $(seq 1 40); do
    [ -n "$(k -n "$ns" get endpointslices -l kubernetes.io/service-name=web -o jsonpath='{.items[*].endpoints[?(@.conditions.ready==true)].addresses[*]}')" ] && break
    sleep 0.25
  done
  sleep 1 # kube-proxy's sync after the endpoint is ready
  run curl -sS --max-time 5 "http://$ip/"
  k -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: client}
spec:
  restartPolicy: Never
  containers:
  - name: client
    image: $NETTOOL_IMAGE
    imagePullPolicy: Never
    args: [get, "http://$ip/"]
---
apiVersion: v1
kind: Pod
metadata: {name: dnsclient}
spec:
  restartPolicy: Never
  containers:
  - name: dnsclient
    image: $NETTOOL_IMAGE
    imagePullPolicy: Never
    args: [get, "http://web.$ns.svc/"]
---
apiVersion: v1
kind: Pod
metadata: {name: apiclient}
spec:
  restartPolicy: Never
  containers:
  - name: apiclient
    image: $NETTOOL_IMAGE
    imagePullPolicy: Never
    args: [apiserver]
EOF
  run k -n "$ns" wait --for=jsonpath='{.status.phase}'=Succeeded pod/client pod/dnsclient pod/apiclient --timeout=60s ||
    { k -n "$ns" get pods -o wide; k -n "$ns" logs client; k -n "$ns" logs dnsclient; k -n "$ns" logs apiclient; return 1; }
  run k -n "$ns" logs client
  run k -n "$ns" logs dnsclient
  run k -n "$ns" logs apiclient
  run k -n "$ns" logs web
  run k -n "$ns" exec web -- /nettool get http://127.0.0.1:8080/healthz
  run k -n "$ns" get pods -o wide
  k delete namespace "$ns" --wait=false >/dev/null
  log "check passed"
}

case $cmd in
  up) up ;;
  down) down ;;
  check) check ;;
  *) echo "usage: $0 up|down|check CLUSTER [KUBECONFIG]" >&2; exit 2 ;;
esac
