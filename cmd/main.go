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
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	// Import all Kubernetes client auth plugins (e.g. Azure, GCP, OIDC, etc.)
	// to ensure that exec-entrypoint and run can make use of them.
	_ "k8s.io/client-go/plugin/pkg/client/auth"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/application"
	"github.com/mydeployment-io/mydeployment-operator/internal/controller"
	"github.com/mydeployment-io/mydeployment-operator/internal/faultclient"
	"github.com/mydeployment-io/mydeployment-operator/internal/lazylog"
	"github.com/mydeployment-io/mydeployment-operator/internal/managercache"
	"github.com/mydeployment-io/mydeployment-operator/internal/memlimit"
	"github.com/mydeployment-io/mydeployment-operator/internal/metrics"
	"github.com/mydeployment-io/mydeployment-operator/internal/podcontrol"
	"github.com/mydeployment-io/mydeployment-operator/internal/podwatch"
	"github.com/mydeployment-io/mydeployment-operator/internal/shard"
	"github.com/mydeployment-io/mydeployment-operator/internal/shardcache"
	"github.com/mydeployment-io/mydeployment-operator/internal/upgrade"
	webhookv1beta1 "github.com/mydeployment-io/mydeployment-operator/internal/webhook/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/webhookcert"
	// +kubebuilder:scaffold:imports
)

var (
	scheme   = runtime.NewScheme()
	setupLog = ctrl.Log.WithName("setup")
)

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))

	utilruntime.Must(appsv1beta1.AddToScheme(scheme))
	// The Application's HTTPRoutes (Gateway API), watched once served.
	utilruntime.Must(gatewayv1.Install(scheme))
	// +kubebuilder:scaffold:scheme
}

// flags are the manager's command-line settings.
type flags struct {
	metricsAddr, probeAddr, pprofAddr         string
	webhookAddr                               string
	metricsCert, webhookCert                  certFiles
	webhookCertMode                           string
	webhookCertSecret, webhookService         string
	webhookConfiguration                      string
	secureMetrics, enableHTTP2                bool
	enableLeaderElection                      bool
	leaseDuration, renewDeadline, retryPeriod time.Duration
	leaderElectionNamespace                   string
	shards                                    bool
	qps                                       float64
	burst                                     int
	apiCompression                            bool
	syncPeriod                                time.Duration
	workers                                   int
	statusBatchPeriod                         time.Duration
	inPlaceTimeout                            time.Duration
	zap                                       zap.Options
}

// certFiles name a server's certificate: a directory, and the certificate's
// and key's file names in it.
type certFiles struct{ dir, cert, key string }

// bind binds certFiles to the flags <server>-cert-path, -cert-name and
// -cert-key.
func (c *certFiles) bind(server string) {
	flag.StringVar(&c.dir, server+"-cert-path", "", "The directory that contains the "+server+" server certificate.")
	flag.StringVar(&c.cert, server+"-cert-name", "tls.crt", "The name of the "+server+" server certificate file.")
	flag.StringVar(&c.key, server+"-cert-key", "tls.key", "The name of the "+server+" server key file.")
}

// watch returns a watcher of the certificate (nil when no directory is
// given) and the TLS option that serves it; it fails if the files cannot be
// read.
func (c certFiles) watch(server string) (*certwatcher.CertWatcher, func(*tls.Config), error) {
	if c.dir == "" {
		return nil, nil, nil
	}
	setupLog.Info("Initializing certificate watcher using provided certificates", "server", server,
		"cert-path", c.dir, "cert-name", c.cert, "cert-key", c.key)
	w, err := certwatcher.New(filepath.Join(c.dir, c.cert), filepath.Join(c.dir, c.key))
	if err != nil {
		return nil, nil, fmt.Errorf("%s certificate watcher: %w", server, err)
	}
	return w, func(cfg *tls.Config) { cfg.GetCertificate = w.GetCertificate }, nil
}

