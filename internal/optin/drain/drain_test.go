package drain

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/nodes"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/nodes/nodestest"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
	"github.com/mydeployment-io/mydeployment-operator/internal/status"
)

func opted() *appsv1beta1.MyDeployment {
	return &appsv1beta1.MyDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "opted",
		Annotations: map[string]string{appsv1beta1.DrainAnnotation: appsv1beta1.DrainSurgeFirst}}}
}

// TestObserveDenied: a sync of an opted-in object whose manager may not
// watch Nodes plans no drain and reports DrainAccessDenied, unless another
// failure is reported; the parsed set is not modified by observing it.
func TestObserveDenied(t *testing.T) {
	w := nodestest.Denied(t, Module, nodes.DrainingChanged, opted())
	spec, errs := Module.Parse(opted())
	if len(errs) > 0 || spec == nil {
		t.Fatalf("parse: %v, %v", spec, errs)
	}
	parsed := optin.NewSet(spec)
	seen := parsed.Observe(map[string]optin.Part{Name: w, "other": nil})
	if !On(seen) || !On(parsed) {
		t.Fatal("observing lost the opt-in")
	}
	var in rollout.Input
	for p := range optin.Each[rollout.Planner](seen) {
		p.PlanInput(&in)
	}
	if len(in.DrainingNodes) != 0 {
		t.Errorf("draining nodes %v while denied", in.DrainingNodes)
	}
	st := status.Input{}
	for r := range optin.Each[status.Reporter](seen) {
		r.ReportInput(&st)
	}
	if st.Failure == nil || st.Failure.Reason != appsv1beta1.ReasonDrainAccessDenied {
		t.Errorf("failure %+v, want %s", st.Failure, appsv1beta1.ReasonDrainAccessDenied)
	}
	other := &status.Failure{Reason: appsv1beta1.ReasonFailedCreate}
	st = status.Input{Failure: other}
	for r := range optin.Each[status.Reporter](seen) {
		r.ReportInput(&st)
	}
	if st.Failure != other {
		t.Errorf("failure %+v replaced a refused write's", st.Failure)
	}
	st = status.Input{}
	for r := range optin.Each[status.Reporter](parsed) {
		r.ReportInput(&st)
	}
	if st.Failure != nil {
		t.Errorf("the parsed (unobserved) set reports %+v: Observe modified it", st.Failure)
	}
}

// TestObserveNoWatch: a reconciler without the watch sees no drain and no
// denial.
func TestObserveNoWatch(t *testing.T) {
	spec, _ := Module.Parse(opted())
	seen := optin.NewSet(spec).Observe(nil)
	var in rollout.Input
	st := status.Input{}
	for p := range optin.Each[rollout.Planner](seen) {
		p.PlanInput(&in)
	}
	for r := range optin.Each[status.Reporter](seen) {
		r.ReportInput(&st)
	}
	if in.DrainingNodes != nil || st.Failure != nil {
		t.Errorf("no watch: draining %v, failure %+v", in.DrainingNodes, st.Failure)
	}
}
