# VERSION defines the project version for the bundle.
# Update this value when you upgrade the version of your project.
# To re-generate a bundle for another specific version without changing the standard setup, you can:
# - use the VERSION as arg of the bundle target (e.g make bundle VERSION=0.0.2)
# - use environment variables to overwrite this value (e.g export VERSION=0.0.2)
VERSION ?= 0.3.0

# CHANNELS define the bundle channels used in the bundle.
# Add a new line here if you would like to change its default config. (E.g CHANNELS = "candidate,fast,stable")
# To re-generate a bundle for other specific channels without changing the standard setup, you can:
# - use the CHANNELS as arg of the bundle target (e.g make bundle CHANNELS=candidate,fast,stable)
# - use environment variables to overwrite this value (e.g export CHANNELS="candidate,fast,stable")
CHANNELS ?= stable
BUNDLE_CHANNELS := --channels=$(CHANNELS)

# DEFAULT_CHANNEL defines the default channel used in the bundle.
# Add a new line here if you would like to change its default config. (E.g DEFAULT_CHANNEL = "stable")
# To re-generate a bundle for any other default channel without changing the default setup, you can:
# - use the DEFAULT_CHANNEL as arg of the bundle target (e.g make bundle DEFAULT_CHANNEL=stable)
# - use environment variables to overwrite this value (e.g export DEFAULT_CHANNEL="stable")
DEFAULT_CHANNEL ?= stable
BUNDLE_DEFAULT_CHANNEL := --default-channel=$(DEFAULT_CHANNEL)
BUNDLE_METADATA_OPTS ?= $(BUNDLE_CHANNELS) $(BUNDLE_DEFAULT_CHANNEL)

# IMAGE_TAG_BASE defines the docker.io namespace and part of the image name for remote images.
# This variable is used to construct full image tags for bundle and catalog images.
#
# For example, running 'make bundle-build bundle-push catalog-build catalog-push' will build and push both
# mydeployment.io/mydeployment-operator-bundle:$VERSION and mydeployment.io/mydeployment-operator-catalog:$VERSION.
IMAGE_TAG_BASE ?= mydeployment.io/mydeployment-operator

# BUNDLE_IMG defines the image:tag used for the bundle.
# You can use it as an arg. (E.g make bundle-build BUNDLE_IMG=<some-registry>/<project-name-bundle>:<tag>)
BUNDLE_IMG ?= $(IMAGE_TAG_BASE)-bundle:v$(VERSION)

# BUNDLE_GEN_FLAGS are the flags passed to the operator-sdk generate bundle command
BUNDLE_GEN_FLAGS ?= -q --overwrite --version $(VERSION) $(BUNDLE_METADATA_OPTS)

# USE_IMAGE_DIGESTS: true (the default) has make bundle name the manager in
# the CSV by digest, IMG's repository @ the digest of the linux/amd64 image
# `make images` builds from these sources (hack/images.sh digest IMG: computed
# offline, no registry asked, no push), and say disconnected: "true". false
# names it by IMG's tag and says disconnected: "false": for a manager image
# built another way (make docker-build, docker-buildx), whose digest is not
# that one. It no longer passes operator-sdk's --use-image-digests, which
# asks a registry for each image's digest (this repo reaches none).
USE_IMAGE_DIGESTS ?= true

# Set the Operator SDK version to use. By default, what is installed on the system is used.
# This is useful for CI or a project to utilize a specific version of the operator-sdk toolkit.
OPERATOR_SDK_VERSION ?= v1.42.3
# Image URL to use all building/pushing image targets
IMG ?= $(IMAGE_TAG_BASE):v$(VERSION)
# SCORECARD_IMG is the image of the project's own scorecard tests (test/scorecard).
SCORECARD_IMG ?= $(IMAGE_TAG_BASE)-scorecard-test:v$(VERSION)

# Get the currently used golang install path (in GOPATH/bin, unless GOBIN is set)
ifeq (,$(shell go env GOBIN))
GOBIN=$(shell go env GOPATH)/bin
else
GOBIN=$(shell go env GOBIN)
endif

# CONTAINER_TOOL defines the container tool to be used for building images.
# Be aware that the target commands are only tested with Docker which is
# scaffolded by default. However, you might want to replace it to use other
# tools. (i.e. podman)
CONTAINER_TOOL ?= docker
GOARCH ?= $(shell go env GOARCH)
# buildah builds rootless-free and daemonless with chroot isolation and vfs
# storage (what works in a container with no Docker engine); BUILDAH_ROOT keeps
# its images out of the system store, so its pushes must name that store too
# (a bare `buildah push` looks in the system store: "image not known").
BUILDAH_ROOT ?= $(shell pwd)/bin/buildah
ifeq ($(CONTAINER_TOOL),buildah)
BUILDAH_STORE = --storage-driver vfs --root $(BUILDAH_ROOT)/root --runroot $(BUILDAH_ROOT)/run
CONTAINER_BUILD = buildah $(BUILDAH_STORE) bud --isolation chroot
CONTAINER_PUSH = buildah $(BUILDAH_STORE) push
else
CONTAINER_BUILD = $(CONTAINER_TOOL) build
CONTAINER_PUSH = $(CONTAINER_TOOL) push
endif

# Setting SHELL to bash allows bash commands to be executed by recipes.
# Options are set to exit when a recipe line exits non-zero or a piped command fails.
SHELL = /usr/bin/env bash -o pipefail
.SHELLFLAGS = -ec

.PHONY: all
all: build

##@ General

# The help target prints out all targets with their descriptions organized
# beneath their categories. The categories are represented by '##@' and the
# target descriptions by '##'. The awk command is responsible for reading the
# entire set of makefiles included in this invocation, looking for lines of the
# file as xyz: ## something, and then pretty-format the target and help. Then,
# if there's a line with ##@ something, that gets pretty-printed as a category.
# More info on the usage of ANSI control characters for terminal formatting:
# https://en.wikipedia.org/wiki/ANSI_escape_code#SGR_parameters
# More info on the awk command:
# http://linuxcommand.org/lc3_adv_awk.php

.PHONY: help
help: ## Display this help.
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-15s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: controller-gen ## Generate WebhookConfiguration, ClusterRole and CustomResourceDefinition objects.
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd:generateEmbeddedObjectMeta=true webhook paths="./..." output:crd:artifacts:config=config/crd/bases
	go run ./hack/crdpatch config/crd/bases/apps.mydeployment.io_mydeployments.yaml config/crd/bases/apps.mydeployment.io_applications.yaml

.PHONY: generate
generate: controller-gen ## Generate code containing DeepCopy, DeepCopyInto, and DeepCopyObject method implementations.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./..."

.PHONY: fmt
fmt: ## Run go fmt against code.
	go fmt ./...

