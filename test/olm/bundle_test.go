// Package olm holds the checks of the OLM bundle that need no cluster.
package olm

import (
	"path/filepath"
	"testing"

	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/validation"
	"github.com/operator-framework/api/pkg/validation/errors"
)

// TestBundleValidates runs on bundle/ what `operator-sdk bundle validate
// --select-optional suite=operatorframework` runs, from Go: the default
// bundle validators plus OperatorHub, capabilities, categories, deprecated
// APIs and good practices. Any error or warning fails: a catalog reviewer
// sees the warnings too.
func TestBundleValidates(t *testing.T) {
	bundle, err := manifests.GetBundleFromDir(filepath.Join("..", "..", "bundle"))
	if err != nil {
		t.Fatalf("reading bundle/: %v", err)
	}
	if bundle.CSV == nil {
		t.Fatal("bundle/ has no ClusterServiceVersion")
	}
	validators := validation.DefaultBundleValidators.WithValidators(
		validation.OperatorHubV2Validator,
		validation.StandardCapabilitiesValidator,
		validation.StandardCategoriesValidator,
		validation.AlphaDeprecatedAPIsValidator,
		validation.GoodPracticesValidator,
	)
	// The control plane this project is built and tested on.
	objs := append(bundle.ObjectsToValidate(), map[string]string{"k8s-version": "1.37"})
	results := validators.Validate(objs...)
	checked := 0
	for _, r := range results {
		checked++
		report := func(kind string, list []errors.Error) {
			for _, e := range list {
				t.Errorf("%s %s: %s", r.Name, kind, e.Error())
			}
		}
		report("error", r.Errors)
		report("warning", r.Warnings)
	}
	if checked == 0 {
		t.Fatal("no validator ran")
	}
}
