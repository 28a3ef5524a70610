package v1beta1

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mydeployment-io/mydeployment-operator/test/admission"
)

// The CRD's rules refuse this update first (the admission table's rows), so
// the envtest suite never reaches the webhook with it: this checks the
// webhook alone, as on a cluster whose CRD predates those rules. No dry run
// is needed to refuse it (the validator has no client).
func TestValidateUpdateRefusesTemplateLabelsTheSelectorNoLongerSelects(t *testing.T) {
	for name, sel := range map[string]*metav1.LabelSelector{
		"matchLabels": {MatchLabels: map[string]string{"app": "web"}},
		"matchExpressions": {MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web"}}}},
	} {
		t.Run(name, func(t *testing.T) {
			old := admission.Valid("ns", "web")
			old.Spec.Selector = sel
			md := old.DeepCopy()
			md.Spec.Template.Labels = map[string]string{"app": "other"}
			_, err := (&MyDeploymentValidator{}).ValidateUpdate(context.Background(), old, md)
			if err == nil || !strings.Contains(err.Error(), "spec.template.metadata.labels") ||
				!strings.Contains(err.Error(), "does not match template") {
				t.Fatalf("got %v, want the template labels refused", err)
			}
		})
	}
}