.PHONY: vet
vet: ## Run go vet against code.
	go vet ./...

.PHONY: test
test: manifests generate fmt vet test-unit test-rules test-krew fuzz test-e2e test-shards test-install test-real test-runbundle test-chaos-short test-bench ## Run every test: unit, envtest integration (real kube-apiserver + etcd), alert rules and dashboards, the krew manifest, bounded fuzzing, e2e, active-active shards (ShardedListAndWatch on and off), dist/install.yaml, the operator on a real kubelet node, operator-sdk run bundle and bundle-upgrade through OLM on it, short chaos and the benchmark's smoke run on a local cluster (test-olm and test-olmv1, with host managers, are outside it: docs/testing.md).

# envtest's kube-apiserver may take over its default 20 s to start on a loaded
# 2-core machine (seen: every suite's BeforeSuite failing at load 9). The
# controller's envtest suite takes 5 minutes in CI and passed go test's
# default 10-minute limit at load 8 with the hooks and waves specs: 30.
ENVTEST_START_TIMEOUT ?= 120s
.PHONY: test-unit
test-unit: control-plane ## Run unit and envtest integration tests (everything but test/e2e).
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" KUBEBUILDER_CONTROLPLANE_START_TIMEOUT=$(ENVTEST_START_TIMEOUT) go test $$(go list ./... | grep -v -e /test/e2e -e /test/chaos -e /test/bench) -timeout 30m -coverprofile cover.out

# Prometheus' rule parser (promtool check rules) on config/prometheus, and
# the Grafana dashboards of config/grafana: generated from hack/dashboards
# (the committed JSON must be what it writes), and every query evaluated by
# Prometheus' engine over the built manager's /metrics while it drives a
# rollout on envtest. Modules of their own, so the Prometheus server's and
# Grafana SDK's dependencies stay out of go.mod.
.PHONY: test-rules
test-rules: build control-plane ## Check the alert rules with Prometheus' rule parser, and that every dashboard query shows data from a real rollout.
	cd hack/dashboards && go vet ./... && go test ./... -count=1
	cd test/prometheus && go vet ./... && KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" MANAGER=$(LOCALBIN)/manager go test ./... -count=1

# krew-index's own check of a plugin manifest (validate-krew-manifest: its
# validation package and platform selectors), without the install (that
# downloads the release archives).
.PHONY: test-krew
test-krew: krew-validate ## Validate the krew manifest plugins/mydeployment.yaml with krew's own validator.
	$(LOCALBIN)/validate-krew-manifest -manifest plugins/mydeployment.yaml -skip-install

.PHONY: dashboards
dashboards: ## Write the Grafana dashboards of config/grafana from their Go definitions (hack/dashboards).
	cd hack/dashboards && go run . -out $(CURDIR)/config/grafana

# The e2e suite gets a local cluster of its own (not the one `make local-up`
# starts for you), drives the built manager binary and kubectl against it, and
# tears it down afterwards, pass or fail.
E2E_CLUSTER ?= mydeployment-e2e
.PHONY: test-e2e
test-e2e: build plugin kwok-tools e2e-prometheus ## Run the e2e tests on a throwaway local cluster.
	hack/local-cluster.sh up $(E2E_CLUSTER) $(LOCALBIN)/$(E2E_CLUSTER)/kubeconfig \
	  || { hack/local-cluster.sh down $(E2E_CLUSTER); exit 1; }
	rc=0; KUBECONFIG=$(LOCALBIN)/$(E2E_CLUSTER)/kubeconfig PATH="$(LOCALBIN):$$PATH" go test ./test/e2e/ -v -ginkgo.v -timeout 20m || rc=$$?; \
	  hack/local-cluster.sh down $(E2E_CLUSTER); exit $$rc

# The shards e2e (issue 56): manager replicas with --shards as host
# processes on a local cluster of its own, twice: its API server filtering
# lists and watches by shard (ShardedListAndWatch on: each replica caches
# its slots' namespaces), then not (each caches every namespace); the same
# behaviour asserted both times. 14 fake nodes of 110 pods hold its 1,200.
SHARDS_CLUSTER ?= mydeployment-shards
.PHONY: test-shards
test-shards: build kwok-tools ## Run the shards e2e (300 MyDeployments, 3 manager replicas with --shards, a kill, 3 -> 5 -> 2) on a throwaway local cluster with ShardedListAndWatch on, then off.
	@rc=0; for filters in true false; do \
	  NODES=14 KWOKCTL_ARGS="--kube-feature-gates ShardedListAndWatch=$$filters" \
	    hack/local-cluster.sh up $(SHARDS_CLUSTER) $(LOCALBIN)/$(SHARDS_CLUSTER)/kubeconfig || rc=1; \
	  [ $$rc = 0 ] && { KUBECONFIG=$(LOCALBIN)/$(SHARDS_CLUSTER)/kubeconfig SHARDS_SERVER_FILTERS=$$filters PATH="$(LOCALBIN):$$PATH" \
	    go test ./test/e2e/shards/ -count=1 -v -ginkgo.v -timeout 20m || rc=1; }; \
	  hack/local-cluster.sh down $(SHARDS_CLUSTER) || rc=1; \
	  [ $$rc = 0 ] || break; \
	done; exit $$rc

# The Prometheus of the canary analysis e2e: Prometheus' own scrape parser,
# TSDB and PromQL engine in one process, built from the test/prometheus
# module so their dependencies stay out of go.mod.
.PHONY: e2e-prometheus
e2e-prometheus: ## Build bin/e2e-prometheus, the Prometheus the canary analysis e2e scrapes and queries.
	cd test/prometheus && go build -o $(LOCALBIN)/e2e-prometheus ./cmd/e2e-prometheus

# The install e2e: dist/install.yaml applied as a user would, on a local
# cluster of its own; the manager run on the host as that Deployment's pod
# (its service account's token, its args and environment, its pod IP added
# to lo as for test-olm: needs root), making its own webhook certificate;
# then `make undeploy`. Its nodes hand out pod IPs from INSTALL_POD_CIDR, so
# the address it adds to lo is no other suite's.
INSTALL_CLUSTER ?= mydeployment-install
INSTALL_POD_CIDR ?= 10.213.0.0/24
.PHONY: test-install
test-install: build plugin build-installer kwok-tools ## Install dist/install.yaml on a throwaway local cluster, check the self-managed webhook certificate, then undeploy.
	KWOKCTL_ARGS="--extra-args kube-apiserver=enable-aggregator-routing=true" \
	  KWOKCTL_SCALE_ARGS='--param .podCIDRs=["$(INSTALL_POD_CIDR)"]' \
	  hack/local-cluster.sh up $(INSTALL_CLUSTER) $(LOCALBIN)/$(INSTALL_CLUSTER)/kubeconfig \
	  || { hack/local-cluster.sh down $(INSTALL_CLUSTER); exit 1; }
	rc=0; KUBECONFIG=$(LOCALBIN)/$(INSTALL_CLUSTER)/kubeconfig INSTALL_POD_CIDR=$(INSTALL_POD_CIDR) PATH="$(LOCALBIN):$$PATH" \
	  go test ./test/e2e/install/ -v -ginkgo.v -timeout 15m || rc=$$?; \
	  hack/local-cluster.sh down $(INSTALL_CLUSTER); exit $$rc