// parseFlags binds every flag to a flags and parses the command line,
// exiting with a usage message on a bad one.
func parseFlags() *flags {
	f := &flags{}
	flag.IntVar(&f.workers, "workers", 10, "How many MyDeployments are reconciled in parallel. One sync does "+
		"the work of both of kube-controller-manager's Deployment and ReplicaSet syncs (5 workers each by default).")
	flag.Float64Var(&f.qps, "kube-api-qps", 50, "Client-side rate limit (requests per second) towards the API server.")
	flag.IntVar(&f.burst, "kube-api-burst", 100, "Client-side burst towards the API server.")
	flag.BoolVar(&f.apiCompression, "kube-api-compression", false, "Accept gzip-compressed responses and "+
		"watch streams from the API server. Off by default, as in kube-controller-manager: compression costs "+
		"the API server CPU on every event it sends, and saves only bandwidth, which is plentiful next to it.")
	flag.DurationVar(&f.syncPeriod, "sync-period", 0, "How often every cached object is re-reconciled "+
		"with nothing changed (0: controller-runtime's default, 10h). The benchmark shortens it to prove "+
		"that a resync writes nothing.")
	flag.DurationVar(&f.inPlaceTimeout, "in-place-timeout", controller.DefaultInPlaceTimeout,
		"How long an in-place update (update-mode InPlaceIfPossible) may take, from its start until the pod runs the new template, before the pod is replaced.")
	flag.DurationVar(&f.statusBatchPeriod, "status-batch-period", controller.DefaultStatusBatchPeriod,
		"The least time between two status writes of one MyDeployment while a rollout only counts its pods "+
			"up and down; a new generation, a condition change and the settled status are written at once "+
			"(0: write every change at once).")
	flag.StringVar(&f.pprofAddr, "pprof-bind-address", "", "The address the pprof endpoint binds to "+
		"(e.g. 127.0.0.1:6060); empty disables it.")
	flag.StringVar(&f.metricsAddr, "metrics-bind-address", "0", "The address the metrics endpoint binds to. "+
		"Use :8443 for HTTPS or :8080 for HTTP, or leave as 0 to disable the metrics service.")
	flag.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "The address the probe endpoint binds to.")
	flag.BoolVar(&f.enableLeaderElection, "leader-elect", false,
		"Enable leader election for controller manager. "+
			"Enabling this will ensure there is only one active controller manager.")
	// controller-runtime's defaults; the chaos suite shortens them to test failover quickly.
	flag.DurationVar(&f.leaseDuration, "leader-elect-lease-duration", 15*time.Second,
		"How long a non-leader waits before it may take over an unrenewed lease.")
	flag.DurationVar(&f.renewDeadline, "leader-elect-renew-deadline", 10*time.Second,
		"How long the leader retries renewing before it gives up leadership.")
	flag.DurationVar(&f.retryPeriod, "leader-elect-retry-period", 2*time.Second,
		"How often leader election clients retry.")
	flag.StringVar(&f.leaderElectionNamespace, "leader-election-namespace", "",
		"Namespace of the leader election lease; empty: the manager's own namespace (in a cluster).")
	flag.BoolVar(&f.shards, "shards", false,
		"Every replica reconciles (issue 56, in progress): each holds a Lease in the manager's namespace and syncs the "+
			"namespaces of the slots it holds; the leader-elect timings above time the Leases. Off: the leader "+
			"reconciles every namespace.")
	flag.BoolVar(&f.secureMetrics, "metrics-secure", true,
		"If set, the metrics endpoint is served securely via HTTPS. Use --metrics-secure=false to use HTTP instead.")
	flag.StringVar(&f.webhookAddr, "webhook-bind-address", ":9443", "The address (host:port) the webhook server "+
		"binds to. The webhook Service and OLM's webhook definitions call port 9443 of the pod: change the host only, "+
		"e.g. to the pod's IP.")
	f.webhookCert.bind("webhook")
	flag.StringVar(&f.webhookCertMode, "webhook-cert-mode", string(webhookcert.Provided),
		"Who provides the webhook's serving certificate: \""+string(webhookcert.SelfManaged)+"\" (the manager "+
			"makes it into --webhook-cert-secret, rotates it and injects its CA into --webhook-configuration; "+
			"the pod mounts the Secret at --webhook-cert-path) or \""+string(webhookcert.Provided)+"\" (OLM or "+
			"cert-manager writes the files at --webhook-cert-path and the caBundle).")
	flag.StringVar(&f.webhookCertSecret, "webhook-cert-secret", webhookcert.DefaultSecret,
		"The Secret, in the manager's namespace ($POD_NAMESPACE), of a self-managed webhook certificate.")
	flag.StringVar(&f.webhookService, "webhook-service", webhookcert.DefaultService,
		"The webhook's Service, whose DNS names a self-managed certificate is for.")
	flag.StringVar(&f.webhookConfiguration, "webhook-configuration", webhookcert.DefaultWebhookConfiguration,
		"The ValidatingWebhookConfiguration a self-managed certificate's CA is injected into.")
	f.metricsCert.bind("metrics")
	flag.BoolVar(&f.enableHTTP2, "enable-http2", false,
		"If set, HTTP/2 will be enabled for the metrics and webhook servers")
	// Production logging (JSON, each line with the object's key); --zap-devel for humans.
	f.zap.BindFlags(flag.CommandLine)
	flag.Parse()
	return f
}

