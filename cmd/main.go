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

package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	// Import all Kubernetes client auth plugins (e.g. Azure, GCP, OIDC, etc.)
	// to ensure that exec-entrypoint and run can make use of them.
	_ "k8s.io/client-go/plugin/pkg/client/auth"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/application"
	"github.com/mydeployment-io/mydeployment-operator/internal/controller"
	"github.com/mydeployment-io/mydeployment-operator/internal/faultclient"
	"github.com/mydeployment-io/mydeployment-operator/internal/memlimit"
	"github.com/mydeployment-io/mydeployment-operator/internal/upgrade"
	webhookv1beta1 "github.com/mydeployment-io/mydeployment-operator/internal/webhook/v1beta1"
	// +kubebuilder:scaffold:imports
)

var (
	scheme   = runtime.NewScheme()
	setupLog = ctrl.Log.WithName("setup")
)

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))

	utilruntime.Must(appsv1beta1.AddToScheme(scheme))
	// +kubebuilder:scaffold:scheme
}

// nolint:gocyclo
func main() {
	var metricsAddr string
	var metricsCertPath, metricsCertName, metricsCertKey string
	var webhookCertPath, webhookCertName, webhookCertKey string
	var enableLeaderElection bool
	var probeAddr string
	var secureMetrics bool
	var enableHTTP2 bool
	var tlsOpts []func(*tls.Config)
	var workers int
	var qps float64
	var burst int
	var leaseDuration, renewDeadline, retryPeriod time.Duration
	var leaderElectionNamespace string
	var syncPeriod time.Duration
	var pprofAddr string
	var statusBatchPeriod time.Duration
	var apiCompression bool
	flag.IntVar(&workers, "workers", 10, "How many MyDeployments are reconciled in parallel. One sync does "+
		"the work of both of kube-controller-manager's Deployment and ReplicaSet syncs (5 workers each by default).")
	flag.Float64Var(&qps, "kube-api-qps", 50, "Client-side rate limit (requests per second) towards the API server.")
	flag.IntVar(&burst, "kube-api-burst", 100, "Client-side burst towards the API server.")
	flag.BoolVar(&apiCompression, "kube-api-compression", false, "Accept gzip-compressed responses and "+
		"watch streams from the API server. Off by default, as in kube-controller-manager: compression costs "+
		"the API server CPU on every event it sends, and saves only bandwidth, which is plentiful next to it.")
	flag.DurationVar(&syncPeriod, "sync-period", 0, "How often every cached object is re-reconciled "+
		"with nothing changed (0: controller-runtime's default, 10h). The benchmark shortens it to prove "+
		"that a resync writes nothing.")
	flag.DurationVar(&statusBatchPeriod, "status-batch-period", controller.DefaultStatusBatchPeriod,
		"The least time between two status writes of one MyDeployment while a rollout only counts its pods "+
			"up and down; a new generation, a condition change and the settled status are written at once "+
			"(0: write every change at once).")
	flag.StringVar(&pprofAddr, "pprof-bind-address", "", "The address the pprof endpoint binds to "+
		"(e.g. 127.0.0.1:6060); empty disables it.")
	flag.StringVar(&metricsAddr, "metrics-bind-address", "0", "The address the metrics endpoint binds to. "+
		"Use :8443 for HTTPS or :8080 for HTTP, or leave as 0 to disable the metrics service.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "The address the probe endpoint binds to.")
	flag.BoolVar(&enableLeaderElection, "leader-elect", false,
		"Enable leader election for controller manager. "+
			"Enabling this will ensure there is only one active controller manager.")
	// controller-runtime's defaults; the chaos suite shortens them to test failover quickly.
	flag.DurationVar(&leaseDuration, "leader-elect-lease-duration", 15*time.Second,
		"How long a non-leader waits before it may take over an unrenewed lease.")
	flag.DurationVar(&renewDeadline, "leader-elect-renew-deadline", 10*time.Second,
		"How long the leader retries renewing before it gives up leadership.")
	flag.DurationVar(&retryPeriod, "leader-elect-retry-period", 2*time.Second,
		"How often leader election clients retry.")
	flag.StringVar(&leaderElectionNamespace, "leader-election-namespace", "",
		"Namespace of the leader election lease; empty: the manager's own namespace (in a cluster).")
	flag.BoolVar(&secureMetrics, "metrics-secure", true,
		"If set, the metrics endpoint is served securely via HTTPS. Use --metrics-secure=false to use HTTP instead.")
	flag.StringVar(&webhookCertPath, "webhook-cert-path", "", "The directory that contains the webhook certificate.")
	flag.StringVar(&webhookCertName, "webhook-cert-name", "tls.crt", "The name of the webhook certificate file.")
	flag.StringVar(&webhookCertKey, "webhook-cert-key", "tls.key", "The name of the webhook key file.")
	flag.StringVar(&metricsCertPath, "metrics-cert-path", "",
		"The directory that contains the metrics server certificate.")
	flag.StringVar(&metricsCertName, "metrics-cert-name", "tls.crt", "The name of the metrics server certificate file.")
	flag.StringVar(&metricsCertKey, "metrics-cert-key", "tls.key", "The name of the metrics server key file.")
	flag.BoolVar(&enableHTTP2, "enable-http2", false,
		"If set, HTTP/2 will be enabled for the metrics and webhook servers")
	// Production logging (JSON, each line with the object's key); --zap-devel for humans.
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()

	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))

	// if the enable-http2 flag is false (the default), http/2 should be disabled
	// due to its vulnerabilities. More specifically, disabling http/2 will
	// prevent from being vulnerable to the HTTP/2 Stream Cancellation and
	// Rapid Reset CVEs. For more information see:
	// - https://github.com/advisories/GHSA-qppj-fm5r-hxr3
	// - https://github.com/advisories/GHSA-4374-p667-p6c8
	disableHTTP2 := func(c *tls.Config) {
		setupLog.Info("disabling http/2")
		c.NextProtos = []string{"http/1.1"}
	}

	if !enableHTTP2 {
		tlsOpts = append(tlsOpts, disableHTTP2)
	}

	// Create watchers for metrics and webhooks certificates
	var metricsCertWatcher, webhookCertWatcher *certwatcher.CertWatcher

	// Initial webhook TLS options
	webhookTLSOpts := tlsOpts

	if len(webhookCertPath) > 0 {
		setupLog.Info("Initializing webhook certificate watcher using provided certificates",
			"webhook-cert-path", webhookCertPath, "webhook-cert-name", webhookCertName, "webhook-cert-key", webhookCertKey)

		var err error
		webhookCertWatcher, err = certwatcher.New(
			filepath.Join(webhookCertPath, webhookCertName),
			filepath.Join(webhookCertPath, webhookCertKey),
		)
		if err != nil {
			setupLog.Error(err, "Failed to initialize webhook certificate watcher")
			os.Exit(1)
		}

		webhookTLSOpts = append(webhookTLSOpts, func(config *tls.Config) {
			config.GetCertificate = webhookCertWatcher.GetCertificate
		})
	}

	webhookServer := webhook.NewServer(webhook.Options{
		TLSOpts: webhookTLSOpts,
	})

	// Metrics endpoint is enabled in 'config/default/kustomization.yaml'. The Metrics options configure the server.
	// More info:
	// - https://pkg.go.dev/sigs.k8s.io/controller-runtime@v0.21.0/pkg/metrics/server
	// - https://book.kubebuilder.io/reference/metrics.html
	metricsServerOptions := metricsserver.Options{
		BindAddress:   metricsAddr,
		SecureServing: secureMetrics,
		TLSOpts:       tlsOpts,
	}

	if secureMetrics {
		// FilterProvider is used to protect the metrics endpoint with authn/authz.
		// These configurations ensure that only authorized users and service accounts
		// can access the metrics endpoint. The RBAC are configured in 'config/rbac/kustomization.yaml'. More info:
		// https://pkg.go.dev/sigs.k8s.io/controller-runtime@v0.21.0/pkg/metrics/filters#WithAuthenticationAndAuthorization
		metricsServerOptions.FilterProvider = filters.WithAuthenticationAndAuthorization
	}

	// If the certificate is not specified, controller-runtime will automatically
	// generate self-signed certificates for the metrics server. While convenient for development and testing,
	// this setup is not recommended for production.
	//
	// TODO(user): If you enable certManager, uncomment the following lines:
	// - [METRICS-WITH-CERTS] at config/default/kustomization.yaml to generate and use certificates
	// managed by cert-manager for the metrics server.
	// - [PROMETHEUS-WITH-CERTS] at config/prometheus/kustomization.yaml for TLS certification.
	if len(metricsCertPath) > 0 {
		setupLog.Info("Initializing metrics certificate watcher using provided certificates",
			"metrics-cert-path", metricsCertPath, "metrics-cert-name", metricsCertName, "metrics-cert-key", metricsCertKey)

		var err error
		metricsCertWatcher, err = certwatcher.New(
			filepath.Join(metricsCertPath, metricsCertName),
			filepath.Join(metricsCertPath, metricsCertKey),
		)
		if err != nil {
			setupLog.Error(err, "to initialize metrics certificate watcher", "error", err)
			os.Exit(1)
		}

		metricsServerOptions.TLSOpts = append(metricsServerOptions.TLSOpts, func(config *tls.Config) {
			config.GetCertificate = metricsCertWatcher.GetCertificate
		})
	}

	restConfig := ctrl.GetConfigOrDie()
	restConfig.QPS, restConfig.Burst = float32(qps), burst
	// No gzip, as kube-controller-manager and kube-scheduler do (kubernetes#80919):
	// the API server compresses a WatchList response, every later event of the
	// watch included, for any client that accepts gzip (WatchListCompression,
	// on by default since 1.37). Next to the API server that is CPU spent on
	// both sides for bandwidth nobody is short of; docs/benchmarks has figures.
	restConfig.DisableCompression = !apiCompression
	// WATCH_NAMESPACE (OLM sets it from olm.targetNamespaces): a comma-separated
	// list of namespaces to watch; empty means all namespaces.
	var namespaces []string
	for _, ns := range strings.Split(os.Getenv("WATCH_NAMESPACE"), ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			namespaces = append(namespaces, ns)
		}
	}
	if percent := memlimit.GCPercent(); percent > 0 {
		setupLog.Info("garbage collection target", "GOGC", percent)
	}
	if limit := memlimit.FromCgroup(); limit > 0 {
		setupLog.Info("soft memory limit from the container's", "bytes", limit)
	}
	setupLog.Info("watching", "namespaces", namespaces, "workers", workers, "qps", qps, "burst", burst)

	// One cache, each kind's controller adding what it reads: MyDeployment's
	// pods (trimmed, labelled) and everything else of its, then the
	// Application's labelled Services, Ingresses and EndpointSlices.
	pods := controller.NewPodIndex()
	cacheOpts := controller.CacheOptions(namespaces, pods)
	application.AddToCache(&cacheOpts)
	if syncPeriod > 0 {
		cacheOpts.SyncPeriod = &syncPeriod
	}

	ctx := ctrl.SetupSignalHandler()
	// Fault injection for the chaos suite only (test/chaos); nothing sets it in production.
	faults, err := faultclient.FromEnv()
	if err != nil {
		setupLog.Error(err, "bad fault injection setting")
		os.Exit(1)
	}
	var newClient client.NewClientFunc
	if faults != nil {
		setupLog.Info("FAULT INJECTION ENABLED", "config", *faults)
		newClient = faultclient.NewClientFunc(*faults)
	}
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme:                 scheme,
		Cache:                  cacheOpts,
		PprofBindAddress:       pprofAddr,
		Metrics:                metricsServerOptions,
		WebhookServer:          webhookServer,
		HealthProbeBindAddress: probeAddr,
		LeaderElection:         enableLeaderElection,
		LeaderElectionID:       "d2cb53c1.mydeployment.io",
		// nil unless fault injection is on: then the chaos suite's faulty client.
		NewClient: newClient,
		// leader election timing and namespace (a manager run outside a cluster needs one)
		LeaderElectionNamespace: leaderElectionNamespace,
		LeaseDuration:           &leaseDuration,
		RenewDeadline:           &renewDeadline,
		RetryPeriod:             &retryPeriod,
		// LeaderElectionReleaseOnCancel defines if the leader should step down voluntarily
		// when the Manager ends. This requires the binary to immediately end when the
		// Manager is stopped, otherwise, this setting is unsafe. Setting this significantly
		// speeds up voluntary leader transitions as the new leader don't have to wait
		// LeaseDuration time first.
		//
		// In the default scaffold provided, the program ends immediately after
		// the manager stops, so would be fine to enable this option. However,
		// if you are doing or is intended to do any operation such as perform cleanups
		// after the manager stops then its usage might be unsafe.
		// LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		setupLog.Error(err, "unable to start manager")
		os.Exit(1)
	}

	if err := setupControllers(ctx, mgr, controller.Options{Workers: workers, StatusBatchPeriod: statusBatchPeriod, Pods: pods}); err != nil {
		setupLog.Error(err, "unable to create controllers")
		os.Exit(1)
	}
	// The validating webhooks need a serving certificate and a
	// ValidatingWebhookConfiguration that reaches it (OLM or cert-manager
	// provide both in a cluster); a manager run on a host without them sets
	// ENABLE_WEBHOOKS=false and relies on the CRDs' own rules.
	if os.Getenv("ENABLE_WEBHOOKS") != "false" {
		if err := setupWebhooks(mgr); err != nil {
			setupLog.Error(err, "unable to create webhooks")
			os.Exit(1)
		}
	}
	// +kubebuilder:scaffold:builder

	if metricsCertWatcher != nil {
		setupLog.Info("Adding metrics certificate watcher to manager")
		if err := mgr.Add(metricsCertWatcher); err != nil {
			setupLog.Error(err, "unable to add metrics certificate watcher to manager")
			os.Exit(1)
		}
	}

	if webhookCertWatcher != nil {
		setupLog.Info("Adding webhook certificate watcher to manager")
		if err := mgr.Add(webhookCertWatcher); err != nil {
			setupLog.Error(err, "unable to add webhook certificate watcher to manager")
			os.Exit(1)
		}
	}

	if err := setupChecks(mgr); err != nil {
		setupLog.Error(err, "unable to set up health checks")
		os.Exit(1)
	}

	setupLog.Info("starting manager")
	if err := mgr.Start(ctx); err != nil {
		setupLog.Error(err, "problem running manager")
		os.Exit(1)
	}
}

