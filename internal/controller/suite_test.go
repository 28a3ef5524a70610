/*
Copyright 2026.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package controller

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/managercache"
	"github.com/mydeployment-io/mydeployment-operator/internal/podcontrol"
	"github.com/mydeployment-io/mydeployment-operator/internal/podwatch"
	"github.com/mydeployment-io/mydeployment-operator/internal/shard"
	"github.com/mydeployment-io/mydeployment-operator/internal/shardcache"
)

// The suite runs the controller exactly as cmd/main.go wires it, against a
// real kube-apiserver and etcd (envtest). There is no kubelet and no
// scheduler: tests mark pods Ready themselves, as Kubernetes' own deployment
// integration tests do, and unscheduled pods are deleted at once. The
// clients use envtest's rest.Config: QPS 1000, burst 2000 (the manager's
// default is 50/100), so timings here say little about production.

var (
	ctx     context.Context
	cancel  context.CancelFunc
	testEnv *envtest.Environment
	// reconciler is the running manager's.
	reconciler *MyDeploymentReconciler
	cfg        *rest.Config
	managerCfg *rest.Config // cfg as the manager's service account, with its RBAC only
	k8sClient  client.Client
	scheme     = runtime.NewScheme()
	// stopManager stops the running manager; startManager starts a new one.
	stopManager context.CancelFunc
)

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Controller Suite")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx, cancel = context.WithCancel(context.TODO())
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(appsv1beta1.AddToScheme(scheme)).To(Succeed())

	By("bootstrapping test environment")
	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	// Lists and watches filtered by shard, for the shards' slot caches
	// (shards_test.go); a request without a shard selector is unchanged.
	testEnv.ControlPlane.GetAPIServer().Configure().Append("feature-gates", "ShardedListAndWatch=true")
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		// Run from an IDE: use the binaries `make control-plane` built.
		testEnv.BinaryAssetsDirectory = filepath.Join("..", "..", "bin", "k8s")
	}
	var err error
	cfg, err = testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	managerCfg = asManager(ctx, cfg)
	startManager()
})

var _ = AfterSuite(func() {
	By("tearing down the test environment")
	if stopManager != nil {
		stopManager()
	}
	cancel()
	Expect(testEnv.Stop()).To(Succeed())
})

// startManager runs a new manager with the production wiring until
// stopManager is called; each change, if any, is applied to the reconciler
// before the manager starts (to inject a failure into one collaborator).
func startManager(changes ...func(*MyDeploymentReconciler)) *MyDeploymentReconciler {
	return startManagerWithPodWatch(nil, changes...)
}

// startManagerWithPodWatch is startManager with the pod cache's list and
// watch passed through wrap (nil: as they are), to make that one cache lag.
func startManagerWithPodWatch(wrap func(toolscache.ListerWatcher) toolscache.ListerWatcher,
	changes ...func(*MyDeploymentReconciler)) *MyDeploymentReconciler {
	return startManagerWith(managerCfg, wrap, changes...)
}

// startManagerCounting is startManager with every pod write the manager
// sends to the API server counted by writes (podWriteCounter), below its
// clients: what kube-apiserver receives, whichever client sent it.
func startManagerCounting(writes *podWriteCounter, changes ...func(*MyDeploymentReconciler)) *MyDeploymentReconciler {
	c := rest.CopyConfig(managerCfg)
	c.Wrap(writes.wrap)
	return startManagerWith(c, nil, changes...)
}

// startManagerWith runs a manager as startManager does, talking to the API
// server through restCfg, its pod cache's list and watch passed through
// wrap (nil: as they are).
func startManagerWith(restCfg *rest.Config, wrap func(toolscache.ListerWatcher) toolscache.ListerWatcher,
	changes ...func(*MyDeploymentReconciler)) *MyDeploymentReconciler {
	return startManagerOpts(managerOpts{restCfg: restCfg, wrap: wrap}, changes...)
}

// managerOpts are how a test's manager differs from cmd/main.go's.
type managerOpts struct {
	restCfg *rest.Config
	// wrap, if set, passes the pod cache's list and watch through it.
	wrap func(toolscache.ListerWatcher) toolscache.ListerWatcher
	// namespaces, if set, are the only ones cached (as WATCH_NAMESPACE says).
	namespaces []string
	// syncPeriod, if set, is the cache's resync period (--sync-period).
	syncPeriod time.Duration
	// shards, if set, is the replica's membership of active-active shards.
	shards *shard.Membership
	// slotCaches: with shards, a cache per slot held (shardcache), as on
	// an API server that filters by shard; else one cache of everything.
	slotCaches bool
}

// startManagerOpts runs a manager as startManager does, changed as o says.
func startManagerOpts(o managerOpts, changes ...func(*MyDeploymentReconciler)) *MyDeploymentReconciler {
	r, stop := runManager(o, changes...)
	reconciler, stopManager = r, stop
	return r
}

// runManager runs a manager as startManagerOpts does, without making it the
// suite's running one: its reconciler, and what stops it.
func runManager(o managerOpts, changes ...func(*MyDeploymentReconciler)) (*MyDeploymentReconciler, func()) {
	restCfg, wrap := o.restCfg, o.wrap
	podIndex := podwatch.NewIndex()
	needs := MyDeploymentCache(podIndex)
	if wrap != nil {
		newInformer := needs.NewInformer
		needs.NewInformer = func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration,
			indexers toolscache.Indexers) toolscache.SharedIndexInformer {
			if _, isPod := obj.(*corev1.Pod); isPod {
				lw = wrap(lw)
			}
			return newInformer(lw, obj, resync, indexers)
		}
	}
	cacheOpts, err := managercache.Compose(o.namespaces, needs)
	Expect(err).NotTo(HaveOccurred())
	if o.syncPeriod > 0 {
		cacheOpts.SyncPeriod = &o.syncPeriod
	}
	newCache := cache.New
	var sharded *shardcache.Cache
	if o.slotCaches {
		newCache = shardcache.NewCacheFunc(GinkgoLogr.WithName("shardcache"), func(c *shardcache.Cache) { sharded = c })
	}
	mgr, err := ctrl.NewManager(restCfg, ctrl.Options{
		Scheme:                 scheme,
		Cache:                  cacheOpts,
		NewCache:               newCache,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             ctrlConfigForTests(),
		NewClient:              podcontrol.NewClient,
	})
	Expect(err).NotTo(HaveOccurred())
	if sharded != nil {
		o.shards.Tell(sharded) // before the controller, as cmd/main.go does
	}
	mctx, mcancel := context.WithCancel(ctx)
	r, err := SetupMyDeployment(mctx, mgr, MyDeploymentOptions{Workers: 4, StatusBatchPeriod: DefaultStatusBatchPeriod,
		Pods: podIndex, Shards: o.shards})
	Expect(err).NotTo(HaveOccurred())
	if o.shards != nil {
		Expect(mgr.Add(o.shards)).To(Succeed())
	}
	for _, change := range changes {
		change(r)
	}
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		Expect(mgr.Start(mctx)).To(Succeed())
	}()
	return r, func() {
		mcancel()
		Eventually(done, 30*time.Second).Should(BeClosed())
	}
}

// ctrlConfigForTests lets the suite start a manager again after stopping one
// (a restart) in the same process, where controller names must otherwise be unique.
func ctrlConfigForTests() config.Controller {
	return config.Controller{SkipNameValidation: ptr.To(true)}
}
