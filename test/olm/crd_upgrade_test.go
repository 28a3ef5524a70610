package olm

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/operator-framework/api/pkg/manifests"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

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
	var findings []crdsafety.Finding
	shipped := map[string]bool{}
	for _, crd := range bundle.V1CRDs {
		shipped[crd.Name] = true
		i := slices.IndexFunc(oldCRDs, func(o *apiextensionsv1.CustomResourceDefinition) bool { return o.Name == crd.Name })
		if i < 0 {
			t.Logf("%s: new in %s (not in %s): nothing to compare against, passes", crd.Name, version, last.Name)
			continue
		}
		f, err := crdsafety.Check(oldCRDs[i], crd)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: compared with %s: %d change(s) crdify calls unsafe", crd.Name, last.Name, len(f))
		findings = append(findings, f...)
	}
	for _, o := range oldCRDs {
		if !shipped[o.Name] {
			findings = append(findings, crdsafety.Finding{CRD: o.Name, Check: "crdRemoval",
				Message: "in " + last.Name + " but not in this bundle: objects stored under it would be left without their API"})
		}
	}
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
		t.Logf("a deliberate break? list it in catalog/crd-upgrade-breaks.yaml with version %s (see README, OLM bundle)", version)
	}
}