# The real-node e2e: a local cluster of its own with the real node real-0
# (needs root; one real node on the machine at a time), dist/install.yaml
# deployed with the images of make images as make deploy-local deploys it,
# then test/e2e/real: what a user checks on a cluster, on real pods. The
# cluster goes at the end, and the local registry too if this started it.
REAL_CLUSTER ?= mydeployment-real
.PHONY: test-real
test-real: build plugin kwok-tools real-node-tools ## Run the operator and its workloads on the real node real-0 of a throwaway local cluster: manager pods, webhook, leader kill, rollouts, in-place updates, migrate and eject, the Application, the kubelet behaviour kwok's stages claim.
	@registry_was_up=0; LOCAL_REGISTRY=$(LOCAL_REGISTRY) LOCAL_REGISTRY_DIR=$(LOCAL_REGISTRY_DIR) hack/local-registry.sh running && registry_was_up=1; \
	rc=0; $(MAKE) --no-print-directory deploy-local LOCAL_CLUSTER=$(REAL_CLUSTER) LOCAL_KUBECONFIG=$(LOCALBIN)/$(REAL_CLUSTER)/kubeconfig && \
	  KUBECONFIG=$(LOCALBIN)/$(REAL_CLUSTER)/kubeconfig OPERATOR_NAMESPACE=$(OPERATOR_NAMESPACE) IMG=$(IMG) TESTWEB_IMG_BASE=$(TESTWEB_IMG_BASE) TESTSH_IMG=$(TESTSH_IMG) \
	  PATH="$(LOCALBIN):$$PATH" go test ./test/e2e/real/ -count=1 -v -ginkgo.v -timeout 25m || rc=$$?; \
	hack/local-cluster.sh down $(REAL_CLUSTER) || rc=1; \
	[ $$registry_was_up = 1 ] || LOCAL_REGISTRY=$(LOCAL_REGISTRY) LOCAL_REGISTRY_DIR=$(LOCAL_REGISTRY_DIR) hack/local-registry.sh down; exit $$rc

# The run bundle e2e: README's `operator-sdk run bundle` of the previous
# release, then `run bundle-upgrade` to this one, on real pods: a throwaway
# local cluster with the real node real-0, OLM v0 on it as real pods (make
# olm-local), every image in the local registry (make images, as root: it
# serves HTTPS under the images' own names too); operator-sdk on the host
# through hack/registry-host.sh (those names and the registry's CA for that
# one command). Workloads left in flight by the previous release (a held
# canary, an in-place update, an Application) on real-0 keep every UID and
# restart count. Then `operator-sdk scorecard bundle` against the cluster:
# the built-in basic and OLM tests (operator-sdk's scorecard-test image,
# built from its source) and ours, in pods on real-0. Then the OperatorHub
# way, in each of OLM v0's four install modes: docs/install.md's
# CatalogSource (the serving catalog image, polled), OperatorGroup and
# Subscription; the previous release's catalog published under the
# CatalogSource's tag installs it, this version's published under the same
# tag upgrades it (registry pods reached by the Service's DNS name: the
# real node runs CoreDNS). The cluster goes at the end, and the registry if
# this started it.
RUNBUNDLE_CLUSTER ?= mydeployment-runbundle
.PHONY: test-runbundle
test-runbundle: build plugin operator-sdk kwok-tools real-node-tools ## Run README's operator-sdk run bundle (previous release) and run bundle-upgrade (this one) on real pods, OLM v0 running on the real node real-0, workloads in flight kept; operator-sdk scorecard in the cluster; then docs/install.md's CatalogSource and Subscription upgrade in every install mode.
	@registry_was_up=0; LOCAL_REGISTRY=$(LOCAL_REGISTRY) LOCAL_REGISTRY_DIR=$(LOCAL_REGISTRY_DIR) hack/local-registry.sh running && registry_was_up=1; \
	rc=0; $(MAKE) --no-print-directory images olm-local LOCAL_CLUSTER=$(RUNBUNDLE_CLUSTER) LOCAL_KUBECONFIG=$(LOCALBIN)/$(RUNBUNDLE_CLUSTER)/kubeconfig && \
	  KUBECONFIG=$(LOCALBIN)/$(RUNBUNDLE_CLUSTER)/kubeconfig VERSION=$(VERSION) IMAGE_TAG_BASE=$(IMAGE_TAG_BASE) \
	  TESTWEB_IMG_BASE=$(TESTWEB_IMG_BASE) LOCAL_REGISTRY=$(LOCAL_REGISTRY) PATH="$(LOCALBIN):$$PATH" \
	  go test ./test/e2e/runbundle/ -count=1 -v -ginkgo.v -timeout 45m || rc=$$?; \
	hack/local-cluster.sh down $(RUNBUNDLE_CLUSTER) || rc=1; \
	[ $$registry_was_up = 1 ] || LOCAL_REGISTRY=$(LOCAL_REGISTRY) LOCAL_REGISTRY_DIR=$(LOCAL_REGISTRY_DIR) hack/local-registry.sh down; exit $$rc

# The OLM e2e: OLM's olm and catalog operators on a local cluster of their
# own, the catalog served by opm; installs the previous release (running its
# own manager, built from the commit catalog/releases/commits names: the
# clone needs that history), leaves workloads in flight, then upgrades to
# this one. kube-apiserver routes webhook calls to endpoints (pod IPs), so
# the suite can serve the webhook from the host (it adds the operator pod's IP
# to lo: needs root).
OLM_CLUSTER ?= mydeployment-olm-e2e
.PHONY: test-olm
test-olm: build plugin kwok-tools opm olm ## Install and upgrade the operator through a real OLM on a throwaway local cluster.
	KWOKCTL_ARGS="--extra-args kube-apiserver=enable-aggregator-routing=true" \
	  hack/local-cluster.sh up $(OLM_CLUSTER) $(LOCALBIN)/$(OLM_CLUSTER)/kubeconfig \
	  || { hack/local-cluster.sh down $(OLM_CLUSTER); exit 1; }
	rc=0; KUBECONFIG=$(LOCALBIN)/$(OLM_CLUSTER)/kubeconfig VERSION=$(VERSION) PATH="$(LOCALBIN):$$PATH" \
	  go test ./test/e2e/olm/ -v -ginkgo.v -timeout 20m || rc=$$?; \
	  hack/local-cluster.sh down $(OLM_CLUSTER); exit $$rc

