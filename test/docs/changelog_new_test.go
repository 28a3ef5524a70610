package docs_test

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/blang/semver/v4"
	"sigs.k8s.io/yaml"
)

// lastRelease is the newest release in catalog/releases older than the
// Makefile's VERSION, and the commit catalog/releases/commits records for
// it.
func lastRelease(t *testing.T) (version, commit string) {
	t.Helper()
	current := semver.MustParse(currentVersion(t))
	files, err := os.ReadDir(filepath.Join(root, "catalog", "releases"))
	if err != nil {
		t.Fatal(err)
	}
	var last *semver.Version
	for _, f := range files {
		if m := releaseFileName.FindStringSubmatch(f.Name()); m != nil {
			v := semver.MustParse(m[1])
			if v.LT(current) && (last == nil || v.GT(*last)) {
				last = &v
			}
		}
	}
	if last == nil {
		t.Skip("no release before VERSION in catalog/releases: everything is new")
	}
	f, err := os.Open(filepath.Join(root, "catalog", "releases", "commits"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	for lines := bufio.NewScanner(f); lines.Scan(); {
		if fields := strings.Fields(lines.Text()); len(fields) == 2 && fields[0] == last.String() {
			commit = fields[1]
		}
	}
	if commit == "" {
		t.Fatalf("catalog/releases/commits names no commit for release %s", last)
	}
	return last.String(), commit
}

// changelogSection is CHANGELOG.md's section for version, to the next
// release's heading.
func changelogSection(t *testing.T, version string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "\n## ["+version+"]")
	if start < 0 {
		t.Fatalf("CHANGELOG.md has no section for %s", version)
	}
	text = text[start+1:]
	if end := strings.Index(text, "\n## ["); end >= 0 {
		text = text[:end]
	}
	return text
}

// reasonsAt are the event and condition reasons (constants Reason... and
// Event...) api/v1beta1 declared at commit.
func reasonsAt(t *testing.T, commit string) map[string]bool {
	t.Helper()
	out, err := exec.Command("git", "-C", root, "ls-tree", "--name-only", commit, "api/v1beta1/").CombinedOutput()
	if err != nil {
		t.Fatalf("commit %s (catalog/releases/commits) is not in this clone (%s): clone with full history (in a shallow clone: git fetch --unshallow)", commit, out)
	}
	reasons := map[string]bool{}
	fset := token.NewFileSet()
	for _, path := range strings.Fields(string(out)) {
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			continue
		}
		src, err := exec.Command("git", "-C", root, "show", commit+":"+path).Output()
		if err != nil {
			t.Fatalf("git show %s:%s: %v", commit, path, err)
		}
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for name, value := range fileStringConstants(f) {
			if strings.HasPrefix(name, "Reason") || strings.HasPrefix(name, "Event") {
				reasons[value] = true
			}
		}
	}
	return reasons
}

// TestChangelogNamesNewReasons: every event or condition reason api/v1beta1
// declares now and did not at the last release is named (as code) in
// CHANGELOG.md's section for VERSION: users see them in kubectl describe
// and alert on them.
func TestChangelogNamesNewReasons(t *testing.T) {
	version, commit := lastRelease(t)
	before := reasonsAt(t, commit)
	section := changelogSection(t, currentVersion(t))
	named := map[string]bool{}
	for _, m := range inlineCode.FindAllStringSubmatch(section, -1) {
		named[m[1]] = true
	}
	var missing []string
	for value, name := range reasonConstants(t) {
		if !before[value] && !named[value] {
			missing = append(missing, "`"+value+"` ("+name+")")
		}
	}
	slices.Sort(missing)
	for _, m := range missing {
		t.Errorf("reason %s is new since %s and CHANGELOG.md's %s section does not name it", m, version, currentVersion(t))
	}
}

// grant is one verb on one resource (group/resource) of a CSV's rules.
type grant struct{ group, resource, verb string }

