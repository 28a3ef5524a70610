package v1beta1

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"

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

// An object admitted before the opt-in check (or with the webhook down) may
// carry a value it refuses: an update that leaves the opt-ins and the
// strategy type alone (a scale, the controller's revision annotation) is
// still admitted, so the object keeps working while the controller reports
// the bad value; an update that touches them is checked.
func TestValidateUpdateChecksOptInsOnlyWhenTheyChange(t *testing.T) {
	old := admission.Valid("ns", "web")
	old.Annotations = map[string]string{appsv1beta1.PartitionAnnotation: "half"}

	scaled := old.DeepCopy()
	scaled.Spec.Replicas = ptr.To[int32](5)
	scaled.Annotations["deployment.kubernetes.io/revision"] = "2"
	if _, err := (&MyDeploymentValidator{}).ValidateUpdate(context.Background(), old, scaled); err != nil {
		t.Fatalf("scaling with an unchanged bad partition: %v, want admitted", err)
	}

	for name, change := range map[string]func(*appsv1beta1.MyDeployment){
		"partition changed":     func(m *appsv1beta1.MyDeployment) { m.Annotations[appsv1beta1.PartitionAnnotation] = "-2" },
		"respect-pdb added":     func(m *appsv1beta1.MyDeployment) { m.Annotations[appsv1beta1.RespectPDBAnnotation] = "maybe" },
		"strategy type changed": func(m *appsv1beta1.MyDeployment) { m.Spec.Strategy.Type = appsv1.RecreateDeploymentStrategyType },
	} {
		t.Run(name, func(t *testing.T) {
			md := old.DeepCopy()
			change(md)
			_, err := (&MyDeploymentValidator{}).ValidateUpdate(context.Background(), old, md)
			if err == nil || !strings.Contains(err.Error(), "metadata.annotations[apps.mydeployment.io/") {
				t.Fatalf("got %v, want the opt-in annotations refused", err)
			}
		})
	}
}
