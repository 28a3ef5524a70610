// Command cert-manager runs the part of cert-manager that OLM v1's
// WebhookProviderCertManager needs, as one host process: the controllers that
// issue a Certificate from a self-signed Issuer into its Secret, and the CA
// injector that copies the Certificate's CA into the caBundle of webhook
// configurations and CRDs annotated cert-manager.io/inject-ca-from.
//
// The controllers and the injector are cert-manager's own library packages;
// only this wiring is ours, because cert-manager's commands (cmd/controller,
// cmd/cainjector) are Go modules of their own that the module proxy does not
// serve. Their webhook (defaults and validation of cert-manager's objects) is
// left out: operator-controller writes complete objects.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
	"github.com/cert-manager/cert-manager/pkg/util"

	controllerpkg "github.com/cert-manager/cert-manager/pkg/controller"
	"github.com/cert-manager/cert-manager/pkg/controller/cainjector"

	// Each registers its controller with controllerpkg (init).
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	_ "github.com/cert-manager/cert-manager/pkg/controller/issuers"
	// The self-signed issuer type (issuers controller: Issuer Ready).
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

// controllers are the ones cert-manager's controller runs by default that a
// self-signed Issuer and its Certificates need.
var controllers = []string{
	"issuers",
	"certificaterequests-approver",
	"certificaterequests-issuer-selfsigned",
	"certificates-trigger",
	"certificates-issuing",
	"certificates-key-manager",
	"certificates-request-manager",
	"certificates-readiness",
	"certificates-revision-manager",
}

func main() {
	namespace := flag.String("cluster-resource-namespace", "cert-manager", "namespace of ClusterIssuers' secrets")
	klog.InitFlags(nil)
	flag.Parse() // controller-runtime defines --kubeconfig
	kubeconfig := flag.Lookup("kubeconfig").Value.String()
	if kubeconfig == "" {
		kubeconfig = os.Getenv("KUBECONFIG")
	}
	ctrl.SetLogger(klog.NewKlogr())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = logf.NewContext(ctx, klog.NewKlogr().WithName("cert-manager"))
	if err := run(ctx, kubeconfig, *namespace); err != nil {
		fmt.Fprintln(os.Stderr, "cert-manager:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig, namespace string) error {
	factory, err := controllerpkg.NewContextFactory(ctx, controllerpkg.ContextOptions{
		Kubeconfig:         kubeconfig,
		KubernetesAPIQPS:   20,
		KubernetesAPIBurst: 50,
		IssuerOptions:      controllerpkg.IssuerOptions{ClusterResourceNamespace: namespace},
		CertificateOptions: controllerpkg.CertificateOptions{
			// cert-manager's defaults.
			CertificateRequestMinimumBackoffDuration: time.Hour,
			CertificateRequestMaximumBackoffDuration: 32 * time.Hour,
		},
	})
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(controllers)+1)
	for _, name := range controllers {
		fn, ok := controllerpkg.Known()[name]
		if !ok {
			return fmt.Errorf("controller %s is not registered", name)
		}
		c, err := fn(factory)
		if err != nil {
			return fmt.Errorf("controller %s: %w", name, err)
		}
		wg.Go(func() {
			if err := c.Run(5, ctx); err != nil {
				errs <- fmt.Errorf("controller %s: %w", name, err)
			}
		})
	}
	// Informers are registered by the constructors above; start them now.
	shared, err := factory.Build()
	if err != nil {
		return err
	}
	shared.KubeSharedInformerFactory.Start(ctx.Done())
	shared.SharedInformerFactory.Start(ctx.Done())

	wg.Go(func() {
		if err := runCAInjector(ctx, kubeconfig); err != nil {
			errs <- fmt.Errorf("cainjector: %w", err)
		}
	})
	select {
	case err := <-errs:
		return err
	case <-ctx.Done():
	}
	wg.Wait()
	return nil
}

// runCAInjector runs cert-manager's cainjector for webhook configurations and
// CRDs, from Certificates (inject-ca-from) and Secrets, as cmd/cainjector does.
func runCAInjector(ctx context.Context, kubeconfig string) error {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	utilruntime.Must(admissionregistrationv1.AddToScheme(scheme))
	utilruntime.Must(cmapi.AddToScheme(scheme))
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	// The user agent names cainjector's field manager, as in cmd/cainjector.
	mgr, err := ctrl.NewManager(util.RestConfigWithUserAgent(cfg, "cainjector"), ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Secrets are watched as metadata only and read directly, as cainjector does.
		Client: client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
	})
	if err != nil {
		return err
	}
	if err := cainjector.RegisterAllInjectors(ctx, mgr, cainjector.SetupOptions{
		EnableCertificatesDataSource: true,
		EnabledReconcilersFor: map[string]bool{
			cainjector.MutatingWebhookConfigurationName:   true,
			cainjector.ValidatingWebhookConfigurationName: true,
			cainjector.CustomResourceDefinitionName:       true,
		},
	}); err != nil {
		return err
	}
	return mgr.Start(ctx)
}
