package olm

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mydeployment-io/mydeployment-operator/test/olm/operatorhub"
	"github.com/mydeployment-io/mydeployment-operator/test/olm/releases"
)

// TestOperatorHubSubmission writes the community-operators submission of
// bundle/ as `make operatorhub` does and runs the pipeline's offline static
// checks on it: the layout is operators/<package>/<version>/{manifests,metadata}
// plus ci.yaml in replaces mode, the CSV replaces the last release, and every
// check passes.
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
	}

	notes, errs := operatorhub.Check(s.BundleDir, releasesDir)
	for _, n := range notes {
		t.Log(n)
	}
	for _, e := range errs {
		t.Error(e)
	}
}