// setupControllers registers each kind's controller: MyDeployment (with
// OLM's Upgradeable condition, held while its rollouts run) and
// Application.
func setupControllers(ctx context.Context, mgr ctrl.Manager, mdOpts controller.Options) error {
	reconciler, err := controller.Setup(ctx, mgr, mdOpts)
	if err != nil {
		return fmt.Errorf("MyDeployment controller: %w", err)
	}
	// Under OLM (OPERATOR_CONDITION_NAME), hold operator upgrades while rollouts run.
	if err := upgrade.Setup(mgr, reconciler.Expectations.Pending); err != nil {
		return fmt.Errorf("reporting Upgradeable: %w", err)
	}
	// Without the Application CRD the manager runs MyDeployments alone, as
	// the release before Application did, rather than failing to start.
	if installed, err := application.Installed(mgr.GetRESTMapper()); err != nil {
		return fmt.Errorf("Application controller: %w", err)
	} else if !installed {
		setupLog.Info("the Application CRD is not installed: Application controller off (restart the manager after installing it)")
		return nil
	}
	if _, err := application.Setup(mgr); err != nil {
		return fmt.Errorf("Application controller: %w", err)
	}
	return nil
}

// setupWebhooks registers each kind's validating webhook.
func setupWebhooks(mgr ctrl.Manager) error {
	if err := webhookv1beta1.SetupMyDeploymentWebhookWithManager(mgr); err != nil {
		return fmt.Errorf("MyDeployment webhook: %w", err)
	}
	if err := webhookv1beta1.SetupApplicationWebhookWithManager(mgr); err != nil {
		return fmt.Errorf("Application webhook: %w", err)
	}
	return nil
}

// setupChecks adds /healthz (the manager runs) and /readyz (its caches
// have synced: before that it cannot act).
func setupChecks(mgr ctrl.Manager) error {
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	return mgr.AddReadyzCheck("readyz", func(req *http.Request) error {
		waitCtx, cancel := context.WithTimeout(req.Context(), time.Second)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(waitCtx) {
			return fmt.Errorf("caches not synced")
		}
		return nil
	})
}
