package main

import (
	"bufio"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestSleep: sleep in process (no program on PATH), its operands summed,
// and refused operands with status 1.
func TestSleep(t *testing.T) {
	env := []string{"PATH=" + t.TempDir()}
	start := time.Now()
	code, out, errOut := runSh(t, env, "", "-c", "sleep 0.2 0.1s && echo done")
	if took := time.Since(start); code != 0 || out != "done\n" || took < 300*time.Millisecond || took > 5*time.Second {
		t.Fatalf("sleep 0.2 0.1s: exit %d, stdout %q, stderr %q, after %s", code, out, errOut, took)
	}
	for _, c := range []struct {
		operand string
		want    time.Duration
	}{
		{"1", time.Second}, {"1.5", 1500 * time.Millisecond}, {"2s", 2 * time.Second}, {"0.5m", 30 * time.Second},
		{"1h", time.Hour}, {"1d", 24 * time.Hour}, {".25", 250 * time.Millisecond},
	} {
		if d, err := sleepDuration(c.operand); err != nil || d != c.want {
			t.Errorf("sleep %s: %s, %v; want %s", c.operand, d, err, c.want)
		}
	}
	for _, bad := range []string{"", "-1", "x", "1y", "inf", "nan", "0x10", "1e3", "1_0"} {
		if d, err := sleepDuration(bad); err == nil {
			t.Errorf("sleep %q: %s, want refused", bad, d)
		}
	}
	for _, script := range []string{"sleep", "sleep x", "sleep 1 -1"} {
		if code, _, errOut := runSh(t, env, "", "-c", script); code != 1 || errOut == "" {
			t.Errorf("%s: exit %d, stderr %q; want 1 and why", script, code, errOut)
		}
	}
}

// TestSIGTERMDuringSleep: sleep runs in process, no child: SIGTERM ends the
// shell at once, 143, as it would a shell waiting in sleep(1) without a trap.
func TestSIGTERMDuringSleep(t *testing.T) {
	cmd := exec.Command(shBinary(t), "-c", "echo ready; sleep 600; echo after")
	cmd.Env = []string{"PATH=" + t.TempDir()}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(stdout)
	if line, err := r.ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("%q, %v", line, err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code, rest := waitStatus(t, cmd, r)
	if code != 143 || rest != "" {
		t.Errorf("exit %d, then stdout %q; want 143 and nothing", code, rest)
	}
}
