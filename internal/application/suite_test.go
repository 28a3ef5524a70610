package application

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/controller"
	"github.com/mydeployment-io/mydeployment-operator/internal/managercache"
	"github.com/mydeployment-io/mydeployment-operator/internal/podwatch"
)

// The suite runs both controllers as cmd/main.go wires them (one cache with
// both kinds' settings, the manager acting as its service account with
// config/rbac/role.yaml only), against a real kube-apiserver and etcd. There
// is no kubelet, no kube-controller-manager and no Ingress controller: tests
// mark pods Ready, write EndpointSlices and Ingress status themselves, as
// those would.

var (
	ctx       context.Context
	cancel    context.CancelFunc
	testEnv   *envtest.Environment
	k8sClient client.Client
	scheme    = runtime.NewScheme()
)

const timeout, interval = 20 * time.Second, 50 * time.Millisecond

func TestApplication(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Application Suite")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx, cancel = context.WithCancel(context.TODO())
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(appsv1beta1.AddToScheme(scheme)).To(Succeed())
	Expect(gatewayv1.Install(scheme)).To(Succeed())

	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		testEnv.BinaryAssetsDirectory = filepath.Join("..", "..", "bin", "k8s")
	}
	cfg, err := testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())

	pods := podwatch.NewIndex()
	cacheOpts, err := managercache.Compose(nil, controller.MyDeploymentCache(pods), Cache())
	Expect(err).NotTo(HaveOccurred())
	mgr, err := ctrl.NewManager(asManager(cfg), ctrl.Options{
		Scheme:                 scheme,
		Cache:                  cacheOpts,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	Expect(err).NotTo(HaveOccurred())
	_, err = controller.SetupMyDeployment(ctx, mgr, controller.MyDeploymentOptions{Workers: 2, Pods: pods})
	Expect(err).NotTo(HaveOccurred())
	r, err := Setup(mgr, Options{})
	Expect(err).NotTo(HaveOccurred())
	Expect(r.routesServed.Load()).To(BeFalse(), "the Gateway API CRDs are installed by the route test only")
	go func() {
		defer GinkgoRecover()
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
})

var _ = AfterSuite(func() {
	cancel()
	Expect(testEnv.Stop()).To(Succeed())
})

// asManager binds config/rbac/role.yaml to a service account and returns
// cfg impersonating it: a verb missing from the RBAC markers fails here.
func asManager(cfg *rest.Config) *rest.Config {
	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "rbac", "role.yaml"))
	Expect(err).NotTo(HaveOccurred())
	role := &rbacv1.ClusterRole{}
	Expect(yaml.Unmarshal(raw, role)).To(Succeed())
	Expect(k8sClient.Create(ctx, role)).To(Succeed())
	Expect(k8sClient.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: "manager"}},
	})).To(Succeed())
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:default:manager"}
	return c
}
