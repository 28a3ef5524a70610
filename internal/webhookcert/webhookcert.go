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

// Package webhookcert says where the webhook server's serving certificate
// comes from and, when the manager makes its own, makes it: a CA and a
// serving certificate in a Secret, rotated before they expire, the CA
// injected into the manager's ValidatingWebhookConfiguration
// (github.com/open-policy-agent/cert-controller, as Kueue, JobSet and
// Gatekeeper do), on the leader alone. The Secret reaches every replica's
// webhook server as the pod's secret volume, like any other certificate, and
// each replica serves once its copy is the one the webhook configuration
// trusts.
package webhookcert

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Mode is who provides the webhook server's certificate and the
// ValidatingWebhookConfiguration's caBundle.
type Mode string

const (
	// SelfManaged: the manager makes and rotates them itself (config/default,
	// `make deploy` and dist/install.yaml).
	SelfManaged Mode = "self-managed"
	// Provided: someone else writes the certificate files and the caBundle:
	// OLM (the bundle) or cert-manager (the config/certmanager option).
	Provided Mode = "provided"
)

// ParseMode returns the Mode s names, or an error listing the valid ones.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case SelfManaged, Provided:
		return m, nil
	}
	return "", fmt.Errorf("webhook certificate mode %q: want %q or %q", s, SelfManaged, Provided)
}

// The names config/default gives the objects a self-managed certificate
// lives in (its namePrefix on the scaffold's names). The RBAC markers below
// name them too: keep them in step.
const (
	DefaultSecret               = "mydeployment-operator-webhook-server-cert"
	DefaultService              = "mydeployment-operator-webhook-service"
	DefaultWebhookConfiguration = "mydeployment-operator-validating-webhook-configuration"
)

// cert-controller (on the leader) watches the Secrets of the manager's
// namespace and every ValidatingWebhookConfiguration (its caches have no name
// selector) and writes only the two it is given; every replica reads that
// configuration to check its mounted certificate against the caBundle.
// +kubebuilder:rbac:groups="",namespace=system,resources=secrets,verbs=list;watch
// +kubebuilder:rbac:groups="",namespace=system,resources=secrets,resourceNames=mydeployment-operator-webhook-server-cert,verbs=get;update
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,verbs=list;watch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,resourceNames=mydeployment-operator-validating-webhook-configuration,verbs=get;update

// Config names where a self-managed certificate lives.
type Config struct {
	// Namespace of the Secret and the Service: the manager's own.
	Namespace string
	// Secret holds the CA and the serving certificate (ca.crt, ca.key,
	// tls.crt, tls.key); it must exist (empty is fine): the manifests
	// create it, so that the pod's volume can mount it from the start.
	Secret string
	// Service is the webhook's; the certificate is for its DNS names.
	Service string
	// WebhookConfiguration is the ValidatingWebhookConfiguration whose
	// webhooks get the CA as caBundle.
	WebhookConfiguration string
	// CertDir is where the pod mounts Secret: the webhook server serves
	// CertName and KeyName from it.
	CertDir, CertName, KeyName string

	// rotatorName names the rotator's controller, which must be unique in
	// the process; empty is cert-controller's default. Only tests that run
	// several managers in one process set it.
	rotatorName string
}

// PodNamespaceEnv names the manager's namespace (the downward API sets it
// in the pod; a manager run outside one sets it by hand).
const PodNamespaceEnv = "POD_NAMESPACE"

// serviceAccountNamespaceFile holds the pod's namespace in a pod.
const serviceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// OwnNamespace is the manager's namespace: POD_NAMESPACE, else the service
// account's namespace file; an error if neither says.
func OwnNamespace() (string, error) {
	if ns := os.Getenv(PodNamespaceEnv); ns != "" {
		return ns, nil
	}
	b, err := os.ReadFile(serviceAccountNamespaceFile)
	if ns := strings.TrimSpace(string(b)); err == nil && ns != "" {
		return ns, nil
	}
	return "", fmt.Errorf("the manager's namespace is unknown: set %s", PodNamespaceEnv)
}

// DNSNames are the names the serving certificate is for: the Service's, as
// the API server calls it.
func (c Config) DNSNames() []string {
	return []string{c.Service + "." + c.Namespace + ".svc", c.Service + "." + c.Namespace + ".svc.cluster.local"}
}

