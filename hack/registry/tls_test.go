package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/google/go-containerregistry/pkg/v1/random"
)

// TestServesHTTPSAsTheNamesItStandsFor: a client that trusts only ca.crt
// and resolves quay.io to the registry pushes and pulls quay.io/team/app
// over HTTPS; a restart keeps the CA (the client's trust still holds) and
// a new name makes a new serving certificate from the same CA.
func TestServesHTTPSAsTheNamesItStandsFor(t *testing.T) {
	dir := t.TempDir()
	h, err := newPersistent(filepath.Join(dir, "store"), log.New(io.Discard, "", 0))
	if err != nil {
		t.Fatal(err)
	}
	defer h.close()
	tlsDir := filepath.Join(dir, "tls")
	cert, err := serving(tlsDir, []string{"quay.io", "mydeployment.io"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	defer srv.Close()

	caPEM, err := os.ReadFile(filepath.Join(tlsDir, caCertFile))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatal("ca.crt holds no certificate")
	}
	addr := srv.Listener.Addr().String()
	tr := &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr) // quay.io:443 is the registry
		},
	}
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"quay.io/team/app:v1", "mydeployment.io/team/app:v1"} {
		if err := crane.Push(img, ref, crane.WithTransport(tr)); err != nil {
			t.Fatalf("push %s over HTTPS trusting only ca.crt: %v", ref, err)
		}
	}
	want, _ := img.Digest()
	got, err := crane.Digest("quay.io/team/app:v1", crane.WithTransport(tr))
	if err != nil || got != want.String() {
		t.Fatalf("pull over HTTPS: %q %v, want %s", got, err, want)
	}
	// A name the certificate is not for is refused.
	if _, err := crane.Digest("registry.example/team/app:v1", crane.WithTransport(tr)); err == nil {
		t.Error("a name the certificate does not name was served without a TLS error")
	}

	again, err := serving(tlsDir, []string{"quay.io", "mydeployment.io"})
	if err != nil {
		t.Fatal(err)
	}
	if !again.Leaf.Equal(cert.Leaf) {
		t.Error("a restart with the same names made a new serving certificate")
	}
	more, err := serving(tlsDir, []string{"quay.io", "mydeployment.io", "registry.example"})
	if err != nil {
		t.Fatal(err)
	}
	if more.Leaf.Equal(cert.Leaf) {
		t.Fatal("a new name did not make a new serving certificate")
	}
	if _, err := more.Leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "registry.example"}); err != nil {
		t.Errorf("the new certificate is not from the kept CA: %v", err)
	}
}
