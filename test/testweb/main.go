// Command testweb is a small web app for tests on a cluster that runs
// pods: its image, mydeployment-testweb, comes at two tags (v1 and v2), so
// a rollout from one to the other is a real image change. It is a static
// binary on an empty base (make images builds it; no shell, no libc).
//
//	GET /         its version ("v1"), the one set at build time
//	              (-ldflags -X main.version=v1) or by -version
//	GET /healthz  200 "ok"
//
// On SIGTERM (or SIGINT) it logs that it got it, keeps serving for -drain
// (2 s by default: the kubelet's SIGTERM and the pod's removal from the
// Service's endpoints race, so requests still arrive for a moment), then
// stops accepting, lets requests in flight finish and exits 0.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// version is what GET / answers unless -version says otherwise; the image
// builds set it with -ldflags "-X main.version=v1".
var version = "dev"

func main() {
	addr := flag.String("addr", ":8080", "address to listen on")
	ver := flag.String("version", version, "what GET / answers")
	drain := flag.Duration("drain", 2*time.Second, "how long to keep serving after SIGTERM before stopping")
	flag.Parse()

	logger := log.New(os.Stderr, "testweb: ", log.LstdFlags)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		logger.Fatal(err)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	if err := serve(ln, *ver, *drain, sigs, logger); err != nil {
		logger.Fatal(err)
	}
}

// handler answers / with the version and /healthz with ok.
func handler(ver string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, ver+"\n")
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	})
	return mux
}

// serve serves on ln until a signal arrives on sigs, then goes on serving
// for drain, shuts down (waiting for requests in flight, at most 10 s) and
// returns nil. It returns an error if serving fails before that.
func serve(ln net.Listener, ver string, drain time.Duration, sigs <-chan os.Signal, logger *log.Logger) error {
	srv := &http.Server{Handler: handler(ver), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	logger.Printf("serving version %s on %s", ver, ln.Addr())
	select {
	case err := <-done:
		return err
	case sig := <-sigs:
		logger.Printf("got %s, serving %s more before stopping", sigName(sig), drain)
	}
	time.Sleep(drain)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	logger.Printf("stopped")
	return nil
}

// sigName is SIGTERM for syscall.SIGTERM (its String() is "terminated").
func sigName(sig os.Signal) string {
	switch sig {
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGINT:
		return "SIGINT"
	}
	return sig.String()
}