# The OLM v1 e2e: catalogd, operator-controller and cert-manager (OLM v1's
# webhook certificate provider) as host processes on a local cluster of their
# own, an OCI registry in the test process holding the bundle and catalog
# images it builds; installs the previous release through a ClusterExtension
# (AllNamespaces), running its own manager as for test-olm, upgrades it to
# this one in the middle of an in-place update, and checks that a bundle
# without AllNamespaces is refused. Needs root: the operator pod's IP is added to lo
# (as for test-olm) and OLM v1's processes run in mount namespaces of their
# own (unshare) that hold their service account token where a pod has it.
OLMV1_CLUSTER ?= mydeployment-olmv1
.PHONY: test-olmv1
test-olmv1: build plugin kwok-tools opm olmv1 ## Install and upgrade the operator through OLM v1 (ClusterCatalog + ClusterExtension) on a throwaway local cluster.
	KWOKCTL_ARGS="--extra-args kube-apiserver=enable-aggregator-routing=true" \
	  hack/local-cluster.sh up $(OLMV1_CLUSTER) $(LOCALBIN)/$(OLMV1_CLUSTER)/kubeconfig \
	  || { hack/local-cluster.sh down $(OLMV1_CLUSTER); exit 1; }
	rc=0; KUBECONFIG=$(LOCALBIN)/$(OLMV1_CLUSTER)/kubeconfig VERSION=$(VERSION) PATH="$(LOCALBIN):$$PATH" \
	  go test ./test/e2e/olmv1/ -v -ginkgo.v -timeout 20m || rc=$$?; \
	  hack/local-cluster.sh down $(OLMV1_CLUSTER); exit $$rc

# Bounded fuzzing of the planner and revision hashing: each target runs a
# fixed number of inputs (FUZZ_SCALE multiplies them) and must not panic or
# break its own checks. Counts, not -fuzztime durations: Go 1.26's fuzz
# coordinator can fail a healthy target with "context deadline exceeded" at
# the deadline on a loaded machine (golang/go#75804, fixed in Go 1.27).
FUZZ_SCALE ?= 1
FUZZ_TARGETS ?= ./internal/rollout:FuzzCompute:5000 ./internal/revision:FuzzHash:2000 ./internal/revision:FuzzPatchRoundTrip:1000
.PHONY: fuzz
fuzz: ## Run each fuzz target for a bounded number of inputs (a few seconds each; FUZZ_SCALE=10 for longer).
	@for t in $(FUZZ_TARGETS); do IFS=: read -r pkg fn n <<<"$$t"; n=$$(( n * $(FUZZ_SCALE) )); \
	  echo "fuzz $$pkg $$fn: $$n inputs"; \
	  go test $$pkg -run '^$$' -fuzz "^$$fn\$$" -fuzztime $${n}x || exit 1; \
	done

# The chaos suite (test/chaos) on a throwaway local cluster: the built
# manager SIGKILLed at random moments, run with a fault-injecting client,
# failed over between two leaders, while a watcher checks every pod event.
# `make chaos` is the full run and writes its figures into docs/reliability.md;
# the short run is part of `make test` (on the E2E cluster's name, after e2e).
CHAOS_CLUSTER ?= mydeployment-chaos
.PHONY: chaos
chaos: build kwok-tools kustomize ## Run the full chaos suite (several minutes) and write its figures to docs/reliability.md.
	hack/local-cluster.sh up $(CHAOS_CLUSTER) $(LOCALBIN)/$(CHAOS_CLUSTER)/kubeconfig \
	  || { hack/local-cluster.sh down $(CHAOS_CLUSTER); exit 1; }
	KUBECONFIG=$(LOCALBIN)/$(CHAOS_CLUSTER)/kubeconfig go test ./test/chaos/ -v -count=1 -timeout 60m \
	  -chaos.full -chaos.report=$(CURDIR)/docs/reliability.md; \
	  rc=$$?; hack/local-cluster.sh down $(CHAOS_CLUSTER); exit $$rc

.PHONY: test-chaos-short
test-chaos-short: build kwok-tools kustomize ## Run the short chaos suite (under a minute) on a throwaway local cluster.
	hack/local-cluster.sh up $(E2E_CLUSTER) $(LOCALBIN)/$(E2E_CLUSTER)/kubeconfig \
	  || { hack/local-cluster.sh down $(E2E_CLUSTER); exit 1; }
	KUBECONFIG=$(LOCALBIN)/$(E2E_CLUSTER)/kubeconfig go test ./test/chaos/ -v -count=1 -timeout 15m; \
	  rc=$$?; hack/local-cluster.sh down $(E2E_CLUSTER); exit $$rc

##@ Benchmark

# make bench runs raw client vs Deployment vs MyDeployment (and MyDeployment's
# in-place update against Deployment's rolling update) on a cluster of its
# own (kwokctl, deleted afterwards) and writes docs/benchmarks/. BENCH_SIZE:
# full (200 x 50 = 10,000 pods), small (20 x 20), tiny (3 x 4); BENCH_ARGS
# adds flags, e.g. BENCH_ARGS="--objects 100 --replicas 20 --nodes 4".
BENCH_SIZE ?= full
BENCH_ARGS ?=
BENCH_CLUSTER ?= mydeployment-bench
# Only a full-size run writes docs/benchmarks; smaller ones write bin/bench-SIZE
# so they never overwrite the figures of record.
BENCH_OUT ?= $(if $(filter full,$(BENCH_SIZE)),docs/benchmarks,bin/bench-$(BENCH_SIZE))
.PHONY: bench
bench: build kwok-tools ## Benchmark scale-out, rolling update, in-place update, scale-in and rest against Deployment and a raw client (BENCH_SIZE=full|small).
	BENCH_LOAD_AT_START="$$(cut -d' ' -f1-3 /proc/loadavg)" go run ./test/bench --size $(BENCH_SIZE) --cluster $(BENCH_CLUSTER) --out $(BENCH_OUT) $(BENCH_ARGS)

# make bench-scale runs the scale curve: raw client, Deployment and
# MyDeployment at 2,000, 10,000 and 30,000 pods (50 replicas an object, one
# round each, a fresh cluster each, kwok's pod workers 16 at every size) and
# writes docs/benchmarks/scale.json, scale.svg and its README section. Other
# sizes (BENCH_SCALE_PODS) write bin/bench-scale-out unless BENCH_SCALE_OUT says.
BENCH_SCALE_PODS ?= 2000,10000,30000
BENCH_SCALE_ARGS ?=
BENCH_SCALE_OUT ?= $(if $(filter 2000$(comma)10000$(comma)30000,$(BENCH_SCALE_PODS)),docs/benchmarks,bin/bench-scale-out)
comma := ,
.PHONY: bench-scale
bench-scale: build kwok-tools ## Benchmark how time, controller CPU and RSS grow with pods (2,000 / 10,000 / 30,000 pods, bound to their nodes; about 100 minutes on 2 cores) against Deployment.
	go run ./test/bench --size full --scale-pods $(BENCH_SCALE_PODS) --cluster $(BENCH_CLUSTER) --out $(BENCH_SCALE_OUT) $(BENCH_SCALE_ARGS)

