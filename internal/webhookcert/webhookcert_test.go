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
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
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

// startEnv starts envtest (a real kube-apiserver and etcd) and creates the
// namespace, the empty Secret, another Secret beside it and the webhook
// configuration of conf, as the manifests do.
func startEnv(t *testing.T, conf Config) (*rest.Config, client.Client) {
	t.Helper()
	env := &envtest.Environment{}
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		env.BinaryAssetsDirectory = filepath.Join("..", "..", "bin", "k8s")
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting envtest: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
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
		if err := c.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
	return cfg, c
}

// testConfig names the objects the tests make; each of its managers gets a
// rotator of a name of its own (controller names are unique per process).
func testConfig(t *testing.T, rotator string) Config {
	return Config{Namespace: "md-system", Secret: "md-webhook-cert", Service: "md-webhook",
		WebhookConfiguration: "md-vwc", CertDir: t.TempDir(), CertName: "tls.crt", KeyName: "tls.key",
		rotatorName: rotator}
}

// secretWhenWritten waits until the rotator has written the Secret, and returns it.
func secretWhenWritten(ctx context.Context, t *testing.T, c client.Client, conf Config) corev1.Secret {
	t.Helper()
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
	return secret
}

// mount plays the kubelet: the Secret's keys as files in a pod's volume.
func mount(t *testing.T, secret corev1.Secret, dir string) {
	t.Helper()
	for k, v := range secret.Data {
		if err := os.WriteFile(filepath.Join(dir, k), v, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSetupMakesTheCertificateAndInjectsTheCA runs the rotator in a manager
// against a real kube-apiserver (envtest), with this test playing the
// kubelet that syncs the Secret into the pod's volume: the ready channel
// closes only once the files are there and the CA is in the webhook
// configuration, and the certificate is for the Service's DNS names.
func TestSetupMakesTheCertificateAndInjectsTheCA(t *testing.T) {
	conf := testConfig(t, "rotator-single")
	cfg, c := startEnv(t, conf)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

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
	secret := secretWhenWritten(ctx, t, c, conf)
	select {
	case <-ready:
		t.Fatal("ready before the certificate is in its directory")
	case <-time.After(2 * time.Second):
	}

	mount(t, secret, conf.CertDir)
	select {
	case <-ready:
	case err := <-mgrDone:
		t.Fatalf("the manager stopped: %v", err)
	case <-ctx.Done():
		t.Fatal("never ready")
	}

	key := types.NamespacedName{Namespace: conf.Namespace, Name: conf.Secret}
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

// secretWrites counts the Secret updates a manager's client sends (the
// rotator writes through the manager's client), and those that succeeded.
type secretWrites struct {
	client.Client
	sent, done *atomic.Int32
}

func (c secretWrites) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	_, secret := obj.(*corev1.Secret)
	if secret {
		c.sent.Add(1)
	}
	err := c.Client.Update(ctx, obj, opts...)
	if secret && err == nil {
		c.done.Add(1)
	}
	return err
}

// replica is one of two managers run as two pods of the Deployment would
// run them: leader election on, each its own volume directory.
type replica struct {
	conf  Config
	mgr   ctrl.Manager
	ready <-chan struct{}
	// writes sent to the Secret, and written.
	writes, written atomic.Int32
	cancel          context.CancelFunc
	done            chan error
}

func startReplica(ctx context.Context, t *testing.T, cfg *rest.Config, conf Config) *replica {
	t.Helper()
	r := &replica{conf: conf, done: make(chan error, 1)}
	lease, renew, retry := 2*time.Second, time.Second, 200*time.Millisecond
	var err error
	r.mgr, err = ctrl.NewManager(cfg, ctrl.Options{
		Metrics:        metricsserver.Options{BindAddress: "0"},
		LeaderElection: true, LeaderElectionID: "webhookcert-test", LeaderElectionNamespace: conf.Namespace,
		LeaseDuration: &lease, RenewDeadline: &renew, RetryPeriod: &retry,
		NewClient: func(cfg *rest.Config, opts client.Options) (client.Client, error) {
			c, err := client.New(cfg, opts)
			return secretWrites{Client: c, sent: &r.writes, done: &r.written}, err
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.ready, err = Setup(r.mgr, conf); err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(ctx)
	r.cancel = cancel
	go func() { r.done <- r.mgr.Start(mctx) }()
	return r
}

func (r *replica) leads() bool {
	select {
	case <-r.mgr.Elected():
		return true
	default:
		return false
	}
}

// TestTwoReplicasShareOneCertificateOnlyTheLeaderWrites runs two managers
// with leader election, as the Deployment's two pods: only the leader's
// rotator writes the Secret (the other sends no write at all, not even one
// that would conflict), both become ready once their own volumes hold the
// Secret (not before), and when the leader goes the other takes over the
// rotator without writing a new certificate.
func TestTwoReplicasShareOneCertificateOnlyTheLeaderWrites(t *testing.T) {
	base := testConfig(t, "rotator-a")
	cfg, c := startEnv(t, base)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	a := startReplica(ctx, t, cfg, base)
	second := base
	second.CertDir, second.rotatorName = t.TempDir(), "rotator-b"
	b := startReplica(ctx, t, cfg, second)
	defer a.cancel()
	defer b.cancel()

	secret := secretWhenWritten(ctx, t, c, base)
	leader, follower := a, b
	if !a.leads() {
		leader, follower = b, a
	}
	if !leader.leads() || follower.leads() {
		t.Fatalf("want exactly one leader: a %v, b %v", a.leads(), b.leads())
	}
	for name, r := range map[string]*replica{"leader": leader, "follower": follower} {
		select {
		case <-r.ready:
			t.Fatalf("the %s is ready before the certificate is in its volume", name)
		case <-time.After(2 * time.Second):
		}
	}
	mount(t, secret, leader.conf.CertDir)
	mount(t, secret, follower.conf.CertDir)
	for name, r := range map[string]*replica{"leader": leader, "follower": follower} {
		select {
		case <-r.ready:
		case err := <-r.done:
			t.Fatalf("the %s stopped: %v", name, err)
		case <-ctx.Done():
			t.Fatalf("the %s never became ready", name)
		}
	}
	if n := follower.writes.Load(); n != 0 {
		t.Errorf("the replica that is not the leader sent %d Secret writes; want none: only the leader rotates", n)
	}
	// cert-controller refreshes at its start and on the Secret's event, so
	// the leader may send a second write from a stale cache; it conflicts.
	if n := leader.written.Load(); n != 1 {
		t.Errorf("the leader wrote the Secret %d times; want once (the first certificate)", n)
	}

	// The leader goes (its lease is not released, as when its process is
	// killed): the other takes over.
	leader.cancel()
	select {
	case <-follower.mgr.Elected():
	case <-ctx.Done():
		t.Fatal("the other replica never took the lease")
	}
	time.Sleep(2 * time.Second) // its rotator starts, finds the certificate valid
	var after corev1.Secret
	if err := c.Get(ctx, types.NamespacedName{Namespace: base.Namespace, Name: base.Secret}, &after); err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != secret.ResourceVersion || follower.writes.Load() != 0 {
		t.Errorf("the new leader rewrote a valid certificate (Secret resourceVersion %s -> %s, %d writes)",
			secret.ResourceVersion, after.ResourceVersion, follower.writes.Load())
	}
}
