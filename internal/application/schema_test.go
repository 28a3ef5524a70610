package application

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

func readCRD(t *testing.T, file string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bases", file))
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(raw, crd); err != nil {
		t.Fatal(err)
	}
	return crd
}

// ApplicationDeploymentSpec copies MyDeploymentSpec's fields and rules (its
// template is a pointer, so that the five-line form has none); this keeps the
// copy from drifting: every rule of the MyDeployment's spec and strategy is
// one of spec.deployment's, guarded only for a selector or template left out.
func TestDeploymentRulesAreTheMyDeployments(t *testing.T) {
	md := readCRD(t, "apps.mydeployment.io_mydeployments.yaml").Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	app := readCRD(t, "apps.mydeployment.io_applications.yaml").Spec.Versions[0].Schema.OpenAPIV3Schema.
		Properties["spec"].Properties["deployment"]
	unguard := func(rule string) string {
		for _, f := range []string{"template", "selector"} {
			if guard := "!has(self." + f + ") || ("; strings.HasPrefix(rule, guard) {
				rule = strings.TrimSuffix(strings.TrimPrefix(rule, guard), ")")
			}
		}
		return rule
	}
	for _, where := range []struct {
		name     string
		md, app  apiextensionsv1.ValidationRules
		optional bool
	}{
		{"spec", md.XValidations, app.XValidations, true},
		{"spec.strategy", md.Properties["strategy"].XValidations, app.Properties["strategy"].XValidations, false},
	} {
		if len(where.md) == 0 || len(where.md) != len(where.app) {
			t.Errorf("%s: %d rules on the MyDeployment, %d on the Application's", where.name, len(where.md), len(where.app))
		}
		for _, r := range where.md {
			found := slices.ContainsFunc(where.app, func(a apiextensionsv1.ValidationRule) bool {
				return unguard(a.Rule) == r.Rule && a.Message == r.Message && a.FieldPath == r.FieldPath
			})
			if !found {
				t.Errorf("%s: the MyDeployment's rule %q (%s) is not the Application's", where.name, r.Rule, r.Message)
			}
		}
	}
	for _, f := range []string{"replicas", "selector", "template", "strategy", "minReadySeconds", "revisionHistoryLimit", "paused", "progressDeadlineSeconds"} {
		if _, ok := app.Properties[f]; !ok {
			t.Errorf("spec.deployment has no %s", f)
		}
	}
	if len(app.Properties) != len(md.Properties)+3 {
		t.Errorf("spec.deployment has %d fields, want the MyDeployment's %d and metadata, image, port", len(app.Properties), len(md.Properties))
	}
	if len(app.Required) != 0 {
		t.Errorf("spec.deployment requires %v: selector and template may be left out", app.Required)
	}
}
