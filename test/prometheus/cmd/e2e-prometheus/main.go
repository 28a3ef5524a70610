// Command e2e-prometheus is the Prometheus of the canary analysis e2e
// (test/e2e): Prometheus' own scrape parser, TSDB and PromQL engine, in
// one process that scrapes one target and answers /api/v1/query. The
// e2e stops it (SIGTERM) and starts it again on the same address and
// data directory to play an outage.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/mydeployment-io/mydeployment-operator/test/prometheus/promserver"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:9090", "address to serve /api/v1/query on")
	target := flag.String("target", "", "URL to scrape (a /metrics endpoint)")
	interval := flag.Duration("scrape-interval", 500*time.Millisecond, "scrape interval")
	dir := flag.String("data", "", "TSDB directory (kept across restarts)")
	flag.Parse()
	if err := run(*listen, *target, *dir, *interval); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(listen, target, dir string, interval time.Duration) error {
	if target == "" || dir == "" {
		return errors.New("--target and --data are required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	db, err := tsdb.Open(dir, nil, nil, tsdb.DefaultOptions(), nil)
	if err != nil {
		return fmt.Errorf("opening the TSDB: %w", err)
	}
	defer func() { _ = db.Close() }()
	s := promserver.NewScraper(target, db, interval, "e2e", "exporter")
	go s.Run(ctx)
	engine := promql.NewEngine(promql.EngineOpts{MaxSamples: 1_000_000, Timeout: 10 * time.Second, LookbackDelta: 5 * time.Minute})
	mux := http.NewServeMux()
	mux.Handle("/api/v1/query", promserver.QueryHandler(engine, db))
	mux.HandleFunc("/-/ready", func(w http.ResponseWriter, _ *http.Request) { _, _ = fmt.Fprintln(w, "ready") })
	srv := &http.Server{Addr: listen, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	errs := make(chan error, 1)
	go func() { errs <- srv.ListenAndServe() }()
	select {
	case err := <-errs:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdown)
	_, _ = s.Finish()
	return nil
}
