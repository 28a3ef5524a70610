package utils

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onsi/gomega"
)

// failureOf runs f with gomega failing into a panic and returns the failure
// message ("" if f did not fail).
func failureOf(f func()) (msg string) {
	type failed struct{ msg string }
	gomega.RegisterFailHandler(func(m string, _ ...int) { panic(failed{m}) })
	defer func() {
		if r := recover(); r != nil {
			p, ok := r.(failed)
			if !ok {
				panic(r)
			}
			msg = p.msg
		}
	}()
	f()
	return ""
}

// TestReleaseCommit: the commit catalog/releases/commits names for a
// release, and a clear failure when the release is not recorded or its
// commit is not in the clone (a shallow clone).
func TestReleaseCommit(t *testing.T) {
	dir := t.TempDir()
	git := func(args ...string) string {
		out, err := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("commit", "-q", "--allow-empty", "-m", "release 0.1.0")
	head := git("rev-parse", "HEAD")
	missing := strings.Repeat("1", 40)
	if err := os.MkdirAll(filepath.Join(dir, "catalog", "releases"), 0o755); err != nil {
		t.Fatal(err)
	}
	commits := "0.1.0 " + head + "\n0.2.0 " + missing + "\n"
	if err := os.WriteFile(filepath.Join(dir, releaseCommits), []byte(commits), 0o644); err != nil {
		t.Fatal(err)
	}

	var got string
	if msg := failureOf(func() { got = ReleaseCommit(dir, "0.1.0") }); msg != "" || got != head {
		t.Errorf("0.1.0: %q (failure %q), want %s", got, msg, head)
	}
	for version, want := range map[string]string{
		"0.2.0": "commit " + missing + " of release 0.2.0 (catalog/releases/commits) is not in this clone",
		"0.3.0": "catalog/releases/commits names no commit for release 0.3.0",
	} {
		if msg := failureOf(func() { ReleaseCommit(dir, version) }); !strings.Contains(msg, want) {
			t.Errorf("%s: failure %q, want one saying %q", version, msg, want)
		}
	}
}