func main() {
	f := parseFlags()
	// Every reconcile's logger gets the object's keys; they are encoded only
	// if it writes a line (lazylog).
	ctrl.SetLogger(lazylog.New(zap.New(zap.UseFlagOptions(&f.zap))))
	if percent := memlimit.GCPercent(); percent > 0 {
		setupLog.Info("garbage collection target", "GOGC", percent)
	}
	if limit := memlimit.FromCgroup(); limit > 0 {
		setupLog.Info("soft memory limit from the container's", "bytes", limit)
	}
	ctx := ctrl.SetupSignalHandler()
	pods := podwatch.NewIndex()
	mgr, sharded, err := newManager(ctx, f, pods)
	if err != nil {
		setupLog.Error(err, "unable to create manager")
		os.Exit(1)
	}
	if err := setupControllers(ctx, mgr, f, pods, sharded); err != nil {
		setupLog.Error(err, "unable to create controllers")
		os.Exit(1)
	}
	// The validating webhooks need a serving certificate and a
	// ValidatingWebhookConfiguration that trusts it (the manager's own, or
	// OLM's or cert-manager's); a manager run on a host without them sets
	// ENABLE_WEBHOOKS=false and relies on the CRDs' own rules.
	webhooksServing := make(chan struct{})
	if os.Getenv("ENABLE_WEBHOOKS") != "false" {
		if err := startWebhooks(mgr, f, webhooksServing); err != nil {
			setupLog.Error(err, "unable to create webhooks")
			os.Exit(1)
		}
	} else {
		setupLog.Info("webhooks disabled (ENABLE_WEBHOOKS=false)")
		close(webhooksServing)
	}
	// +kubebuilder:scaffold:builder
	if err := setupChecks(mgr, webhooksServing); err != nil {
		setupLog.Error(err, "unable to set up health checks")
		os.Exit(1)
	}
	setupLog.Info("starting manager")
	if err := mgr.Start(ctx); err != nil {
		setupLog.Error(err, "problem running manager")
		os.Exit(1)
	}
}

