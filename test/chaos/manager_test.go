package chaos

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// manager is the built bin/manager run as a host process, as `make run`
// does, as the service account config/ deploys it with (managerKubeconfig
// impersonates it); every start logs to a file of its own under bin/chaos/logs.
type manager struct {
	name  string
	args  []string
	env   []string
	mu    sync.Mutex
	cmd   *exec.Cmd
	done  chan struct{}
	log   string
	logs  []string
	kills int
}

func newManager(name string, env []string, args ...string) *manager {
	level := cmp.Or(os.Getenv("CHAOS_MANAGER_LOG_LEVEL"), "info") // debug: the plan of every sync
	base := []string{"--metrics-bind-address=0", "--health-probe-bind-address=0", "--zap-log-level=" + level}
	return &manager{name: name, args: append(base, args...), env: append([]string{"ENABLE_WEBHOOKS=false", "KUBECONFIG=" + managerKubeconfig}, env...)}
}

// start runs a new process; the previous one must have exited.
func (m *manager) start() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.log = filepath.Join(logDir, fmt.Sprintf("%s-%02d.log", m.name, len(m.logs)))
	f, err := os.Create(m.log)
	if err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(projectDir, "bin", "manager"), m.args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), m.env...)
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); _ = f.Close(); close(done) }()
	m.cmd, m.done = cmd, done
	m.logs = append(m.logs, m.log)
	return nil
}

// kill SIGKILLs the running process (no cleanup, no lease release) and
// waits for it to be gone.
func (m *manager) kill() {
	m.mu.Lock()
	cmd, done := m.cmd, m.done
	m.cmd = nil
	if cmd != nil {
		m.kills++
	}
	m.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// stop ends the process gracefully (SIGTERM), killing it after 10 s.
func (m *manager) stop() {
	m.mu.Lock()
	cmd, done := m.cmd, m.done
	m.cmd = nil
	m.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-done
	}
}

func (m *manager) running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return false
	}
	select {
	case <-m.done:
		return false
	default:
		return true
	}
}

// currentLogHas reports whether the running process's log contains s.
func (m *manager) currentLogHas(s string) bool {
	m.mu.Lock()
	log := m.log
	m.mu.Unlock()
	b, _ := os.ReadFile(log)
	return bytes.Contains(b, []byte(s))
}

// count counts lines containing s over every process this manager ran.
func (m *manager) count(s string) int {
	n := 0
	for _, l := range m.logs {
		b, _ := os.ReadFile(l)
		n += strings.Count(string(b), s)
	}
	return n
}

// tail returns the last lines of the latest log, for failure messages.
func (m *manager) tail(lines int) string {
	b, _ := os.ReadFile(m.log)
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}
