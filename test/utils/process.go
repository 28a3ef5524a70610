package utils

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Process is a long-running host process a suite starts (an operator, a
// registry server) with its output in a log file.
type Process struct {
	Name string
	Log  string
	cmd  *exec.Cmd
	done chan error
}

// Start runs bin with args and extra environment (on top of the test's),
// writing its output to logPath.
func Start(name, logPath string, env []string, bin string, args ...string) (*Process, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{Name: name, Log: logPath, cmd: cmd, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait(); _ = f.Close() }()
	return p, nil
}

// Exited reports whether the process has ended (and how), without waiting.
func (p *Process) Exited() (bool, error) {
	select {
	case err := <-p.done:
		p.done <- err
		return true, err
	default:
		return false, nil
	}
}

// Stop sends SIGTERM, waits up to 15 s, then kills. Safe to call twice and on nil.
func (p *Process) Stop() {
	if p == nil {
		return
	}
	if exited, _ := p.Exited(); exited {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
	}
}

// Kill ends the process with SIGKILL, as a crash or the OOM killer would
// (nothing it could do on the way out, such as releasing a lease, is done),
// and waits until it is gone. Safe to call on nil and on an ended process.
func (p *Process) Kill() {
	if p == nil {
		return
	}
	if exited, _ := p.Exited(); exited {
		return
	}
	_ = p.cmd.Process.Kill()
	err := <-p.done
	p.done <- err
}

// FreePort returns a TCP port on 127.0.0.1 that nothing listens on now.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}
