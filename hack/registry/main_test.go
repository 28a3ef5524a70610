package main

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/google/go-containerregistry/pkg/v1/random"
)

// TestSurvivesRestart: an image pushed (its blobs and its tag) is there,
// with the same digest, from a new registry on the same directory; a
// deleted tag stays deleted.
func TestSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	logger := log.New(io.Discard, "", 0)
	start := func() (*httptest.Server, *persistent) {
		p, err := newPersistent(dir, logger)
		if err != nil {
			t.Fatal(err)
		}
		return httptest.NewServer(p), p
	}
	srv, p := start()
	host := srv.Listener.Addr().String()
	img, err := random.Image(1024, 2)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := img.Digest()
	for _, tag := range []string{"v1", "gone"} {
		if err := crane.Push(img, host+"/team/app:"+tag, crane.Insecure); err != nil {
			t.Fatal(err)
		}
	}
	if err := crane.Delete(host+"/team/app:gone", crane.Insecure); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	p.close()

	srv, p = start()
	defer func() { srv.Close(); p.close() }()
	host = srv.Listener.Addr().String()
	got, err := crane.Digest(host+"/team/app:v1", crane.Insecure)
	if err != nil {
		t.Fatalf("after a restart: %v", err)
	}
	if got != want.String() {
		t.Errorf("digest %s after a restart, want %s", got, want)
	}
	pulled, err := crane.Pull(host+"/team/app:v1", crane.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	layers, _ := pulled.Layers()
	for _, l := range layers {
		rc, err := l.Compressed()
		if err != nil {
			t.Fatalf("a blob after a restart: %v", err)
		}
		_, _ = io.Copy(io.Discard, rc)
		_ = rc.Close()
	}
	if _, err := crane.Digest(host+"/team/app:gone", crane.Insecure); err == nil {
		t.Error("a deleted tag came back after a restart")
	}
	resp, err := http.Get(srv.URL + "/v2/_catalog")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if string(b) != `{"repositories":["team/app"]}` {
		t.Errorf("catalog %s", b)
	}
}

func TestManifestPath(t *testing.T) {
	for path, want := range map[string][2]string{
		"/v2/mydeployment-operator/manifests/v0.3.0":  {"mydeployment-operator", "v0.3.0"},
		"/v2/operator-framework/opm/manifests/latest": {"operator-framework/opm", "latest"},
		"/v2/a/blobs/sha256:00":                       {"", ""},
		"/v2/_catalog":                                {"", ""},
	} {
		repo, ref, _ := manifestPath(path)
		if repo != want[0] || ref != want[1] {
			t.Errorf("%s: %q %q, want %q", path, repo, ref, want)
		}
	}
}
