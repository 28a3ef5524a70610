package olm

import (
	"path/filepath"
	"testing"

	"github.com/operator-framework/api/pkg/manifests"

	"github.com/mydeployment-io/mydeployment-operator/test/olm/crdsafety"
	"github.com/mydeployment-io/mydeployment-operator/test/olm/releases"
)

// acceptedBreaksFile lists the CRD changes a release breaks on purpose.
var acceptedBreaksFile = filepath.Join("..", "..", "catalog", "crd-upgrade-breaks.yaml")

// TestCRDUpgradeSafety checks each CRD of bundle/ against the same CRD in the
// last release of catalog/releases with the checks OLM v1 runs before an
// upgrade (crdify): an unsafe change fails unless catalog/crd-upgrade-breaks.yaml
// accepts it for this version. A CRD the release did not have has nothing to
// compare against and passes.
func TestCRDUpgradeSafety(t *testing.T) {
	bundle, err := manifests.GetBundleFromDir(filepath.Join("..", "..", "bundle"))
	if err != nil {
		t.Fatalf("reading bundle/: %v", err)
	}
	version := bundle.CSV.Spec.Version.Version
	released, err := releases.Load(filepath.Join("..", "..", "catalog", "releases"))
	if err != nil {
		t.Fatal(err)
	}
	accepted, err := crdsafety.LoadAccepted(acceptedBreaksFile)
	if err != nil {
		t.Fatal(err)
	}
	last, ok := releases.Latest(released, version)
	if !ok {
		t.Logf("no release before %s in catalog/releases: no CRD to compare against", version)
		return
	}
	oldCRDs, err := last.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	findings, added, err := crdsafety.CompareBundles(oldCRDs, bundle.V1CRDs)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range added {
		t.Logf("%s: new in %s (not in %s): nothing to compare against, passes", name, version, last.Name)
	}
	t.Logf("compared with %s: %d change(s) crdify calls unsafe", last.Name, len(findings))
	unsafe, allowed, unused := crdsafety.Triage(version.String(), findings, accepted)
	for _, f := range allowed {
		t.Logf("accepted by %s: %s", filepath.Base(acceptedBreaksFile), f)
	}
	for _, f := range unsafe {
		t.Errorf("unsafe CRD upgrade from %s (OLM v1 would refuse it): %s", last.Name, f)
	}
	for _, a := range unused {
		t.Errorf("%s: entry %q accepts no change of this bundle: remove it", filepath.Base(acceptedBreaksFile), a)
	}
	if len(unsafe) > 0 {
		t.Logf("a deliberate break? list it in catalog/crd-upgrade-breaks.yaml with version %s (see docs/install.md, Upgrades)", version)
	}
}
