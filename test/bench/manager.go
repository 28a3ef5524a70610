package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// managerProc is our bin/manager run as a host process against the cluster.
type managerProc struct {
	cmd              *exec.Cmd
	metrics, healthz string
	pprof            string // its pprof address, when it serves one
	done             chan struct{}
}

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String(), nil
}

// startManager runs bin/manager with the benchmark's client limits and
// workers, and waits until its caches have synced (readyz).
func startManager(ctx context.Context, cfg *config, cl *cluster) (*managerProc, error) {
	metrics, err := freePort()
	if err != nil {
		return nil, err
	}
	health, err := freePort()
	if err != nil {
		return nil, err
	}
	args := []string{
		"--workers", fmt.Sprint(cfg.ManagerWorkers),
		"--kube-api-qps", fmt.Sprint(cfg.QPS),
		"--kube-api-burst", fmt.Sprint(cfg.Burst),
		"--sync-period", cfg.SyncPeriod.String(),
		"--leader-elect=false",
		"--metrics-bind-address", metrics, "--metrics-secure=false",
		"--health-probe-bind-address", health,
	}
	// pprof always: its heap endpoint forces the collection before the
	// live heap is read (runtime.go); idle, it costs nothing.
	pprof := os.Getenv("BENCH_PPROF")
	if pprof == "" {
		if pprof, err = freePort(); err != nil {
			return nil, err
		}
	}
	args = append(args, "--pprof-bind-address", pprof)
	// BENCH_MANAGER_ARGS: more flags for the manager, to try a setting
	// (for example "--status-batch-period=2s"); results.json records them.
	args = append(args, cfg.ManagerArgs...)
	logPath := filepath.Join(cl.workDir, cl.name+"-manager.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(filepath.Join(cfg.root, "bin", "manager"), args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cl.kubeconfig, "ENABLE_WEBHOOKS=false")
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	m := &managerProc{cmd: cmd, metrics: metrics, healthz: health, pprof: pprof, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); _ = logFile.Close(); close(m.done) }()
	err = poll(ctx, time.Minute, 100*time.Millisecond, func() bool {
		select {
		case <-m.done:
			return true
		default:
		}
		resp, err := http.Get("http://" + health + "/readyz")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	select {
	case <-m.done:
		return nil, fmt.Errorf("manager exited; log in %s", logPath)
	default:
	}
	if err != nil {
		m.stop()
		return nil, fmt.Errorf("manager not ready (log in %s): %w", logPath, err)
	}
	return m, nil
}

func (m *managerProc) stop() {
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(15 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.done
	}
}

// reconciles is controller_runtime_reconcile_total of our controller, all results.
func (m *managerProc) reconciles() float64 {
	resp, err := http.Get("http://" + m.metrics + "/metrics")
	if err != nil {
		return 0
	}
	defer func() { _ = resp.Body.Close() }()
	var total float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "controller_runtime_reconcile_total{") || !strings.Contains(line, `controller="mydeployment"`) {
			continue
		}
		if i := strings.LastIndexByte(line, ' '); i > 0 {
			v, _ := strconv.ParseFloat(line[i+1:], 64)
			total += v
		}
	}
	return total
}
