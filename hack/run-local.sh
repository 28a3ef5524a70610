#!/usr/bin/env bash
# make run-local: from a fresh clone to the operator running on a local
# cluster with its samples. Builds what is missing (minutes the first time,
# seconds after), starts the local cluster, installs the CRDs, starts the
# manager, applies the samples (a MyDeployment and an Application) and shows
# their pods becoming Ready, the Application's Service's endpoints and the URL
# of its Ingress. Then the manager runs in the foreground until Ctrl-C;
# `make local-down` stops the cluster.
#
# RUN_LOCAL_EXIT=1 stops the manager and returns once the samples are Ready
# (what CI uses to keep this command honest). LOCAL_CLUSTER names the
# cluster (default mydeployment; `make local-down LOCAL_CLUSTER=...` stops it).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
BIN=$ROOT/bin
export KUBECONFIG=$BIN/local/kubeconfig
CLUSTER=${LOCAL_CLUSTER:-mydeployment}
mkdir -p "$BIN/local"
# Every line says the time since the start; the output of go and of the
# generators (go: downloading ..., compiler lines) goes to this log.
export TOOLS_LOG=$BIN/local/build.log
: >"$TOOLS_LOG"
# shellcheck source=hack/progress.sh
. hack/progress.sh
step() { progress_say "$(printf '\033[1m==> %s\033[0m' "$*")"; }

step "1/6 tools: built from the Go module proxy the first time (about 15 minutes), then cached; go's output: ${TOOLS_LOG#"$ROOT"/}"
hack/tools.sh control-plane kwok kwokctl controller-gen kustomize

step "2/6 local cluster (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok)"
hack/local-cluster.sh up "$CLUSTER" "$KUBECONFIG"
"$BIN/kubectl" get nodes

step "3/6 CRDs"
progress_run "generating the CRDs (make manifests)" "$TOOLS_LOG" make --no-print-directory manifests
"$BIN/kubectl" apply --server-side -f config/crd/bases
# kubectl wait errors out (rather than waits) while a new CRD has no
# conditions at all yet: retry it quietly, then once more to show its answer.
CRDS=(crd/mydeployments.apps.mydeployment.io crd/applications.apps.mydeployment.io)
for _ in $(seq 50); do
  "$BIN/kubectl" wait --for=condition=Established --timeout=60s "${CRDS[@]}" >/dev/null 2>&1 && break
  sleep 0.2
done
"$BIN/kubectl" wait --for=condition=Established --timeout=60s "${CRDS[@]}"

step "4/6 manager"
progress_run "building bin/manager" "$TOOLS_LOG" go build -o "$BIN/manager" ./cmd
# No webhook on the host: the local cluster has no configuration calling it.
ENABLE_WEBHOOKS=false "$BIN/manager" --metrics-bind-address=0 --health-probe-bind-address=127.0.0.1:0 --zap-devel >"$BIN/local/manager.log" 2>&1 &
MANAGER=$!
trap 'kill $MANAGER 2>/dev/null || true; wait $MANAGER 2>/dev/null || true' EXIT
echo "manager pid $MANAGER, log: $BIN/local/manager.log"

step "5/6 samples: config/samples/apps_v1beta1_mydeployment.yaml, config/samples/apps_v1beta1_application.yaml"
"$BIN/kubectl" apply -f config/samples/apps_v1beta1_mydeployment.yaml
"$BIN/kubectl" apply -f config/samples/apps_v1beta1_application.yaml

step "6/6 waiting for the samples' pods to be Ready and the Application's Service to have endpoints"
APP_PODS=app.kubernetes.io/name=application-sample
for _ in $(seq 1 120); do
  kill -0 $MANAGER 2>/dev/null || { echo "manager exited:"; tail -30 "$BIN/local/manager.log"; exit 1; }
  "$BIN/kubectl" get pods -l app=web --no-headers 2>/dev/null | sed 's/^/  /' || true
  "$BIN/kubectl" get pods -l "$APP_PODS" --no-headers 2>/dev/null | sed 's/^/  /' || true
  avail=$("$BIN/kubectl" get md mydeployment-sample -o jsonpath='{.status.availableReplicas}')
  want=$("$BIN/kubectl" get md mydeployment-sample -o jsonpath='{.spec.replicas}')
  app=$("$BIN/kubectl" get mdapp application-sample -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')
  [ "${avail:-0}" = "$want" ] && [ "$app" = True ] && break
  sleep 1
done
"$BIN/kubectl" get md,pods -o wide
echo
"$BIN/kubectl" get mdapp -o wide
"$BIN/kubectl" get svc,ingress application-sample -o wide
"$BIN/kubectl" get endpointslices -l kubernetes.io/service-name=application-sample
[ "${avail:-0}" = "$want" ] || { echo "the MyDeployment sample did not become available"; exit 1; }
[ "$app" = True ] || { echo "the Application sample did not become Ready:"; "$BIN/kubectl" describe mdapp application-sample; exit 1; }
echo
echo "The sample's $want pods are Ready. Try: KUBECONFIG=$KUBECONFIG bin/kubectl scale md mydeployment-sample --replicas=5"
echo "The Application's pods are its Service's endpoints; its URL is its Ingress rule's: $("$BIN/kubectl" get mdapp application-sample -o jsonpath='{.status.urls[0]}')"
echo "Try: KUBECONFIG=$KUBECONFIG bin/kubectl scale mdapp application-sample --replicas=3"
[ "${RUN_LOCAL_EXIT:-0}" = 1 ] && exit 0
echo "The manager runs until Ctrl-C (log: $BIN/local/manager.log); 'make local-down' stops the cluster."
wait $MANAGER