# The smoke run of make test: tiny size, its own cluster, outputs in a temp dir.
.PHONY: test-bench
test-bench: build kwok-tools ## Smoke-run the benchmark (3 x 4 pods): outputs written, invariants kept (in-place: 0 pods recreated), 0 writes at rest.
	BENCH_SMOKE=1 BENCH_CLUSTER=$(E2E_CLUSTER)-bench go test ./test/bench/ -count=1 -v -timeout 5m

##@ Local cluster (no Docker: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok as processes)

LOCAL_CLUSTER ?= mydeployment
LOCAL_KUBECONFIG ?= $(LOCALBIN)/local/kubeconfig
# REAL_NODES=1: make local-up adds a real node, real-0, beside the fake ones:
# kubelet, kube-proxy, containerd, runc and a CNI bridge on this machine
# (hack/real-node.sh; needs root). Pods land on it unless they tolerate the
# fake nodes' taint kwok.x-k8s.io/node=fake:NoSchedule.
REAL_NODES ?= 0

.PHONY: local-up
local-up: kwok-tools $(if $(filter 1,$(REAL_NODES)),real-node-tools) ## Start the local cluster in the background (3 kwok nodes; REAL_NODES=1 adds the real node real-0, as root); kubeconfig in bin/local/kubeconfig.
	REAL_NODES=$(REAL_NODES) IMAGE_TAG_BASE=$(IMAGE_TAG_BASE) hack/local-cluster.sh up $(LOCAL_CLUSTER) $(LOCAL_KUBECONFIG)

.PHONY: local-down
local-down: ## Stop the local cluster and every process of it (a real node too: everything it changed on the host is undone).
	hack/local-cluster.sh down $(LOCAL_CLUSTER)

# make deploy-local: the operator as a user runs it, on real pods. The local
# cluster (with its real node; started if it is not up) gets dist/install.yaml
# with the manager image make images pushed, named by tag and digest so that
# real-0 runs exactly this build: two manager pods, the webhook served from
# them through its Service, restricted Pod Security enforced on the namespace.
OPERATOR_NAMESPACE = $(shell sed -n 's/^namespace: //p' config/default/kustomization.yaml)
.PHONY: deploy-local
deploy-local: images build-installer kwok-tools real-node-tools ## Deploy dist/install.yaml with the images of make images on the local cluster's real node real-0 (started with REAL_NODES=1 if not up; as root).
	REAL_NODES=1 IMAGE_TAG_BASE=$(IMAGE_TAG_BASE) LOCAL_REGISTRY=$(LOCAL_REGISTRY) hack/local-cluster.sh up $(LOCAL_CLUSTER) $(LOCAL_KUBECONFIG)
	@digest=$$(awk '$$1 == "$(IMG)" {print $$2}' $(LOCALBIN)/local/images.txt); \
	  [ -n "$$digest" ] || { echo "deploy-local: make images wrote no digest for $(IMG)" >&2; exit 1; }; \
	  echo "deploy-local: $(IMG)@$$digest"; \
	  sed "s|image: $(IMG)\$$|image: $(IMG)@$$digest|" dist/install.yaml | \
	  $(LOCALBIN)/kubectl --kubeconfig $(LOCAL_KUBECONFIG) apply --server-side -f - >/dev/null
	$(LOCALBIN)/kubectl --kubeconfig $(LOCAL_KUBECONFIG) -n $(OPERATOR_NAMESPACE) rollout status deployment --timeout=3m
	$(LOCALBIN)/kubectl --kubeconfig $(LOCAL_KUBECONFIG) -n $(OPERATOR_NAMESPACE) get pods -o wide

# make olm-local: OLM v0 as real pods on the local cluster's real node
# real-0 (started with REAL_NODES=1 if not up; as root): OLM's image built
# from its module source FROM scratch and pushed to the local registry as
# quay.io/operator-framework/olm:VERSION (and the opm image its bundle-unpack
# Jobs run, quay.io/operator-framework/opm:VERSION), OLM's chart rendered as its release
# renders it, applied server-side; waits for olm-operator, catalog-operator,
# the packageserver CSV and the packagemanifests API (hack/olm-local.sh).
.PHONY: olm-local
olm-local: olm helm opm grpc-health-probe kwok-tools real-node-tools local-registry ## Run OLM v0 (olm-operator, catalog-operator, packageserver) from its own image and manifests on the local cluster's real node real-0 (idempotent; as root).
	REAL_NODES=1 IMAGE_TAG_BASE=$(IMAGE_TAG_BASE) LOCAL_REGISTRY=$(LOCAL_REGISTRY) hack/local-cluster.sh up $(LOCAL_CLUSTER) $(LOCAL_KUBECONFIG)
	KUBECONFIG=$(LOCAL_KUBECONFIG) LOCAL_REGISTRY=$(LOCAL_REGISTRY) hack/olm-local.sh

.PHONY: run-local
run-local: ## Build what is missing, start the local cluster, install the CRDs, run the manager and apply the sample.
	hack/run-local.sh

.PHONY: lint
lint: ## Check formatting and run go vet.
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1; }
	go vet ./...

##@ Build

.PHONY: build
build: manifests generate fmt vet ## Build manager binary.
	go build -o bin/manager cmd/main.go

.PHONY: plugin
plugin: ## Build the kubectl plugin bin/kubectl-mydeployment and its completion bin/kubectl_complete-mydeployment (put bin/ on PATH: kubectl mydeployment ..., TAB completes).
	go build -o bin/kubectl-mydeployment ./cmd/kubectl-mydeployment
	install -m 0755 cmd/kubectl-mydeployment/kubectl_complete-mydeployment bin/kubectl_complete-mydeployment

# The plugin's release archives (linux, darwin, windows) and the krew
# manifest naming them with their sha256: run when cutting a release.
.PHONY: plugin-archives
plugin-archives: ## Build the plugin's release archives into dist/plugin and write the krew manifest plugins/mydeployment.yaml for them.
	VERSION=$(VERSION) hack/plugin-archives.sh

.PHONY: run
ENABLE_WEBHOOKS ?= false
run: manifests generate fmt vet ## Run a controller from your host (webhook off: it needs a certificate the cluster trusts).
	ENABLE_WEBHOOKS=$(ENABLE_WEBHOOKS) go run ./cmd/main.go

