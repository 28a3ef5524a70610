package olm

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/manifests"

	"github.com/mydeployment-io/mydeployment-operator/test/olm/operatorhub"
	"github.com/mydeployment-io/mydeployment-operator/test/olm/releases"
)

// TestOperatorHubSubmission writes the community-operators submission of
// bundle/ as `make operatorhub` does and runs the pipeline's offline static
// checks on it: the layout is operators/<package>/<version>/{manifests,metadata}
// plus ci.yaml in replaces mode, the CSV replaces the last release and skips
// from every release (olm.skipRange), and every check passes.
func TestOperatorHubSubmission(t *testing.T) {
	releasesDir := filepath.Join("..", "..", "catalog", "releases")
	out := t.TempDir()
	s, err := operatorhub.Write(operatorhub.Options{BundleDir: filepath.Join("..", "..", "bundle"), ReleasesDir: releasesDir, OutDir: out})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(out, "operators", "mydeployment-operator", s.Version); s.BundleDir != want {
		t.Errorf("bundle folder %s, want %s", s.BundleDir, want)
	}
	for _, sub := range []string{"manifests", "metadata"} {
		if fi, err := os.Stat(filepath.Join(s.BundleDir, sub)); err != nil || !fi.IsDir() {
			t.Errorf("%s/%s: not a folder (%v)", s.BundleDir, sub, err)
		}
	}
	ci, err := os.ReadFile(filepath.Join(s.PackageDir, "ci.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "updateGraph: replaces-mode"; !slices.Contains(strings.Split(string(ci), "\n"), want) {
		t.Errorf("ci.yaml:\n%s\nwant the line %q", ci, want)
	}

	released, err := releases.Load(releasesDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(released) > 0 {
		if last := released[len(released)-1]; last.Name != s.Replaces && last.Version.String() != s.Version {
			t.Errorf("the submission replaces %q, want the last release %s", s.Replaces, last.Name)
		}
		// Every release upgrades to this one in one step: the skipRange
		// (OLM v0 and v1 read it; blang/semver ranges, as both parse it).
		bundle, err := manifests.GetBundleFromDir(s.BundleDir)
		if err != nil {
			t.Fatal(err)
		}
		skipRange := bundle.CSV.Annotations["olm.skipRange"]
		in, err := semver.ParseRange(skipRange)
		if err != nil {
			t.Fatalf("olm.skipRange %q: %v", skipRange, err)
		}
		for _, b := range released {
			if b.Version.String() != s.Version && !in(b.Version) {
				t.Errorf("olm.skipRange %q leaves out release %s: it cannot upgrade to %s in one step", skipRange, b.Version, s.Version)
			}
		}
	}

	notes, errs := operatorhub.Check(s.BundleDir, releasesDir)
	for _, n := range notes {
		t.Log(n)
	}
	for _, e := range errs {
		t.Error(e)
	}
}