// newManager builds the manager from f: its servers (metrics, webhooks,
// probes, pprof) with their certificate watchers, leader election, the
// client's limits, and one cache composed of what each kind's controller
// needs of it (MyDeployment's pods indexed into pods). It fails if a
// certificate cannot be read, the kinds' cache needs conflict, or the
// fault injection setting is bad. With --shards, on an API server that
// filters lists and watches by shard, the cache is one per slot held
// (shardcache), returned beside the manager.
func newManager(ctx context.Context, f *flags, pods *podwatch.Index) (ctrl.Manager, *shardcache.Cache, error) {
	webhookServer, metricsOpts, certWatchers, err := servers(f)
	if err != nil {
		return nil, nil, err
	}
	restConfig := ctrl.GetConfigOrDie()
	restConfig.QPS, restConfig.Burst = float32(f.qps), f.burst
	// No gzip, as kube-controller-manager and kube-scheduler do (kubernetes#80919):
	// the API server compresses a WatchList response, every later event of the
	// watch included, for any client that accepts gzip (WatchListCompression,
	// on by default since 1.37). Next to the API server that is CPU spent on
	// both sides for bandwidth nobody is short of; docs/benchmarks has figures.
	restConfig.DisableCompression = !f.apiCompression
	// WATCH_NAMESPACE (OLM sets it from olm.targetNamespaces): a comma-separated
	// list of namespaces to watch; empty means all namespaces.
	var namespaces []string
	for _, ns := range strings.Split(os.Getenv("WATCH_NAMESPACE"), ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			namespaces = append(namespaces, ns)
		}
	}
	setupLog.Info("watching", "namespaces", namespaces, "workers", f.workers, "qps", f.qps, "burst", f.burst)
	cacheOpts, err := managercache.Compose(namespaces, controller.MyDeploymentCache(pods), application.Cache())
	if err != nil {
		return nil, nil, fmt.Errorf("composing the cache: %w", err)
	}
	if f.syncPeriod > 0 {
		cacheOpts.SyncPeriod = &f.syncPeriod
	}
	// Fault injection for the chaos suite only (test/chaos); nothing sets it in production.
	faults, err := faultclient.FromEnv()
	if err != nil {
		return nil, nil, fmt.Errorf("bad fault injection setting: %w", err)
	}
	// Pods are created and deleted through client-go (podcontrol.NewClient).
	newClient := client.NewClientFunc(podcontrol.NewClient)
	if faults != nil {
		setupLog.Info("FAULT INJECTION ENABLED", "config", *faults)
		newClient = faultclient.NewClientFunc(*faults, newClient)
	}
	var sharded *shardcache.Cache
	newCache, err := shardedCache(ctx, f, restConfig, func(c *shardcache.Cache) { sharded = c })
	if err != nil {
		return nil, nil, err
	}
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		NewCache:               newCache,
		Scheme:                 scheme,
		Cache:                  cacheOpts,
		PprofBindAddress:       f.pprofAddr,
		Metrics:                metricsOpts,
		WebhookServer:          webhookServer,
		HealthProbeBindAddress: f.probeAddr,
		LeaderElection:         f.enableLeaderElection,
		LeaderElectionID:       "d2cb53c1.mydeployment.io",
		// With fault injection on, the chaos suite's faulty client around it.
		NewClient: newClient,
		// leader election timing and namespace (a manager run outside a cluster needs one)
		LeaderElectionNamespace: f.leaderElectionNamespace,
		LeaseDuration:           &f.leaseDuration,
		RenewDeadline:           &f.renewDeadline,
		RetryPeriod:             &f.retryPeriod,
		// LeaderElectionReleaseOnCancel stays off: safe only if the binary
		// ends as soon as the manager stops, which nothing here promises.
	})
	if err != nil {
		return nil, nil, fmt.Errorf("unable to start manager: %w", err)
	}
	for _, w := range certWatchers {
		if err := mgr.Add(w); err != nil {
			return nil, nil, fmt.Errorf("adding a certificate watcher: %w", err)
		}
	}
	return mgr, sharded, nil // NewManager made its cache
}

