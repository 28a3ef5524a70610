package status

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
)

// A MyDeployment taking over a Deployment's pods waits, saying what for,
// with no deadline; once it has them, progress is tracked from then.
func TestHandOverSequence(t *testing.T) {
	obj := md(3, false, appsv1beta1.MyDeploymentStatus{})
	wait := func(msg string, at time.Duration, counts rollout.Counts) Result {
		r := Compute(Input{Object: obj, Synced: true, Counts: counts, UpdateRevision: "web-2", CurrentRevision: "web-1",
			MaxUnavailable: 1, WaitingForHandOver: msg, Now: t0.Add(at)})
		obj.Status = r.Status
		return r
	}
	r := wait("Deployment web still exists", 0, rollout.Counts{})
	c := Get(&r.Status, appsv1beta1.ConditionProgressing)
	if c.Status != corev1.ConditionUnknown || c.Reason != appsv1beta1.ReasonWaitingForHandOver || c.Message != "Deployment web still exists" ||
		!r.HandOverBegan || r.RequeueAfter != 0 {
		t.Fatalf("step 1/4 waiting: %+v began=%v requeue=%v", c, r.HandOverBegan, r.RequeueAfter)
	}
	r = wait("ReplicaSet web-abc still exists", 10*time.Minute, rollout.Counts{})
	c = Get(&r.Status, appsv1beta1.ConditionProgressing)
	if c.Message != "ReplicaSet web-abc still exists" || r.HandOverBegan || r.DeadlineExceeded || !c.LastTransitionTime.Time.Equal(t0) {
		t.Fatalf("step 2/4 another wait, past the 60s deadline: %+v began=%v exceeded=%v", c, r.HandOverBegan, r.DeadlineExceeded)
	}
	if again := wait("ReplicaSet web-abc still exists", 11*time.Minute, rollout.Counts{}); again.HandOverBegan ||
		!Get(&again.Status, appsv1beta1.ConditionProgressing).LastUpdateTime.Time.Equal(t0.Add(10*time.Minute)) {
		t.Fatalf("step 3/4 the same wait: no event, no new condition")
	}
	// Handed over, its pods not ready yet: no progress counted against the
	// wait's status, and the deadline must not run from the wait.
	r = step(obj, rollout.Counts{Replicas: 3}, 12*time.Minute, false)
	c = Get(&r.Status, appsv1beta1.ConditionProgressing)
	if c.Status != corev1.ConditionTrue || c.Reason == appsv1beta1.ReasonWaitingForHandOver || r.DeadlineExceeded ||
		r.RequeueAfter != 61*time.Second || !c.LastUpdateTime.Time.Equal(t0.Add(12*time.Minute)) {
		t.Fatalf("step 4/4 handed over, pods not ready: %+v exceeded=%v requeue=%v, want the deadline from now", c, r.DeadlineExceeded, r.RequeueAfter)
	}
}
