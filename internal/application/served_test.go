package application

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/managercache"
)

// informerTypes records the type of every informer a cache builds.
type informerTypes struct {
	mu    sync.Mutex
	types map[reflect.Type]bool
}

func (r *informerTypes) newInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration,
	indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	r.mu.Lock()
	r.types[reflect.TypeOf(obj)] = true
	r.mu.Unlock()
	return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
}

func (r *informerTypes) list() []reflect.Type {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []reflect.Type
	for t := range r.types {
		out = append(out, t)
	}
	return out
}

// This spec runs its own API server, which starts with the MyDeployment CRD
// only, as a cluster upgraded from a release without Application would.
var _ = Describe("A manager started before the Application CRD", func() {
	It("starts the Application controller once the CRD is installed, reading only what Cache lists", func() {
		crds := filepath.Join("..", "..", "config", "crd", "bases")
		env := &envtest.Environment{
			CRDInstallOptions: envtest.CRDInstallOptions{
				Paths:              []string{filepath.Join(crds, "apps.mydeployment.io_mydeployments.yaml")},
				ErrorIfPathMissing: true,
			},
		}
		if os.Getenv("KUBEBUILDER_ASSETS") == "" {
			env.BinaryAssetsDirectory = filepath.Join("..", "..", "bin", "k8s")
		}
		cfg, err := env.Start()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(env.Stop)

		// The Application controller alone, with only the cache it asks for:
		// an informer of any other type would be a read of another kind's view.
		needs := Cache()
		seen := &informerTypes{types: map[reflect.Type]bool{}}
		needs.NewInformer = seen.newInformer
		cacheOpts, err := managercache.Compose(nil, needs)
		Expect(err).NotTo(HaveOccurred())
		mgr, err := ctrl.NewManager(cfg, ctrl.Options{
			Scheme:                 scheme,
			Cache:                  cacheOpts,
			Metrics:                metricsserver.Options{BindAddress: "0"},
			HealthProbeBindAddress: "0",
			// the suite's manager runs a controller of the same name in this process
			Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(Served(mgr.GetRESTMapper())).To(BeFalse())
		Expect(SetupWhenServed(mgr, 200*time.Millisecond, Options{})).To(Succeed())
		mctx, mcancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(done)
			Expect(mgr.Start(mctx)).To(Succeed())
		}()
		DeferCleanup(func() { mcancel(); Eventually(done, timeout).Should(BeClosed()) })

		By("installing the Application CRD while the manager runs")
		_, err = envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{
			Paths: []string{filepath.Join(crds, "apps.mydeployment.io_applications.yaml")}, ErrorIfPathMissing: true})
		Expect(err).NotTo(HaveOccurred())
		c, err := client.New(cfg, client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
		app := minimal("default", "late")
		Eventually(func() error { return c.Create(ctx, app) }, timeout, interval).Should(Succeed())

		By("seeing it reconciled: its MyDeployment created and owned by it")
		md := &appsv1beta1.MyDeployment{}
		Eventually(func() error { return c.Get(ctx, key(app), md) }, timeout, interval).Should(Succeed())
		Expect(metav1.IsControlledBy(md, app)).To(BeTrue())

		var listed []reflect.Type
		for obj := range Cache().Objects {
			listed = append(listed, reflect.TypeOf(obj))
		}
		Expect(seen.list()).NotTo(BeEmpty())
		Expect(seen.list()).To(HaveEach(BeElementOf(listed)), "informers of types Cache does not list")
	})
})