// shardedCache is the manager's cache constructor: with --shards, on an
// API server that filters lists and watches by shard (ShardedListAndWatch),
// a cache per slot held (shardcache), handed to made once the manager made
// it, to be told of moves before the controllers; otherwise
// controller-runtime's one cache, and the shard gate alone keeps the
// replicas apart.
func shardedCache(ctx context.Context, f *flags, cfg *rest.Config, made func(*shardcache.Cache)) (cache.NewCacheFunc, error) {
	if !f.shards {
		return cache.New, nil
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	honoured, err := shardcache.Honoured(ctx, cs)
	if err != nil {
		return nil, fmt.Errorf("shards: %w", err)
	}
	if !honoured {
		setupLog.Info("shards: the API server does not filter by shard (ShardedListAndWatch off): every replica " +
			"caches every namespace and syncs those of its slots")
		return cache.New, nil
	}
	setupLog.Info("shards: the API server filters by shard: this replica caches the namespaces of its slots only")
	metrics.SetShardServerFiltered(true)
	return shardcache.NewCacheFunc(ctrl.Log.WithName("shardcache"), made), nil
}

// servers are the webhook and metrics servers' options as f says, and the
// watchers of their certificates (none when no certificate path is given:
// the metrics server then makes a self-signed one, fine for development
// only). It fails if a given certificate cannot be read.
func servers(f *flags) (webhook.Server, metricsserver.Options, []*certwatcher.CertWatcher, error) {
	var tlsOpts []func(*tls.Config)
	// HTTP/2 stays off unless asked for: it exposes the servers to the HTTP/2
	// Stream Cancellation and Rapid Reset CVEs (GHSA-qppj-fm5r-hxr3,
	// GHSA-4374-p667-p6c8).
	if !f.enableHTTP2 {
		tlsOpts = append(tlsOpts, func(c *tls.Config) {
			setupLog.Info("disabling http/2")
			c.NextProtos = []string{"http/1.1"}
		})
	}
	var watchers []*certwatcher.CertWatcher
	host, port, err := net.SplitHostPort(f.webhookAddr)
	if err != nil {
		return nil, metricsserver.Options{}, nil, fmt.Errorf("--webhook-bind-address: %w", err)
	}
	portNumber, err := strconv.Atoi(port)
	if err != nil {
		return nil, metricsserver.Options{}, nil, fmt.Errorf("--webhook-bind-address: port %q: %w", port, err)
	}
	webhookOpts := webhook.Options{TLSOpts: tlsOpts, Host: host, Port: portNumber}
	if f.webhookCertMode == string(webhookcert.SelfManaged) {
		// The files appear only once the rotator has written the Secret and
		// the kubelet has synced the volume: the server reads and watches
		// them itself when it starts, after that (startWebhooks).
		webhookOpts.CertDir, webhookOpts.CertName, webhookOpts.KeyName =
			f.webhookCert.dir, f.webhookCert.cert, f.webhookCert.key
	} else {
		w, serve, err := f.webhookCert.watch("webhook")
		if err != nil {
			return nil, metricsserver.Options{}, nil, err
		}
		if w != nil {
			watchers, webhookOpts.TLSOpts = append(watchers, w), append(webhookOpts.TLSOpts, serve)
		}
	}
	webhookServer := webhook.NewServer(webhookOpts)

	// Metrics endpoint is enabled in 'config/default/kustomization.yaml'. More info:
	// - https://pkg.go.dev/sigs.k8s.io/controller-runtime@v0.21.0/pkg/metrics/server
	// - https://book.kubebuilder.io/reference/metrics.html
	metricsOpts := metricsserver.Options{BindAddress: f.metricsAddr, SecureServing: f.secureMetrics, TLSOpts: tlsOpts}
	if f.secureMetrics {
		// Only authenticated and authorized users and service accounts may read
		// the metrics; the RBAC is in 'config/rbac/kustomization.yaml'.
		metricsOpts.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	// Without a certificate the metrics server makes a self-signed one: fine
	// for development only. TODO(user): If you enable certManager, uncomment
	// [METRICS-WITH-CERTS] at config/default/kustomization.yaml and
	// [PROMETHEUS-WITH-CERTS] at config/prometheus/kustomization.yaml.
	w, serve, err := f.metricsCert.watch("metrics")
	if err != nil {
		return nil, metricsserver.Options{}, nil, err
	}
	if w != nil {
		watchers, metricsOpts.TLSOpts = append(watchers, w), append(metricsOpts.TLSOpts, serve)
	}
	return webhookServer, metricsOpts, watchers, nil
}

// setupControllers registers each kind's controller: MyDeployment (with
// OLM's Upgradeable condition, held while its rollouts run) and
// Application, now or once its CRD is installed; with --shards, each
// replica's membership of the shards, told of moves in that order after the
// slots' caches (sharded, when the API server filters by shard).
func setupControllers(ctx context.Context, mgr ctrl.Manager, f *flags, pods *podwatch.Index, sharded *shardcache.Cache) error {
	var shards *shard.Membership
	if f.shards {
		var err error
		if shards, err = newMembership(mgr, f); err != nil {
			return fmt.Errorf("shards: %w", err)
		}
		if sharded != nil {
			shards.Tell(sharded) // first: a slot's cache synced before a controller takes it
		}
	}
	reconciler, err := controller.SetupMyDeployment(ctx, mgr, controller.MyDeploymentOptions{
		Workers: f.workers, StatusBatchPeriod: f.statusBatchPeriod, Pods: pods, InPlaceTimeout: f.inPlaceTimeout,
		Shards: shards})
	if err != nil {
		return fmt.Errorf("MyDeployment controller: %w", err)
	}
	// Under OLM (OPERATOR_CONDITION_NAME), hold operator upgrades while rollouts run.
	if err := upgrade.Setup(mgr, reconciler.PendingWrites); err != nil {
		return fmt.Errorf("reporting Upgradeable: %w", err)
	}
	// Without the Application CRD the manager runs MyDeployments alone, as
	// the release before Application did, until the CRD is installed.
	if err := application.SetupWhenServed(mgr, application.CRDPoll, application.Options{Shards: shards}); err != nil {
		return fmt.Errorf("Application controller: %w", err)
	}
	if shards != nil {
		return mgr.Add(shards)
	}
	return nil
}

// newMembership is this replica's membership of the shards: its identity
// the pod's name (POD_NAME, else the host name, which is the pod's), its
// Leases in the leader election's namespace, read and written around the
// cache.
func newMembership(mgr ctrl.Manager, f *flags) (*shard.Membership, error) {
	identity := os.Getenv("POD_NAME")
	if identity == "" {
		var err error
		if identity, err = os.Hostname(); err != nil {
			return nil, fmt.Errorf("no POD_NAME and no host name: %w", err)
		}
	}
	namespace := f.leaderElectionNamespace
	if namespace == "" {
		var err error
		if namespace, err = webhookcert.OwnNamespace(); err != nil {
			return nil, fmt.Errorf("the shards' Leases need a namespace (--leader-election-namespace): %w", err)
		}
	}
	c, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme()})
	if err != nil {
		return nil, err
	}
	setupLog.Info("shards: every replica reconciles the namespaces of the slots it holds", "identity", identity,
		"namespace", namespace)
	if !f.enableLeaderElection {
		setupLog.Info("shards without --leader-elect: this replica also runs the singletons (the webhook " +
			"certificate's rotation, OLM's Upgradeable condition); run one replica so, or elect a leader")
	}
	return shard.New(shard.Config{Client: c, Namespace: namespace, Identity: identity, LeaseDuration: f.leaseDuration,
		RenewDeadline: f.renewDeadline, RetryPeriod: f.retryPeriod, Log: ctrl.Log.WithName("shard")}), nil
}

