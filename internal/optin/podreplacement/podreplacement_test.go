package podreplacement

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
)

// TestParse: TerminationComplete opts in under either strategy (Recreate
// too: it waits for old pods on a rollout only, not for a deleted pod);
// TerminationStarted and no annotation are Deployment's behaviour; any
// other value is one error naming the annotation and the values it takes.
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name     string
		strategy appsv1.DeploymentStrategyType
		value    *string
		on       bool
		err      string
	}{
		{name: "no annotation"},
		{name: "TerminationStarted", value: ptr.To(TerminationStarted)},
		{name: "TerminationComplete", value: ptr.To(TerminationComplete), on: true},
		{name: "TerminationComplete with Recreate", strategy: appsv1.RecreateDeploymentStrategyType, value: ptr.To(TerminationComplete), on: true},
		{name: "lower case", value: ptr.To("terminationcomplete"),
			err: `metadata.annotations[apps.mydeployment.io/pod-replacement]: Unsupported value: "terminationcomplete": supported values: "TerminationStarted", "TerminationComplete"`},
		{name: "empty", value: ptr.To(""), err: `metadata.annotations[apps.mydeployment.io/pod-replacement]: Unsupported value: ""`},
		{name: "a switch", value: ptr.To("true"), err: `apps.mydeployment.io/pod-replacement]: Unsupported value: "true"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md := &appsv1beta1.MyDeployment{}
			md.Spec.Strategy.Type = tc.strategy
			if tc.value != nil {
				md.ObjectMeta = metav1.ObjectMeta{Annotations: map[string]string{Annotation: *tc.value}}
			}
			spec, errs := Module.Parse(md)
			switch {
			case tc.err == "" && len(errs) > 0:
				t.Fatalf("unexpected errors: %v", errs)
			case tc.err != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.err)):
				t.Fatalf("errors %v, want one containing %q", errs, tc.err)
			}
			var s optin.Set
			if spec != nil {
				s = optin.NewSet(spec)
			}
			if On(s) != tc.on {
				t.Errorf("On %v, want %v", On(s), tc.on)
			}
			in, err := rollout.NewInput(md, s, "", "u", nil, nil, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			if in.TerminationComplete != tc.on {
				t.Errorf("the planner's TerminationComplete %v, want %v", in.TerminationComplete, tc.on)
			}
		})
	}
}
