package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
)

// profileSliceS is the length of one CPU profile slice: a window is covered
// by back-to-back slices, which `go tool pprof` merges when given together.
const profileSliceS = 5

// profiler takes CPU profiles of kube-apiserver and, when it serves pprof,
// of our manager, over each scenario window (BENCH_PROFILE_DIR=dir). The
// API server is every party's bottleneck: its profile in one party's window
// against another's says what a party makes it do.
type profiler struct {
	dir       string
	apiserver *rest.Config
	apiClient *http.Client
}

func newProfiler(dir string, cfg *rest.Config) (*profiler, error) {
	if dir == "" {
		return nil, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	return &profiler{dir: dir, apiserver: cfg, apiClient: hc}, nil
}

// window starts profiling one party's scenario; the returned stop waits for
// the slices under way (at most profileSliceS) and starts no more. The files
// are <dir>/<party>-<scenario>-<process>-<n>.pprof, and our manager's
// allocation profiles at the window's start and end
// (<party>-<scenario>-manager-allocs-{start,end}.pprof: `go tool pprof
// -base start end` is what the window allocated).
func (p *profiler) window(party, scenario, managerPprof string) (stop func()) {
	if p == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	type target struct {
		url string
		hc  *http.Client
	}
	targets := map[string]target{"kube-apiserver": {strings.TrimSuffix(p.apiserver.Host, "/") + "/debug/pprof/profile", p.apiClient}}
	if managerPprof != "" {
		targets["manager"] = target{"http://" + managerPprof + "/debug/pprof/profile", http.DefaultClient}
	}
	allocs := func(which string) {
		if managerPprof == "" {
			return
		}
		path := filepath.Join(p.dir, fmt.Sprintf("%s-%s-manager-allocs-%s.pprof", party, scenario, which))
		if err := fetchProfile(http.DefaultClient, "http://"+managerPprof+"/debug/pprof/allocs", path); err != nil {
			logf("allocation profile of the manager: %v", err)
		}
	}
	allocs("start")
	for proc, t := range targets {
		wg.Go(func() {
			for n := 0; ctx.Err() == nil; n++ {
				path := filepath.Join(p.dir, fmt.Sprintf("%s-%s-%s-%03d.pprof", party, scenario, proc, n))
				if err := fetchProfile(t.hc, fmt.Sprintf("%s?seconds=%d", t.url, profileSliceS), path); err != nil {
					logf("profile of %s: %v", proc, err)
					return
				}
			}
		})
	}
	return func() { cancel(); wg.Wait(); allocs("end") }
}

func fetchProfile(hc *http.Client, url, path string) error {
	resp, err := hc.Get(url)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
