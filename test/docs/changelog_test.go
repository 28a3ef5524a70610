package docs_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/blang/semver/v4"
)

var (
	// releaseHeading is a release's section: "## [0.2.0] - 2026-11-28", or
	// "- Unreleased" for the version being made.
	releaseHeading = regexp.MustCompile(`^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2}|Unreleased)$`)
	// changeTypes are Keep a Changelog's kinds of change, plus our upgrade notes.
	changeTypes = []string{"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security", "Upgrade notes"}
	// makeVersion is the Makefile's VERSION line.
	makeVersion     = regexp.MustCompile(`(?m)^VERSION \?= (\S+)$`)
	releaseFileName = regexp.MustCompile(`^mydeployment-operator\.v(\d+\.\d+\.\d+)\.yaml$`)
)

// changelogSections returns CHANGELOG.md's release sections in order:
// version -> date ("Unreleased" for the version being made).
func changelogSections(t *testing.T) (versions []string, dates map[string]string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if !strings.HasPrefix(text, "# Changelog\n") || !strings.Contains(text, "[Keep a Changelog](https://keepachangelog.com/") {
		t.Errorf("CHANGELOG.md: want the title '# Changelog' and a link to Keep a Changelog")
	}
	dates = map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			m := releaseHeading.FindStringSubmatch(line)
			if m == nil {
				t.Errorf("CHANGELOG.md: heading %q is not '## [x.y.z] - YYYY-MM-DD' (or '- Unreleased')", line)
				continue
			}
			if _, dup := dates[m[1]]; dup {
				t.Errorf("CHANGELOG.md: version %s has two sections", m[1])
			}
			versions, dates[m[1]] = append(versions, m[1]), m[2]
		case strings.HasPrefix(line, "### "):
			if kind := strings.TrimPrefix(line, "### "); !slices.Contains(changeTypes, kind) {
				t.Errorf("CHANGELOG.md: %q is none of %v", line, changeTypes)
			}
		}
	}
	return versions, dates
}

// TestChangelog: CHANGELOG.md in Keep a Changelog's shape, newest release
// first; a dated section for every release in catalog/releases, and one
// (dated or Unreleased) for the Makefile's VERSION; only that one may be
// Unreleased.
func TestChangelog(t *testing.T) {
	versions, dates := changelogSections(t)
	sorted := slices.SortedFunc(slices.Values(versions), func(a, b string) int {
		return semver.MustParse(b).Compare(semver.MustParse(a))
	})
	if !slices.Equal(versions, sorted) {
		t.Errorf("CHANGELOG.md: sections %v, want the newest first: %v", versions, sorted)
	}

	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := makeVersion.FindSubmatch(mk)
	if m == nil {
		t.Fatal("Makefile: no 'VERSION ?= x.y.z' line")
	}
	current := string(m[1])
	if _, ok := dates[current]; !ok {
		t.Errorf("CHANGELOG.md has no section for VERSION %s (the Makefile's): add '## [%s] - Unreleased'", current, current)
	}
	files, err := os.ReadDir(filepath.Join(root, "catalog", "releases"))
	if err != nil {
		t.Fatal(err)
	}
	released := 0
	for _, f := range files {
		if m := releaseFileName.FindStringSubmatch(f.Name()); m != nil {
			released++
			if d, ok := dates[m[1]]; !ok || d == "Unreleased" {
				t.Errorf("release %s (catalog/releases) has no dated section in CHANGELOG.md (%q)", m[1], d)
			}
		}
	}
	if released == 0 {
		t.Error("catalog/releases holds no release: the test reads the wrong folder")
	}
	for v, d := range dates {
		if d == "Unreleased" && v != current {
			t.Errorf("CHANGELOG.md: %s is Unreleased, but only VERSION %s may be", v, current)
		}
	}
}

// TestCatalogReleaseNeedsChangelog: `make catalog-release` (hack/catalog.sh
// release) refuses a version CHANGELOG.md does not name, and one whose
// section is not dated, saying what to write. It runs on a copy of the
// script and the changelog, so a check that let the release through
// records nothing here.
func TestCatalogReleaseNeedsChangelog(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"hack/catalog.sh", "CHANGELOG.md"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cases := map[string]string{"9.9.9": "CHANGELOG.md names no release 9.9.9: add its section, '## [9.9.9] - "}
	_, dates := changelogSections(t)
	for v, d := range dates {
		if d == "Unreleased" {
			cases[v] = "CHANGELOG.md's section for " + v + " is not dated ('## [" + v + "] - Unreleased'): make it '## [" + v + "] - "
		}
	}
	for version, want := range cases {
		cmd := exec.Command(filepath.Join(dir, "hack", "catalog.sh"), "release")
		cmd.Env = append(os.Environ(), "VERSION="+version, "BUNDLE_IMG=example.com/bundle:v"+version)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), want) {
			t.Errorf("catalog.sh release of %s: %v, output %q; want a refusal saying %q", version, err, out, want)
		}
		if _, err := os.Stat(filepath.Join(dir, "catalog")); err == nil {
			t.Errorf("catalog.sh release of %s wrote catalog/ before refusing", version)
		}
	}
}
