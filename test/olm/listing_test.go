package olm

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/manifests"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// TestBundleListing checks what a catalog shows a user of the bundle: the
// CSV's description covers both kinds and every opt-in, and the
// alm-examples (the console's "create" templates) carry none of the
// scaffold's labels, which would claim a user's object is the operator's
// (app.kubernetes.io/name: mydeployment-operator) or kustomize's.
func TestBundleListing(t *testing.T) {
	bundle, err := manifests.GetBundleFromDir(filepath.Join("..", "..", "bundle"))
	if err != nil {
		t.Fatalf("reading bundle/: %v", err)
	}
	csv := bundle.CSV
	for _, want := range []string{
		"**MyDeployment**", "**Application**",
		appsv1beta1.PartitionAnnotation, appsv1beta1.SpecifiedDeleteLabel,
		appsv1beta1.RespectPDBAnnotation, appsv1beta1.UpdateModeAnnotation, appsv1beta1.DrainAnnotation,
		appsv1beta1.RolloutOnConfigChangeAnnotation, appsv1beta1.CanaryStepsAnnotation, appsv1beta1.OnFailureAnnotation,
		"HTTPRoute",
	} {
		if !strings.Contains(csv.Spec.Description, want) {
			t.Errorf("the CSV's description does not mention %s", want)
		}
	}
	var examples []unstructured.Unstructured
	if err := json.Unmarshal([]byte(csv.Annotations["alm-examples"]), &examples); err != nil {
		t.Fatalf("alm-examples: %v", err)
	}
	kinds := map[string]bool{}
	for _, e := range examples {
		kinds[e.GetKind()] = true
		for _, l := range []string{"app.kubernetes.io/managed-by", "app.kubernetes.io/name"} {
			if v, ok := e.GetLabels()[l]; ok {
				t.Errorf("alm-examples: %s %s carries the scaffold's label %s=%s (config/samples)", e.GetKind(), e.GetName(), l, v)
			}
		}
	}
	for _, k := range []string{"MyDeployment", "Application"} {
		if !kinds[k] {
			t.Errorf("alm-examples has no %s", k)
		}
	}
}
