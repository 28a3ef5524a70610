package status

import (
	"testing"
	"time"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// TestSetFailureCurrent: a failure of the same reason keeps its message,
// as Deployment's condition does, unless it is Current (it names what
// failed: a hook's Job after a retry); its transition time stays.
func TestSetFailureCurrent(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := &appsv1beta1.MyDeploymentStatus{}
	SetFailure(s, &Failure{Reason: "HookFailed", Message: "Job a failed", Current: true}, t0)
	SetFailure(s, &Failure{Reason: "HookFailed", Message: "Job b failed"}, t0.Add(time.Minute))
	if c := Get(s, appsv1beta1.ConditionReplicaFailure); c.Message != "Job a failed" {
		t.Errorf("not current: want the first message kept, got %q", c.Message)
	}
	SetFailure(s, &Failure{Reason: "HookFailed", Message: "Job b failed", Current: true}, t0.Add(time.Minute))
	c := Get(s, appsv1beta1.ConditionReplicaFailure)
	if c.Message != "Job b failed" || !c.LastTransitionTime.Time.Equal(t0) || !c.LastUpdateTime.Time.Equal(t0.Add(time.Minute)) {
		t.Errorf("current: want the new message, transition at t0, update a minute later; got %+v", c)
	}
	if len(s.Conditions) != 1 {
		t.Errorf("want one condition, got %d", len(s.Conditions))
	}
}
