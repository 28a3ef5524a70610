package utils

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck
)

// releaseCommits is where `make catalog-release` records the commit each
// release was built from ("<version> <commit>" a line).
const releaseCommits = "catalog/releases/commits"

// ReleaseCommit is the commit release version was built from, as
// catalog/releases/commits records it, checked to be in this clone.
func ReleaseCommit(projectDir, version string) string {
	path := filepath.Join(projectDir, releaseCommits)
	f, err := os.Open(path)
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), "%s records the commit of each release (make catalog-release)", releaseCommits)
	defer func() { _ = f.Close() }()
	commit := ""
	for lines := bufio.NewScanner(f); lines.Scan(); {
		if fields := strings.Fields(lines.Text()); len(fields) == 2 && fields[0] == version {
			commit = fields[1]
		}
	}
	ExpectWithOffset(1, commit).NotTo(BeEmpty(), "%s names no commit for release %s: record releases with make catalog-release", releaseCommits, version)
	out, err := exec.Command("git", "-C", projectDir, "cat-file", "-e", commit+"^{commit}").CombinedOutput()
	ExpectWithOffset(1, err).NotTo(HaveOccurred(),
		"commit %s of release %s (%s) is not in this clone (%s): the upgrade test builds that release's manager from it; "+
			"clone with full history (no --depth; in a shallow clone: git fetch --unshallow)", commit, version, releaseCommits, out)
	return commit
}

// ReleaseManager returns the manager binary of release version, built from
// the release's source commit (ReleaseCommit) as `make build` builds
// bin/manager, and cached as bin/release-manager/<commit>/manager: the
// first call takes a build, later ones none.
func ReleaseManager(projectDir, version string) string {
	commit := ReleaseCommit(projectDir, version)
	bin := filepath.Join(projectDir, "bin", "release-manager", commit, "manager")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	By(fmt.Sprintf("building release %s's manager from its commit %.12s (cached in %s)", version, commit, filepath.Dir(bin)))
	ExpectWithOffset(1, os.MkdirAll(filepath.Dir(bin), 0o755)).To(Succeed())
	src, err := os.MkdirTemp(filepath.Dir(bin), "src-")
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	defer func() { _ = os.RemoveAll(src) }()
	out, err := exec.Command("sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", projectDir, commit, src).CombinedOutput()
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), "git archive %s: %s", commit, out)
	// The flags of `make build` (none): the build cache then serves every
	// dependency bin/manager was built with; only the project's own
	// packages compile again (about 25 s of CPU).
	build := exec.Command("go", "build", "-o", bin+".tmp", "./cmd")
	build.Dir = src
	out, err = build.CombinedOutput()
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), "building release %s's manager at %s: %s", version, commit, out)
	ExpectWithOffset(1, os.Rename(bin+".tmp", bin)).To(Succeed())
	return bin
}
