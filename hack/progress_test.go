package hack

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// hack/progress.sh is what make run-local and hack/tools.sh print their
// steps with: every terminal line carries the time since the start, and
// the output of what a step runs goes to its log, not the terminal.

// stamped is a progress line: "[m:ss] text".
var stamped = regexp.MustCompile(`^\[ *\d+:\d\d\] +\S`)

// progress runs script after sourcing progress.sh; it returns stderr's
// lines (the terminal's) and the exit status.
func progress(t *testing.T, script string, env ...string) ([]string, int) {
	t.Helper()
	cmd := exec.Command("bash", "-c", ". ./progress.sh\n"+script)
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	code := 0
	if exitErr, ok := err.(*exec.ExitError); ok {
		code = exitErr.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n"), code
}

func TestProgressKeepsNoiseInTheLogAndStampsEveryLine(t *testing.T) {
	log := filepath.Join(t.TempDir(), "build.log")
	noisy := `progress_run "[1/2] building x" ` + log + ` sh -c 'for i in 1 2 3; do echo "go: downloading example.com/m$i v1.0.0" >&2; done; sleep 3; echo built'
progress_run "[2/2] building y" ` + log + ` true`
	lines, code := progress(t, noisy, "PROGRESS_TICK=1")
	if code != 0 {
		t.Fatalf("exit %d: %q", code, lines)
	}
	for _, l := range lines {
		if !stamped.MatchString(l) {
			t.Errorf("terminal line without its time: %q", l)
		}
		if strings.Contains(l, "go: downloading") {
			t.Errorf("go's output on the terminal: %q", l)
		}
	}
	joined := strings.Join(lines, "\n")
	for _, want := range []string{"[1/2] building x ...", "still [1/2] building x (", "done in", "[2/2] building y ..."} {
		if !strings.Contains(joined, want) {
			t.Errorf("no %q in:\n%s", want, joined)
		}
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(data), "go: downloading") != 3 || !strings.Contains(string(data), "built") {
		t.Errorf("the log lacks the step's output:\n%s", data)
	}
}

func TestProgressShowsTheLogOfAFailedStep(t *testing.T) {
	log := filepath.Join(t.TempDir(), "build.log")
	lines, code := progress(t, `progress_run "building z" `+log+` sh -c 'echo "z.go:1: undefined: q"; exit 3'`)
	if code != 3 {
		t.Errorf("exit %d, want the step's 3", code)
	}
	joined := strings.Join(lines, "\n")
	if !strings.Contains(joined, "FAILED: building z") || !strings.Contains(joined, "z.go:1: undefined: q") {
		t.Errorf("a failed step must say so and show its log's end:\n%s", joined)
	}
}