// startWebhooks arranges the webhook server's certificate as
// --webhook-cert-mode says, logs which it is, and registers each kind's
// validating webhook: at once when the certificate is provided, else once
// the manager's own certificate is made and mounted (registering starts the
// server, which needs the files). serving is closed once they are
// registered. An error in the background registration ends the process.
func startWebhooks(mgr ctrl.Manager, f *flags, serving chan<- struct{}) error {
	mode, err := webhookcert.ParseMode(f.webhookCertMode)
	if err != nil {
		return err
	}
	if mode == webhookcert.Provided {
		provider := "cert-manager or another provider"
		if os.Getenv(upgrade.ConditionNameEnv) != "" {
			provider = "OLM"
		}
		setupLog.Info("webhook certificate", "mode", mode, "provider", provider, "cert-path", f.webhookCert.dir)
		if err := setupWebhooks(mgr); err != nil {
			return err
		}
		close(serving)
		return nil
	}
	ns, err := webhookcert.OwnNamespace()
	if err != nil {
		return err
	}
	cfg := webhookcert.Config{Namespace: ns, Secret: f.webhookCertSecret, Service: f.webhookService,
		WebhookConfiguration: f.webhookConfiguration,
		CertDir:              f.webhookCert.dir, CertName: f.webhookCert.cert, KeyName: f.webhookCert.key}
	setupLog.Info("webhook certificate", "mode", mode, "secret", ns+"/"+cfg.Secret,
		"webhookConfiguration", cfg.WebhookConfiguration, "dnsNames", cfg.DNSNames(), "cert-path", cfg.CertDir)
	ready, err := webhookcert.Setup(mgr, cfg)
	if err != nil {
		return err
	}
	go func() {
		<-ready
		setupLog.Info("webhook certificate ready: starting the webhook server")
		if err := setupWebhooks(mgr); err != nil {
			setupLog.Error(err, "unable to create webhooks")
			os.Exit(1)
		}
		close(serving)
	}()
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

// setupChecks adds /healthz (the manager runs) and /readyz: its caches
// have synced (before that it cannot act) and, once webhooksServing is
// closed, its webhook server answers TLS (before that the API server's calls
// would fail, and failurePolicy Fail refuses every write).
func setupChecks(mgr ctrl.Manager, webhooksServing <-chan struct{}) error {
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("webhook", func(req *http.Request) error {
		select {
		case <-webhooksServing:
		default:
			return errors.New("webhook certificate not ready")
		}
		if os.Getenv("ENABLE_WEBHOOKS") == "false" {
			return nil
		}
		return mgr.GetWebhookServer().StartedChecker()(req)
	}); err != nil {
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
