package abort

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/status"
)

var t0 = time.Date(2026, 11, 27, 22, 0, 0, 0, time.UTC)

func md(strategy appsv1.DeploymentStrategyType, annotations map[string]string) *appsv1beta1.MyDeployment {
	return &appsv1beta1.MyDeployment{
		ObjectMeta: metav1.ObjectMeta{Annotations: annotations},
		Spec:       appsv1beta1.MyDeploymentSpec{RolloutSpec: appsv1beta1.RolloutSpec{Strategy: appsv1.DeploymentStrategy{Type: strategy}}},
	}
}

// TestParse: each value that can never work is one error naming its
// annotation; what parses is what the controller and the status read.
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name        string
		strategy    appsv1.DeploymentStrategyType
		annotations map[string]string
		abort       bool
		retried     bool   // retried at t0
		err         string // substring of the only error; "" for none
	}{
		{name: "on-failure Abort", annotations: map[string]string{appsv1beta1.OnFailureAnnotation: "Abort"}, abort: true},
		{name: "on-failure Continue", annotations: map[string]string{appsv1beta1.OnFailureAnnotation: "Continue"}},
		{name: "on-failure unknown", annotations: map[string]string{appsv1beta1.OnFailureAnnotation: "Rollback"},
			err: `metadata.annotations[apps.mydeployment.io/on-failure]: Unsupported value: "Rollback": supported values: "Continue", "Abort"`},
		{name: "on-failure lower case", annotations: map[string]string{appsv1beta1.OnFailureAnnotation: "abort"}, err: "apps.mydeployment.io/on-failure"},
		{name: "on-failure Abort with Recreate", strategy: appsv1.RecreateDeploymentStrategyType,
			annotations: map[string]string{appsv1beta1.OnFailureAnnotation: "Abort"}, err: "needs spec.strategy.type RollingUpdate"},
		{name: "on-failure Continue with Recreate", strategy: appsv1.RecreateDeploymentStrategyType,
			annotations: map[string]string{appsv1beta1.OnFailureAnnotation: "Continue"}},
		{name: "retried-at", annotations: map[string]string{appsv1beta1.RetriedAtAnnotation: "2026-11-27T22:00:00Z"}, retried: true},
		{name: "none"},
		{name: "on-failure Abort, retried", annotations: map[string]string{appsv1beta1.OnFailureAnnotation: "Abort",
			appsv1beta1.RetriedAtAnnotation: "2026-11-27T22:00:00Z"}, abort: true, retried: true},
		{name: "retried-at not a time", annotations: map[string]string{appsv1beta1.RetriedAtAnnotation: "yesterday"},
			err: `metadata.annotations[apps.mydeployment.io/retried-at]: Invalid value: "yesterday"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, errs := Module.Parse(md(tc.strategy, tc.annotations))
			switch {
			case tc.err == "" && len(errs) > 0:
				t.Fatalf("unexpected errors: %v", errs)
			case tc.err != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.err)):
				t.Fatalf("errors %v, want one containing %q", errs, tc.err)
			}
			a := Of(optin.NewSet())
			if spec != nil {
				a = Of(optin.NewSet(spec))
			}
			if a.OnFailure != tc.abort {
				t.Errorf("on-failure Abort %v, want %v", a.OnFailure, tc.abort)
			}
			if a.RetriedAt.Equal(t0) != tc.retried {
				t.Errorf("retried at %v, want %v: %v", a.RetriedAt, t0, tc.retried)
			}
		})
	}
}

// TestReportInput: the status is told both, so its verdict (AbortDue)
// sees a retry.
func TestReportInput(t *testing.T) {
	spec, _ := Module.Parse(md("", map[string]string{appsv1beta1.OnFailureAnnotation: "Abort",
		appsv1beta1.RetriedAtAnnotation: "2026-11-27T22:00:00Z"}))
	in := status.Input{}
	for r := range optin.Each[status.Reporter](optin.NewSet(spec)) {
		r.ReportInput(&in)
	}
	if !in.AbortOnFailure || !in.RetriedAt.Equal(t0) {
		t.Errorf("status input: abort %v, retried at %v", in.AbortOnFailure, in.RetriedAt)
	}
}
