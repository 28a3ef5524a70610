// Package olm holds the checks of the OLM bundle that need no cluster.
package olm

import (
	"path/filepath"
	"testing"

	"github.com/operator-framework/api/pkg/manifests"

	"github.com/mydeployment-io/mydeployment-operator/test/olm/operatorhub"
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
	for _, err := range operatorhub.Validate(bundle, operatorhub.SuiteOperatorFramework...) {
		t.Error(err)
	}
}
