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

package webhookcert

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

func TestParseMode(t *testing.T) {
	for _, s := range []string{"self-managed", "provided"} {
		if m, err := ParseMode(s); err != nil || string(m) != s {
			t.Errorf("ParseMode(%q) = %q, %v; want it back", s, m, err)
		}
	}
	for _, s := range []string{"", "auto", "Provided", "cert-manager"} {
		if _, err := ParseMode(s); err == nil {
			t.Errorf("ParseMode(%q) succeeded; want an error", s)
		}
	}
}

func TestSetupRefusesAnIncompleteConfig(t *testing.T) {
	full := Config{Namespace: "ns", Secret: "s", Service: "svc", WebhookConfiguration: "vwc", CertDir: "/d"}
	for name, c := range map[string]Config{
		"no namespace": func(c Config) Config { c.Namespace = ""; return c }(full),
		"no secret":    func(c Config) Config { c.Secret = ""; return c }(full),
		"no service":   func(c Config) Config { c.Service = ""; return c }(full),
		"no webhook":   func(c Config) Config { c.WebhookConfiguration = ""; return c }(full),
		"no cert dir":  func(c Config) Config { c.CertDir = ""; return c }(full),
	} {
		if _, err := Setup(nil, c); err == nil {
			t.Errorf("%s: Setup succeeded; want an error", name)
		}
	}
}

// TestSetupMakesTheCertificateAndInjectsTheCA runs the rotator in a manager
// against a real kube-apiserver (envtest), with this test playing the
// kubelet that syncs the Secret into the pod's volume: the ready channel
// closes only once the files are there and the CA is in the webhook
// configuration, and the certificate is for the Service's DNS names.
func TestSetupMakesTheCertificateAndInjectsTheCA(t *testing.T) {
	env := &envtest.Environment{}
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		env.BinaryAssetsDirectory = filepath.Join("..", "..", "bin", "k8s")
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting envtest: %v", err)
	}
	defer func() { _ = env.Stop() }()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	conf := Config{Namespace: "md-system", Secret: "md-webhook-cert", Service: "md-webhook",
		WebhookConfiguration: "md-vwc", CertDir: t.TempDir(), CertName: "tls.crt", KeyName: "tls.key"}
	none, ignore := admissionv1.SideEffectClassNone, admissionv1.Ignore
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: conf.Namespace}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: conf.Namespace, Name: conf.Secret}},
		// Another Secret beside it stays untouched.
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: conf.Namespace, Name: "other"}},
		&admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: conf.WebhookConfiguration},
			Webhooks: []admissionv1.ValidatingWebhook{{
				Name: "v.example.com", AdmissionReviewVersions: []string{"v1"}, SideEffects: &none, FailurePolicy: &ignore,
				ClientConfig: admissionv1.WebhookClientConfig{Service: &admissionv1.ServiceReference{
					Namespace: conf.Namespace, Name: conf.Service}},
				Rules: []admissionv1.RuleWithOperations{{Operations: []admissionv1.OperationType{admissionv1.Create},
					Rule: admissionv1.Rule{APIGroups: []string{"example.com"}, APIVersions: []string{"v1"}, Resources: []string{"widgets"}}}},
			}}},
	} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	ready, err := Setup(mgr, conf)
	if err != nil {
		t.Fatal(err)
	}
	mgrDone := make(chan error, 1)
	go func() { mgrDone <- mgr.Start(ctx) }()

	// Nothing is mounted yet: not ready, however long the rotator has had.
	var secret corev1.Secret
	key := types.NamespacedName{Namespace: conf.Namespace, Name: conf.Secret}
	for secret.Data["tls.crt"] == nil {
		select {
		case <-ctx.Done():
			t.Fatal("the rotator never wrote the Secret")
		case <-time.After(200 * time.Millisecond):
		}
		if err := c.Get(ctx, key, &secret); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-ready:
		t.Fatal("ready before the certificate is in its directory")
	case <-time.After(2 * time.Second):
	}

	// The kubelet's part: the Secret's keys as files in the volume.
	for k, v := range secret.Data {
		if err := os.WriteFile(filepath.Join(conf.CertDir, k), v, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-ready:
	case err := <-mgrDone:
		t.Fatalf("the manager stopped: %v", err)
	case <-ctx.Done():
		t.Fatal("never ready")
	}

	if err := c.Get(ctx, key, &secret); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"ca.crt", "ca.key", "tls.crt", "tls.key"} {
		if len(secret.Data[k]) == 0 {
			t.Errorf("the Secret has no %s", k)
		}
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(secret.Data["ca.crt"]) {
		t.Fatal("ca.crt is no PEM certificate")
	}
	block, _ := pem.Decode(secret.Data["tls.crt"])
	if block == nil {
		t.Fatal("tls.crt is not PEM")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	for _, dns := range conf.DNSNames() {
		if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: dns,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("the serving certificate does not verify for %s: %v", dns, err)
		}
	}
	var vwc admissionv1.ValidatingWebhookConfiguration
	if err := c.Get(ctx, types.NamespacedName{Name: conf.WebhookConfiguration}, &vwc); err != nil {
		t.Fatal(err)
	}
	if got := vwc.Webhooks[0].ClientConfig.CABundle; !bytes.Equal(got, secret.Data["ca.crt"]) {
		t.Errorf("caBundle = %q, want the Secret's ca.crt", got)
	}
	var other corev1.Secret
	if err := c.Get(ctx, types.NamespacedName{Namespace: conf.Namespace, Name: "other"}, &other); err != nil {
		t.Fatal(err)
	}
	if len(other.Data) != 0 {
		t.Errorf("another Secret of the namespace was written: %v", other.Data)
	}
}
