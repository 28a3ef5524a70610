package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// versionRefs are where the docs name a version of this operator in what a
// user copies: an image tag of the manager, bundle, catalog or scorecard
// tests, and a ClusterExtension's (or Subscription's) version pin.
var versionRefs = []*regexp.Regexp{
	regexp.MustCompile(`mydeployment-operator(?:-bundle|-catalog|-scorecard-test)?:v(\d+\.\d+\.\d+)`),
	regexp.MustCompile(`^\s*(?:version|startingCSV): "?(?:mydeployment-operator\.v)?(\d+\.\d+\.\d+)"?`),
}

// currentVersion is the Makefile's VERSION.
func currentVersion(t *testing.T) string {
	t.Helper()
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := makeVersion.FindSubmatch(mk)
	if m == nil {
		t.Fatal("Makefile: no 'VERSION ?= x.y.z' line")
	}
	return string(m[1])
}

// TestDocsNameTheCurrentVersion: the commands and manifests of the README
// and docs/ (fenced blocks and inline code) install this version, the
// Makefile's VERSION, so a version bump cannot leave a user installing the
// one before. An older version may be named where the line's prose names
// it too ("The 0.1.0 entry names `...-bundle:v0.1.0`"): there it is meant.
func TestDocsNameTheCurrentVersion(t *testing.T) {
	current := currentVersion(t)
	checked := 0
	for _, d := range docs(t) {
		fenced := false
		for i, line := range strings.Split(d.text, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				fenced = !fenced
				continue
			}
			var code []string
			prose := ""
			if fenced {
				code = []string{line}
			} else {
				for _, m := range inlineCode.FindAllStringSubmatch(line, -1) {
					code = append(code, m[1])
				}
				prose = inlineCode.ReplaceAllString(line, "")
			}
			for _, c := range code {
				for _, re := range versionRefs {
					for _, m := range re.FindAllStringSubmatch(c, -1) {
						checked++
						if m[1] == current || strings.Contains(prose, m[1]) {
							continue
						}
						t.Errorf("%s:%d: %q names version %s, but VERSION (the Makefile's) is %s: name %s, or say in the sentence which older version you mean",
							d.path, i+1, strings.TrimSpace(c), m[1], current, current)
					}
				}
			}
		}
	}
	if checked < 5 {
		t.Errorf("found only %d version references in the docs: has the way they name images changed?", checked)
	}
}

// makeBundle is `make bundle` (the target alone, not bundle-build or
// bundle-push) and what IMAGE_TAG_BASE it is given.
var (
	makeBundle   = regexp.MustCompile(`\bmake\b[^#]*\sbundle(\s|$)`)
	tagBaseSet   = regexp.MustCompile(`\bIMAGE_TAG_BASE=\S`)
	pushesBundle = regexp.MustCompile(`\bmake\b[^#]*\sbundle-push\b`)
)

// TestBundlePushedOnlyAfterMakeBundle: a doc that has the user push the
// bundle image first has them regenerate bundle/ with their
// IMAGE_TAG_BASE (on the `make bundle` line, or exported before it): the
// committed CSV names the manager as mydeployment.io/..., which no
// registry serves, so a bundle pushed without it installs a manager that
// never pulls.
func TestBundlePushedOnlyAfterMakeBundle(t *testing.T) {
	pushes := 0
	for _, d := range docs(t) {
		exported, regenerated := false, false
		for _, c := range d.code {
			if strings.HasPrefix(strings.TrimSpace(c), "export ") && tagBaseSet.MatchString(c) {
				exported = true
			}
			if makeBundle.MatchString(c) && (exported || tagBaseSet.MatchString(c)) {
				regenerated = true
			}
			if pushesBundle.MatchString(c) {
				pushes++
				if !regenerated {
					t.Errorf("%s: %q pushes the bundle, but no `make bundle IMAGE_TAG_BASE=<registry>/mydeployment-operator` comes before it: the bundle would name mydeployment.io's manager image", d.path, c)
				}
			}
		}
	}
	if pushes == 0 {
		t.Error("no doc pushes the bundle (make bundle-push): has the way the docs publish it changed?")
	}
}