# The manager image copies a prebuilt static binary, dist/manager-linux-$TARGETARCH
# (Dockerfile): hack/manager-binaries.sh builds it for each platform asked and
# checks it is a static linux binary of that architecture.
.PHONY: docker-build
docker-build: ## Build the manager image (static binary, FROM scratch, non-root) with CONTAINER_TOOL, for this host's GOARCH.
	hack/manager-binaries.sh linux/$(GOARCH)
	$(CONTAINER_BUILD) --build-arg TARGETARCH=$(GOARCH) -t ${IMG} .

.PHONY: docker-push
docker-push: ## Push the manager image (IMG) with CONTAINER_TOOL, from the store docker-build built it into.
	$(CONTAINER_PUSH) ${IMG}

# PLATFORMS are the platforms of the multi-architecture manager image (make
# docker-buildx IMG=myregistry/mydeployment-operator:v0.3.0). docker-buildx
# builds the manager's binary for each (Go cross-compiles: CGO is off), then
# one `docker buildx build --platform=$(PLATFORMS) --push`, in which BuildKit
# gives each platform's stage its TARGETARCH, so each copies its own binary.
# Any failure stops it with an error: a platform it cannot build, no buildx,
# a push refused. You need docker buildx (BuildKit) and a registry you can
# push to (IMG).
PLATFORMS ?= linux/arm64,linux/amd64,linux/s390x,linux/ppc64le
BUILDX_BUILDER ?= mydeployment-operator-builder
.PHONY: manager-binaries
manager-binaries: ## Build the manager's static binary for each of PLATFORMS into dist/ (what docker-buildx copies), checking each one's architecture.
	hack/manager-binaries.sh $(PLATFORMS)

.PHONY: docker-buildx
docker-buildx: manager-binaries ## Build and push the manager image for every platform of PLATFORMS (docker buildx), each with its own binary.
	$(CONTAINER_TOOL) buildx inspect $(BUILDX_BUILDER) >/dev/null 2>&1 || $(CONTAINER_TOOL) buildx create --name $(BUILDX_BUILDER)
	rc=0; $(CONTAINER_TOOL) buildx build --builder $(BUILDX_BUILDER) --platform=$(PLATFORMS) --push --tag ${IMG} . || rc=$$?; \
	  $(CONTAINER_TOOL) buildx rm $(BUILDX_BUILDER) || true; exit $$rc

# dist/install.yaml installs what `make deploy` does, with server-side apply
# as make deploy uses: client-side apply also works while each CRD, as the
# JSON of its last-applied annotation, stays under 256 KiB (test-install
# checks; docs/install.md gives their sizes, and test/docs checks those).
.PHONY: build-installer
build-installer: manifests generate kustomize ## Generate a consolidated YAML with CRDs and deployment (install it with kubectl apply --server-side -f).
	mkdir -p dist
	cd config/manager && $(KUSTOMIZE) edit set image controller=${IMG}
	{ echo '# mydeployment-operator $(VERSION) ($(IMG)): kubectl apply --server-side -f install.yaml'; \
	  $(KUSTOMIZE) build config/default; } > dist/install.yaml

##@ Deployment

ifndef ignore-not-found
  ignore-not-found = false
endif

.PHONY: install
install: manifests kustomize kubectl ## Install CRDs into the K8s cluster specified in ~/.kube/config.
	$(KUSTOMIZE) build config/crd | $(KUBECTL) apply --server-side -f -

# Deleting the CRDs deletes every MyDeployment and Application and, through
# their owner references, their pods, Services and Ingresses. So undeploy
# keeps the CRDs (config/undeploy), and uninstall refuses while any
# MyDeployment or Application exists unless FORCE=true; then it deletes them
# first, in the foreground, while their kinds still exist: the garbage
# collector cannot collect the children of an owner whose kind is gone.
# Leaving for good without a restart: eject each MyDeployment first
# (docs/migrate.md).
OUR_KINDS = mydeployments.apps.mydeployment.io,applications.apps.mydeployment.io

define refuse-while-custom-resources
	@if [ "$(FORCE)" != true ]; then \
	  left=$$($(KUBECTL) get $(OUR_KINDS) -A -o name 2>/dev/null | wc -l); \
	  if [ "$$left" -gt 0 ]; then \
	    echo "make uninstall: $$left MyDeployments and Applications exist; deleting the CRDs would delete them and their pods." >&2; \
	    echo "Eject each MyDeployment first (kubectl mydeployment eject md/NAME -n NAMESPACE: its pods go on under a Deployment)," >&2; \
	    echo "or delete them with their pods: make uninstall FORCE=true" >&2; exit 1; fi; fi
endef

define delete-custom-resources
	@for r in applications.apps.mydeployment.io mydeployments.apps.mydeployment.io; do \
	  if $(KUBECTL) get crd $$r >/dev/null 2>&1; then echo "$(KUBECTL) delete $$r --all -A --cascade=foreground"; \
	    $(KUBECTL) delete $$r --all -A --cascade=foreground; fi; done
endef

.PHONY: uninstall
uninstall: manifests kustomize kubectl ## Uninstall CRDs from the K8s cluster specified in ~/.kube/config; refused while MyDeployments or Applications exist (FORCE=true deletes them, with their pods). Call with ignore-not-found=true to ignore resource not found errors during deletion.
	$(refuse-while-custom-resources)
	$(delete-custom-resources)
	$(KUSTOMIZE) build config/crd | $(KUBECTL) delete --ignore-not-found=$(ignore-not-found) -f -

.PHONY: deploy
deploy: manifests kustomize kubectl ## Deploy controller to the K8s cluster specified in ~/.kube/config (IMG=... your image).
	cd config/manager && $(KUSTOMIZE) edit set image controller=${IMG}
	$(KUSTOMIZE) build config/default | $(KUBECTL) apply --server-side -f -

# The operator's namespace goes last, and only while it holds no MyDeployment
# or Application: deleting a namespace deletes what is in it.
.PHONY: undeploy
undeploy: kustomize kubectl ## Undeploy controller from the K8s cluster specified in ~/.kube/config; the CRDs, every MyDeployment and Application and their pods stay. Call with ignore-not-found=true to ignore resource not found errors during deletion.
	$(KUSTOMIZE) build config/undeploy | $(KUBECTL) delete --ignore-not-found=$(ignore-not-found) -f -
	@ns=$$($(KUSTOMIZE) build config/default | awk '/^kind: Namespace$$/{n=1} n&&!done&&/^  name: /{print $$2; done=1}'); \
	if [ -n "$$($(KUBECTL) get $(OUR_KINDS) -n $$ns -o name 2>/dev/null)" ]; then \
	  echo "keeping namespace $$ns: it holds MyDeployments or Applications"; \
	else echo "$(KUBECTL) delete namespace $$ns"; $(KUBECTL) delete namespace $$ns --ignore-not-found=$(ignore-not-found); fi

