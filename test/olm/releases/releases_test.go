package releases

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blang/semver/v4"
)

// TestLoad reads catalog/releases: 0.1.0 with its CSV and MyDeployment CRD,
// the newest release below 0.2.0, and none below itself.
func TestLoad(t *testing.T) {
	bundles, err := Load(filepath.Join("..", "..", "..", "catalog", "releases"))
	if err != nil {
		t.Fatal(err)
	}
	first, ok := Latest(bundles, semver.MustParse("0.2.0"))
	if !ok || first.Name != "mydeployment-operator.v0.1.0" || first.Package != "mydeployment-operator" {
		t.Fatalf("latest below 0.2.0: %q (package %q, found %v), want mydeployment-operator.v0.1.0", first.Name, first.Package, ok)
	}
	if _, ok := Latest(bundles, first.Version); ok {
		t.Errorf("a release below the first one was found")
	}
	csv, err := first.CSV()
	if err != nil || csv.Spec.Version.String() != "0.1.0" {
		t.Errorf("CSV: %v (err %v), want version 0.1.0", csv, err)
	}
	crds, err := first.CRDs()
	if err != nil || len(crds) != 1 || crds[0].Name != "mydeployments.apps.mydeployment.io" {
		t.Fatalf("CRDs: %d (err %v), want mydeployments.apps.mydeployment.io", len(crds), err)
	}
	enum := crds[0].Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["strategy"].Properties["type"].Enum
	if len(enum) != 2 || string(enum[0].Raw) != `"Recreate"` {
		t.Errorf("strategy type enum %v: raw JSON values lost", enum)
	}
}

// TestLoadRefusesBrokenBlobs: a bundle without a version, or an object that
// is not base64 JSON, is an error naming the bundle.
func TestLoadRefusesBrokenBlobs(t *testing.T) {
	for name, blob := range map[string]string{
		"no version": "schema: olm.bundle\nname: p.v1\npackage: p\nproperties: []\n",
		"not base64": "schema: olm.bundle\nname: p.v1\npackage: p\nproperties:\n- type: olm.package\n  value: {packageName: p, version: 1.0.0}\n- type: olm.bundle.object\n  value: {data: '%%%'}\n",
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "p.v1.yaml"), []byte(blob), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "bundle p.v1") {
			t.Errorf("%s: err %v, want one naming bundle p.v1", name, err)
		}
	}
}