// csvGrants are the rules of a CSV's permissions and clusterPermissions.
func csvGrants(t *testing.T, csv map[string]any) map[grant]bool {
	t.Helper()
	var spec struct {
		Spec struct {
			Install struct {
				Spec struct {
					Permissions, ClusterPermissions []struct {
						Rules []struct {
							APIGroups, Resources, Verbs []string
						}
					}
				}
			}
		}
	}
	b, _ := json.Marshal(csv)
	if err := json.Unmarshal(b, &spec); err != nil {
		t.Fatal(err)
	}
	out := map[grant]bool{}
	s := spec.Spec.Install.Spec
	for _, p := range append(s.Permissions, s.ClusterPermissions...) {
		for _, r := range p.Rules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, v := range r.Verbs {
						out[grant{g, res, v}] = true
					}
				}
			}
		}
	}
	if len(out) < 10 {
		t.Fatalf("read only %d grants from a CSV: has its layout changed?", len(out))
	}
	return out
}

// releasedCSV is the CSV of a release's entry in catalog/releases (an
// olm.bundle.object property, base64 JSON).
func releasedCSV(t *testing.T, version string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "catalog", "releases", "mydeployment-operator.v"+version+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(b), "\n---") {
		var entry struct {
			Properties []struct {
				Type  string
				Value struct{ Data string }
			}
		}
		if err := yaml.Unmarshal([]byte(doc), &entry); err != nil {
			t.Fatal(err)
		}
		for _, p := range entry.Properties {
			if p.Type != "olm.bundle.object" {
				continue
			}
			raw, err := base64.StdEncoding.DecodeString(p.Value.Data)
			if err != nil {
				t.Fatal(err)
			}
			var obj map[string]any
			if err := json.Unmarshal(raw, &obj); err != nil {
				t.Fatal(err)
			}
			if obj["kind"] == "ClusterServiceVersion" {
				return obj
			}
		}
	}
	t.Fatalf("catalog/releases holds no CSV for %s", version)
	return nil
}

// TestChangelogNamesNewGrants: every rule the manager gained or lost since
// the last release (bundle/'s CSV against the release's in
// catalog/releases) is named in an upgrade note of VERSION's section: one
// bullet naming the resource and the verb. A cluster admin who grants the
// operator's rules by hand reads them there.
func TestChangelogNamesNewGrants(t *testing.T) {
	version, _ := lastRelease(t)
	before := csvGrants(t, releasedCSV(t, version))
	b, err := os.ReadFile(filepath.Join(root, "bundle", "manifests", "mydeployment-operator.clusterserviceversion.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var csv map[string]any
	if err := yaml.Unmarshal(b, &csv); err != nil {
		t.Fatal(err)
	}
	now := csvGrants(t, csv)
	section := changelogSection(t, currentVersion(t))
	notes := ""
	if i := strings.Index(section, "### Upgrade notes"); i >= 0 {
		notes = section[i:]
		if j := strings.Index(notes[1:], "\n### "); j >= 0 {
			notes = notes[:j+1]
		}
	}
	bullets := regexp.MustCompile(`(?m)^- `).Split(notes, -1)
	word := func(w string) *regexp.Regexp {
		return regexp.MustCompile(`(?i)(^|[^a-z])` + regexp.QuoteMeta(w) + `($|[^a-z])`)
	}
	check := func(g grant, change string) {
		for _, bullet := range bullets {
			if word(g.resource).MatchString(bullet) && word(g.verb).MatchString(bullet) {
				return
			}
		}
		t.Errorf("the manager %s %s on %s (group %s) since %s, and no upgrade note of CHANGELOG.md's %s section names %q with %q",
			change, strconv.Quote(g.verb), g.resource, strconv.Quote(g.group), version, currentVersion(t), g.verb, g.resource)
	}
	for g := range now {
		if !before[g] {
			check(g, "gained")
		}
	}
	for g := range before {
		if !now[g] {
			check(g, "lost")
		}
	}
}