##@ Dependencies

## Location to install dependencies to
LOCALBIN ?= $(shell pwd)/bin
$(LOCALBIN):
	mkdir -p $(LOCALBIN)

## Tool Binaries: built from the Go module proxy by hack/tools.sh (pins in
## hack/tools/*/go.mod), cached outside the repo by version, linked into bin/.
## kubectl for install, deploy and their reverses: the one on PATH if there
## is one, else the project's own (bin/kubectl, built with the control plane).
KUBECTL ?= $(or $(shell command -v kubectl 2>/dev/null),$(LOCALBIN)/kubectl)
KUSTOMIZE ?= $(LOCALBIN)/kustomize
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen
ENVTEST ?= $(LOCALBIN)/setup-envtest
OPERATOR_SDK ?= $(LOCALBIN)/operator-sdk
OPM ?= $(LOCALBIN)/opm
## envtest's KUBEBUILDER_ASSETS: kube-apiserver, etcd and kubectl built from source.
ENVTEST_ASSETS ?= $(LOCALBIN)/k8s

.PHONY: kustomize controller-gen setup-envtest operator-sdk opm grpc-health-probe olm helm olmv1 control-plane kwok-tools real-node-tools kubectl krew-validate
kubectl: ## Use the kubectl on PATH; build the project's own (with the control plane) only if there is none.
	@if [ -x "$(KUBECTL)" ] || command -v "$(KUBECTL)" >/dev/null 2>&1; then echo "kubectl: $(KUBECTL)" >&2; \
	else hack/tools.sh control-plane; fi
kustomize: ## Build kustomize if necessary.
	@hack/tools.sh kustomize
controller-gen: ## Build controller-gen if necessary.
	@hack/tools.sh controller-gen
setup-envtest: ## Build setup-envtest if necessary (offline: envtest uses bin/k8s, built from source).
	@hack/tools.sh setup-envtest
operator-sdk: ## Build operator-sdk if necessary.
	@hack/tools.sh operator-sdk
opm: ## Build opm if necessary.
	@hack/tools.sh opm
grpc-health-probe: ## Build grpc_health_probe (for the catalog image) if necessary.
	@hack/tools.sh grpc-health-probe
krew-validate: ## Build krew's manifest validator (validate-krew-manifest) if necessary.
	@hack/tools.sh krew-validate
olm: ## Build OLM's binaries if necessary (bin/olm, bin/catalog-operator, bin/package-server, bin/copy-content, bin/cpb; bin/olm-crds).
	@hack/tools.sh olm
helm: ## Build helm if necessary (renders OLM's chart for make olm-local).
	@hack/tools.sh helm
olmv1: ## Build OLM v1's catalogd and operator-controller and cert-manager if necessary (bin/olmv1-crds: their CRDs).
	@hack/tools.sh olmv1
control-plane: ## Build kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and etcd if necessary (bin/k8s).
	@hack/tools.sh control-plane
kwok-tools: control-plane ## Build kwok and kwokctl if necessary.
	@hack/tools.sh kwok kwokctl
real-node-tools: ## Build kubelet, kube-proxy and CoreDNS if necessary (the real node of make local-up REAL_NODES=1 and its cluster DNS).
	@hack/tools.sh kubelet kube-proxy coredns

BUNDLE_CSV = bundle/manifests/mydeployment-operator.clusterserviceversion.yaml
.PHONY: bundle
bundle: manifests kustomize operator-sdk ## Generate bundle manifests and metadata (the manager named by the digest make images gives it; USE_IMAGE_DIGESTS=false: by tag), then validate generated files.
	$(OPERATOR_SDK) generate kustomize manifests -q --interactive=false
	cd config/manager && $(KUSTOMIZE) edit set image controller=$(IMG)
	cd config/scorecard && $(KUSTOMIZE) edit set image mydeployment-scorecard-tests=$(SCORECARD_IMG)
	rm -rf bundle/manifests # generate bundle never removes a manifest its input no longer has
	$(KUSTOMIZE) build config/manifests | $(OPERATOR_SDK) generate bundle $(BUNDLE_GEN_FLAGS)
	# createdAt changes on every run; without it the bundle is a pure function of its sources.
	sed -i '/^    createdAt: /d' $(BUNDLE_CSV)
	# The manager image, named in the deployment and where catalogs and
	# disconnected mirrors look for it (containerImage, relatedImages): by
	# digest, which makes the bundle a function of the manager's sources too.
ifeq ($(USE_IMAGE_DIGESTS),true)
	ref=$$(hack/images.sh digest $(IMG)) && \
	  sed -i -e 's|^\( *\)image: $(IMG)$$|\1image: '"$$ref"'|' -e 's|^    containerImage: .*|    containerImage: '"$$ref"'|' $(BUNDLE_CSV) && \
	  { grep -qF "image: $$ref" $(BUNDLE_CSV) || { echo "make bundle: no container of the CSV ran $(IMG)" >&2; exit 1; }; } && \
	  printf '  relatedImages:\n  - image: %s\n    name: manager\n' "$$ref" >>$(BUNDLE_CSV)
else
	sed -i -e 's|^    containerImage: .*|    containerImage: $(IMG)|' \
	  -e 's|^    features.operators.openshift.io/disconnected: .*|    features.operators.openshift.io/disconnected: "false"|' $(BUNDLE_CSV)
	printf '  relatedImages:\n  - image: %s\n    name: manager\n' '$(IMG)' >>$(BUNDLE_CSV)
endif
	$(OPERATOR_SDK) bundle validate ./bundle
ifeq ($(origin IMAGE_TAG_BASE),file)
	@echo "note: IMAGE_TAG_BASE is not set, so the images are named from its default $(IMAGE_TAG_BASE), which no registry serves:"
	@echo "note:   bundle/ names the manager $(IMG)$(if $(filter true,$(USE_IMAGE_DIGESTS)), (by digest)) and the scorecard tests $(SCORECARD_IMG);"
	@echo "note:   bundle-build and catalog-build would tag $(BUNDLE_IMG) and $(CATALOG_IMG)."
	@echo "note: to name images you can push: make bundle IMAGE_TAG_BASE=<registry>/mydeployment-operator (or IMG=..., SCORECARD_IMG=...)"
endif

.PHONY: bundle-validate
bundle-validate: operator-sdk ## Validate bundle/ with the operatorframework suite (OperatorHub, capabilities, categories, deprecated APIs, good practices).
	$(OPERATOR_SDK) bundle validate ./bundle --select-optional suite=operatorframework
	go test ./test/olm/ -count=1

