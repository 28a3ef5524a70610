package main

import (
	"bytes"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// syncBuffer is a log sink the test reads while serve writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestServeAnswersAndDrainsOnSIGTERM: / answers the version, /healthz 200,
// anything else 404; after SIGTERM it logs so, still answers during the
// drain, then stops accepting and returns nil (the process exits 0).
func TestServeAnswersAndDrainsOnSIGTERM(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	sigs := make(chan os.Signal, 1)
	var logs syncBuffer
	const drain = 500 * time.Millisecond
	done := make(chan error, 1)
	go func() { done <- serve(ln, "v2", drain, sigs, log.New(&logs, "", 0)) }()

	if code, body := get(t, base+"/"); code != 200 || body != "v2\n" {
		t.Errorf("GET /: %d %q, want 200 \"v2\\n\"", code, body)
	}
	if code, body := get(t, base+"/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("GET /healthz: %d %q, want 200 \"ok\\n\"", code, body)
	}
	if code, _ := get(t, base+"/nothing"); code != 404 {
		t.Errorf("GET /nothing: %d, want 404", code)
	}

	sent := time.Now()
	sigs <- syscall.SIGTERM
	deadline := time.Now().Add(drain / 2)
	for !strings.Contains(logs.String(), "got SIGTERM") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), "got SIGTERM") {
		t.Errorf("no log line saying it got SIGTERM; logs:\n%s", logs.String())
	}
	// Within the drain it still serves.
	if code, body := get(t, base+"/"); code != 200 || body != "v2\n" {
		t.Errorf("GET / while draining: %d %q", code, body)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v, want nil", err)
		}
	case <-time.After(drain + 5*time.Second):
		t.Fatal("serve did not return after the drain")
	}
	if took := time.Since(sent); took < drain {
		t.Errorf("stopped %v after SIGTERM, before the %v drain", took, drain)
	}
	if _, err := http.Get(base + "/"); err == nil {
		t.Error("still accepting connections after stopping")
	}
}
