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
// Gatekeeper do). The Secret reaches the webhook server as the pod's secret
// volume, like any other certificate.
package webhookcert

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"k8s.io/apimachinery/pkg/types"
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

// cert-controller watches the Secrets of the manager's namespace and every
// ValidatingWebhookConfiguration (its caches have no name selector) and
// writes only the two it is given.
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

// Setup adds to mgr the rotator that makes the certificate into Secret,
// renews it before it expires, and keeps the CA in WebhookConfiguration. The
// channel it returns is closed once the certificate files are in CertDir and
// the caBundle is injected: only then can the webhook server start. It runs
// on every replica, leader or not (each must serve), and the manager stops
// with an error if the Secret is missing or the files never appear.
func Setup(mgr manager.Manager, c Config) (<-chan struct{}, error) {
	if c.Namespace == "" || c.Secret == "" || c.Service == "" || c.WebhookConfiguration == "" || c.CertDir == "" {
		return nil, errors.New("a self-managed webhook certificate needs a namespace, a Secret, a Service, " +
			"a ValidatingWebhookConfiguration and a certificate directory")
	}
	dns := c.DNSNames()
	ready := make(chan struct{})
	err := rotator.AddRotator(mgr, &rotator.CertRotator{
		SecretKey:      types.NamespacedName{Namespace: c.Namespace, Name: c.Secret},
		CertDir:        c.CertDir,
		CertName:       c.CertName,
		KeyName:        c.KeyName,
		CAName:         "mydeployment-operator-ca",
		CAOrganization: "mydeployment-operator",
		DNSName:        dns[0],
		ExtraDNSNames:  dns[1:],
		IsReady:        ready,
		Webhooks:       []rotator.WebhookInfo{{Name: c.WebhookConfiguration, Type: rotator.Validating}},
		// Every replica must serve, so every replica waits for the files; of
		// two replicas racing to write the Secret, the later update
		// conflicts and re-reads it.
		RequireLeaderElection: false,
	})
	if err != nil {
		return nil, fmt.Errorf("adding the certificate rotator: %w", err)
	}
	return ready, nil
}