# The community-operators pull request (OperatorHub.io): the bundle laid out
# as operators/mydeployment-operator/<version>/{manifests,metadata} plus ci.yaml
# (updateGraph: replaces-mode; the CSV copy replaces the last release), then
# the pipeline's offline static checks on it (test/olm/operatorhub).
.PHONY: operatorhub
operatorhub: ## Write the community-operators submission into dist/operatorhub and run the pipeline's offline static checks on it.
	go run ./test/olm/operatorhub/cmd -bundle bundle -releases catalog/releases -out dist/operatorhub

.PHONY: scorecard-local
scorecard-local: ## Run every scorecard test of the bundle offline, built-in and ours (chroot: needs root), and fail unless all pass.
	@hack/tools.sh scorecard-test
	CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o $(LOCALBIN)/mydeployment-scorecard-tests ./test/scorecard/cmd
	SCORECARD_IMG=$(SCORECARD_IMG) hack/scorecard-local.sh

.PHONY: scorecard-image-build
scorecard-image-build: ## Build the image of our scorecard tests (test/scorecard; static binary, FROM scratch) with CONTAINER_TOOL.
	CGO_ENABLED=0 GOOS=linux GOARCH=$(GOARCH) go build -trimpath -ldflags="-s -w" -o dist/scorecard-tests-linux-$(GOARCH) ./test/scorecard/cmd
	$(CONTAINER_BUILD) -f scorecard.Dockerfile --build-arg TARGETARCH=$(GOARCH) -t $(SCORECARD_IMG) .

.PHONY: scorecard-image-push
scorecard-image-push: ## Push the image of our scorecard tests.
	$(MAKE) docker-push IMG=$(SCORECARD_IMG)

.PHONY: bundle-build
bundle-build: ## Build the bundle image.
	$(CONTAINER_BUILD) -f bundle.Dockerfile -t $(BUNDLE_IMG) .

.PHONY: bundle-push
bundle-push: ## Push the bundle image.
	$(MAKE) docker-push IMG=$(BUNDLE_IMG)

# The image tag given to the resulting catalog image (e.g. make catalog-build CATALOG_IMG=example.com/operator-catalog:v0.2.0).
CATALOG_IMG ?= $(IMAGE_TAG_BASE)-catalog:v$(VERSION)

# The file-based catalog (FBC): every release recorded in catalog/releases
# plus the current bundle/ (image BUNDLE_IMG), one stable channel in which each
# version replaces the one before it, checked by opm validate.
# CATALOG_INLINE=1 blanks the images (OLM then needs no unpack job: a local
# cluster with no container runtime); CATALOG_UNTIL=x.y.z stops at x.y.z.
CATALOG_BUNDLE_IMAGE ?= $(BUNDLE_IMG)
.PHONY: catalog
catalog: opm ## Render the file-based catalog (released bundles + bundle/) into dist/catalog and validate it.
	VERSION=$(VERSION) DEFAULT_CHANNEL=$(DEFAULT_CHANNEL) CATALOG_BUNDLE_IMAGE=$(CATALOG_BUNDLE_IMAGE) hack/catalog.sh

# Record the current bundle as released (before bumping VERSION): the next
# catalog keeps it as the version the new one replaces. Refused until
# CHANGELOG.md has a dated section for VERSION ("## [x.y.z] - YYYY-MM-DD").
.PHONY: catalog-release
catalog-release: opm ## Record bundle/ (image BUNDLE_IMG) in catalog/releases, as the next version's upgrade source.
	VERSION=$(VERSION) BUNDLE_IMG=$(BUNDLE_IMG) hack/catalog.sh release

.PHONY: catalog-build
catalog-build: catalog ## Build the catalog image (FROM scratch, configs only) with CONTAINER_TOOL.
	$(CONTAINER_BUILD) -f catalog.Dockerfile -t $(CATALOG_IMG) .

# Push the catalog image.
.PHONY: catalog-push
catalog-push: ## Push a catalog image.
	$(MAKE) docker-push IMG=$(CATALOG_IMG)

##@ Images without Docker (a local registry; docs/images.md)

# make images builds every image (manager, bundle and the released bundles,
# the catalog in its serving form, scorecard tests, the test web app) from
# the Dockerfiles, in Go with no container runtime and no base image, and
# pushes them to the local registry under the names a cluster pulls them by,
# without their host: mydeployment.io/mydeployment-operator:v0.3.0 is
# LOCAL_REGISTRY/mydeployment-operator:v0.3.0, what containerd asks a mirror
# of mydeployment.io for. The same commit gives the same digests: the
# manager's linux/amd64 image is the one the CSV names by digest (make
# bundle), pushed by digest only when GOARCH is another.
LOCAL_REGISTRY ?= 127.0.0.1:5001
LOCAL_REGISTRY_DIR ?= $(LOCALBIN)/local/registry
TESTWEB_IMG_BASE ?= $(patsubst ./%,%,$(dir $(IMAGE_TAG_BASE)))mydeployment-testweb
# A shell for the tests' Jobs (hack/realnode/sh: sh -c with the core utilities in process).
TESTSH_IMG ?= $(patsubst ./%,%,$(dir $(IMAGE_TAG_BASE)))mydeployment-testsh:v1

.PHONY: images
images: opm grpc-health-probe catalog local-registry scorecard-test-tool ## Build every image without Docker and push it to the local registry; names and digests in bin/local/images.txt.
	VERSION=$(VERSION) GOARCH=$(GOARCH) IMG=$(IMG) BUNDLE_IMG=$(BUNDLE_IMG) CATALOG_IMG=$(CATALOG_IMG) \
	  SCORECARD_IMG=$(SCORECARD_IMG) TESTWEB_IMG_BASE=$(TESTWEB_IMG_BASE) TESTSH_IMG=$(TESTSH_IMG) LOCAL_REGISTRY=$(LOCAL_REGISTRY) hack/images.sh

.PHONY: scorecard-test-tool
scorecard-test-tool: ## Build operator-sdk's scorecard-test (bin/scorecard-test) if necessary.
	@hack/tools.sh scorecard-test

.PHONY: local-registry
local-registry: ## Start the local image registry in the background (idempotent; blobs and manifests kept in bin/local/registry).
	@LOCAL_REGISTRY=$(LOCAL_REGISTRY) LOCAL_REGISTRY_DIR=$(LOCAL_REGISTRY_DIR) IMAGE_TAG_BASE=$(IMAGE_TAG_BASE) hack/local-registry.sh up

.PHONY: local-registry-down
local-registry-down: ## Stop the local image registry (what it holds stays on disk).
	@LOCAL_REGISTRY=$(LOCAL_REGISTRY) LOCAL_REGISTRY_DIR=$(LOCAL_REGISTRY_DIR) hack/local-registry.sh down

.PHONY: print-local-registry
print-local-registry: ## Print the local image registry's address (host:port).
	@echo $(LOCAL_REGISTRY)