// Setup adds to mgr what a self-managed certificate needs, and returns a
// channel closed once this replica may start its webhook server:
//
//   - On the leader only, cert-controller's rotator: it makes the CA and the
//     serving certificate into Secret, renews them before they expire, and
//     keeps the CA in WebhookConfiguration. One writer: two replicas never
//     both generate a certificate for the same Secret, and a replica of
//     another version (a rolling update that changed the Service's name)
//     cannot rotate it back and forth with this one.
//   - On every replica, leader or not (each must serve): a wait for this
//     pod's copy of the Secret (the kubelet's secret volume in CertDir) to
//     hold a key pair for the Service that the webhook configuration's
//     caBundle trusts (mounted). The channel closes then, and only then.
//
// The leader's rotator stops the manager with an error if the Secret is
// missing or its files never appear; a replica that is not the leader waits
// for them, saying why every 30 s.
func Setup(mgr manager.Manager, c Config) (<-chan struct{}, error) {
	if c.Namespace == "" || c.Secret == "" || c.Service == "" || c.WebhookConfiguration == "" || c.CertDir == "" {
		return nil, errors.New("a self-managed webhook certificate needs a namespace, a Secret, a Service, " +
			"a ValidatingWebhookConfiguration and a certificate directory")
	}
	dns := c.DNSNames()
	err := rotator.AddRotator(mgr, &rotator.CertRotator{
		SecretKey:      types.NamespacedName{Namespace: c.Namespace, Name: c.Secret},
		CertDir:        c.CertDir,
		CertName:       c.CertName,
		KeyName:        c.KeyName,
		CAName:         "mydeployment-operator-ca",
		CAOrganization: "mydeployment-operator",
		ControllerName: c.rotatorName,
		DNSName:        dns[0],
		ExtraDNSNames:  dns[1:],
		// The rotator's own readiness is the leader's alone: every replica
		// waits for mounted instead.
		IsReady:               make(chan struct{}),
		Webhooks:              []rotator.WebhookInfo{{Name: c.WebhookConfiguration, Type: rotator.Validating}},
		RequireLeaderElection: true,
	})
	if err != nil {
		return nil, fmt.Errorf("adding the certificate rotator: %w", err)
	}
	w := &mountWait{config: c, reader: mgr.GetAPIReader(), ready: make(chan struct{}), log: mgr.GetLogger().WithName("webhook-cert")}
	if err := mgr.Add(w); err != nil {
		return nil, fmt.Errorf("adding the wait for the mounted certificate: %w", err)
	}
	return w.ready, nil
}

// mountWait closes ready once the certificate in CertDir is trusted by the
// webhook configuration (Config.mounted), asking every second.
type mountWait struct {
	config Config
	reader client.Reader
	ready  chan struct{}
	log    logr.Logger
}

var _ manager.LeaderElectionRunnable = &mountWait{}

// NeedLeaderElection is false: every replica serves the webhook.
func (w *mountWait) NeedLeaderElection() bool { return false }

// Start polls until the mounted certificate is trusted or ctx ends; it never
// returns an error (a replica that never gets its certificate stays not
// Ready, which its readiness probe shows).
func (w *mountWait) Start(ctx context.Context) error {
	var said time.Time
	_ = wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		err := w.config.mounted(ctx, w.reader)
		if err == nil {
			w.log.Info("the mounted certificate is the one the webhook configuration trusts", "cert-path", w.config.CertDir)
			close(w.ready)
			return true, nil
		}
		if time.Since(said) >= 30*time.Second {
			w.log.Info("waiting for the webhook certificate", "reason", err.Error())
			said = time.Now()
		}
		return false, nil
	})
	return nil
}

// mounted returns nil if CertDir holds a key pair whose certificate is for
// the Service's DNS name and verifies against the caBundle of every webhook
// of WebhookConfiguration, as the API server will check it; else an error
// saying what is missing.
func (c Config) mounted(ctx context.Context, r client.Reader) error {
	pair, err := tls.LoadX509KeyPair(filepath.Join(c.CertDir, c.CertName), filepath.Join(c.CertDir, c.KeyName))
	if err != nil {
		return fmt.Errorf("no key pair in %s yet: %w", c.CertDir, err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return fmt.Errorf("the mounted certificate: %w", err)
	}
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	if err := r.Get(ctx, types.NamespacedName{Name: c.WebhookConfiguration}, &vwc); err != nil {
		return fmt.Errorf("reading ValidatingWebhookConfiguration %s: %w", c.WebhookConfiguration, err)
	}
	if len(vwc.Webhooks) == 0 {
		return fmt.Errorf("ValidatingWebhookConfiguration %s has no webhooks", c.WebhookConfiguration)
	}
	for _, wh := range vwc.Webhooks {
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(wh.ClientConfig.CABundle) {
			return fmt.Errorf("webhook %s has no caBundle yet", wh.Name)
		}
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: c.DNSNames()[0],
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			return fmt.Errorf("webhook %s does not trust the mounted certificate: %w", wh.Name, err)
		}
	}
	return nil
}
