package status

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func md(replicas int32, paused bool, st appsv1beta1.MyDeploymentStatus) *appsv1beta1.MyDeployment {
	return &appsv1beta1.MyDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 2},
		Spec: appsv1beta1.MyDeploymentSpec{
			Replicas:    ptr.To(replicas),
			RolloutSpec: appsv1beta1.RolloutSpec{Paused: paused, ProgressDeadlineSeconds: ptr.To[int32](60)},
		},
		Status: st,
	}
}

func reason(s appsv1beta1.MyDeploymentStatus, t appsv1.DeploymentConditionType) string {
	if c := Get(&s, t); c != nil {
		return c.Reason
	}
	return ""
}

// step runs Compute on the previous step's status, as successive syncs do.
func step(obj *appsv1beta1.MyDeployment, counts rollout.Counts, at time.Duration, newRev bool) Result {
	r := Compute(Input{Object: obj, Synced: true, Counts: counts, UpdateRevision: "web-2", CurrentRevision: "web-1",
		NewRevision: newRev, MaxUnavailable: 1, Now: t0.Add(at)})
	obj.Status = r.Status
	return r
}

func TestRolloutConditionsSequence(t *testing.T) {
	// Three available pods of web-1 when the template changes.
	obj := md(3, false, appsv1beta1.MyDeploymentStatus{Replicas: 3, ReadyReplicas: 3, AvailableReplicas: 3})

	r := step(obj, rollout.Counts{Replicas: 3, Ready: 3, Available: 3}, 0, true)
	if got := reason(r.Status, appsv1beta1.ConditionProgressing); got != appsv1beta1.ReasonNewRevisionCreated {
		t.Fatalf("step 1/5 new revision: Progressing reason %q", got)
	}
	if r.RequeueAfter != 61*time.Second {
		t.Fatalf("step 1/5: requeue %v, want the deadline (60s) + 1s", r.RequeueAfter)
	}

	r = step(obj, rollout.Counts{Replicas: 4, Ready: 3, Available: 3, Updated: 1}, 10*time.Second, false)
	c := Get(&r.Status, appsv1beta1.ConditionProgressing)
	if c.Reason != appsv1beta1.ReasonRevisionUpdated || !c.LastUpdateTime.Time.Equal(t0.Add(10*time.Second)) {
		t.Fatalf("step 2/5 progress: %+v, want RevisionUpdated updated at +10s", c)
	}
	if !c.LastTransitionTime.Time.Equal(t0) {
		t.Fatalf("step 2/5: lastTransitionTime moved to %v while status stayed True", c.LastTransitionTime)
	}

	r = step(obj, rollout.Counts{Replicas: 4, Ready: 3, Available: 3, Updated: 1}, 69*time.Second, false)
	if got := reason(r.Status, appsv1beta1.ConditionProgressing); got != appsv1beta1.ReasonRevisionUpdated || r.DeadlineExceeded {
		t.Fatalf("step 3/5 no progress, 59s after the last: %q exceeded=%v", got, r.DeadlineExceeded)
	}

	r = step(obj, rollout.Counts{Replicas: 4, Ready: 3, Available: 3, Updated: 1}, 71*time.Second, false)
	c = Get(&r.Status, appsv1beta1.ConditionProgressing)
	if c.Reason != appsv1beta1.ReasonProgressDeadlineExceeded || c.Status != corev1.ConditionFalse || !r.DeadlineExceeded {
		t.Fatalf("step 4/5 deadline passed: %+v exceeded=%v", c, r.DeadlineExceeded)
	}
	if again := step(obj, rollout.Counts{Replicas: 4, Ready: 3, Available: 3, Updated: 1}, 80*time.Second, false); again.DeadlineExceeded {
		t.Fatalf("the deadline event must be reported once")
	}

	r = step(obj, rollout.Counts{Replicas: 3, Ready: 3, Available: 3, Updated: 3}, 90*time.Second, false)
	if got := reason(r.Status, appsv1beta1.ConditionProgressing); got != appsv1beta1.ReasonNewRevisionAvailable {
		t.Fatalf("step 5/5 complete: %q", got)
	}
	if r.Status.CurrentRevision != "web-2" || r.Status.CurrentReplicas != 3 {
		t.Fatalf("complete: current %q/%d, want the update revision", r.Status.CurrentRevision, r.Status.CurrentReplicas)
	}
}

func TestAtRestIsIdempotent(t *testing.T) {
	obj := md(3, false, appsv1beta1.MyDeploymentStatus{})
	full := rollout.Counts{Replicas: 3, Ready: 3, Available: 3, Updated: 3}
	step(obj, full, 0, true)
	first := step(obj, full, time.Second, false).Status
	later := step(obj, full, time.Hour, false).Status
	if !apiequality.Semantic.DeepEqual(first, later) {
		t.Fatalf("status changed at rest:\n%+v\n%+v", first, later)
	}
}

func TestPausedStopsTheDeadline(t *testing.T) {
	obj := md(3, true, appsv1beta1.MyDeploymentStatus{})
	stuck := rollout.Counts{Replicas: 3, Ready: 1, Available: 1, Updated: 1}
	r := step(obj, stuck, 0, false)
	if got := reason(r.Status, appsv1beta1.ConditionProgressing); got != appsv1beta1.ReasonPaused {
		t.Fatalf("paused: %q", got)
	}
	r = step(obj, stuck, time.Hour, false)
	if got := reason(r.Status, appsv1beta1.ConditionProgressing); got != appsv1beta1.ReasonPaused || r.DeadlineExceeded || r.RequeueAfter != 0 {
		t.Fatalf("an hour paused: %q exceeded=%v requeue=%v", got, r.DeadlineExceeded, r.RequeueAfter)
	}
	obj.Spec.Paused = false
	r = step(obj, stuck, time.Hour+time.Second, false)
	if got := reason(r.Status, appsv1beta1.ConditionProgressing); got != appsv1beta1.ReasonResumed {
		t.Fatalf("resumed: %q", got)
	}
	if r.RequeueAfter != 61*time.Second {
		t.Fatalf("resume restarts the deadline: requeue %v", r.RequeueAfter)
	}
}

func TestAvailableAndFailure(t *testing.T) {
	obj := md(4, false, appsv1beta1.MyDeploymentStatus{})
	r := Compute(Input{Object: obj, Counts: rollout.Counts{Replicas: 4, Available: 2}, MaxUnavailable: 1, Now: t0,
		Failure: &Failure{Reason: appsv1beta1.ReasonFailedCreate, Message: "quota exceeded"}})
	if got := reason(r.Status, appsv1beta1.ConditionAvailable); got != appsv1beta1.ReasonMinimumReplicasUnavailable {
		t.Fatalf("2 of 4 available with maxUnavailable 1: %q", got)
	}
	if c := Get(&r.Status, appsv1beta1.ConditionReplicaFailure); c == nil || c.Message != "quota exceeded" {
		t.Fatalf("ReplicaFailure: %+v", c)
	}
	if r.Status.UnavailableReplicas != 2 || r.Status.ObservedGeneration != 0 {
		t.Fatalf("unavailable %d, observedGeneration %d (not synced: must not advance)", r.Status.UnavailableReplicas, r.Status.ObservedGeneration)
	}
	obj.Status = r.Status
	r = Compute(Input{Object: obj, Synced: true, Counts: rollout.Counts{Replicas: 4, Available: 3}, MaxUnavailable: 1, Now: t0})
	if got := reason(r.Status, appsv1beta1.ConditionAvailable); got != appsv1beta1.ReasonMinimumReplicasAvailable {
		t.Fatalf("3 of 4 available: %q", got)
	}
	if Get(&r.Status, appsv1beta1.ConditionReplicaFailure) != nil || r.Status.ObservedGeneration != 2 {
		t.Fatalf("a clean sync clears ReplicaFailure and observes the generation: %+v", r.Status)
	}
}

// unavailableReplicas is Deployment's: the pods its plan keeps or creates
// (the sum of its ReplicaSets' desired sizes) less the available ones.
func TestUnavailableCountsPlannedPods(t *testing.T) {
	for _, tt := range []struct {
		name    string
		planned *int32
		counts  rollout.Counts
		want    int32
	}{
		{name: "Recreate waiting for the old pods to go", planned: ptr.To[int32](0), counts: rollout.Counts{}, want: 0},
		{name: "Recreate creating the new pods", planned: ptr.To[int32](6), counts: rollout.Counts{}, want: 6},
		{name: "rolling update at its surge", planned: ptr.To[int32](7), counts: rollout.Counts{Replicas: 7, Available: 5}, want: 2},
		{name: "no plan: spec.replicas", counts: rollout.Counts{Replicas: 2, Available: 2}, want: 4},
		{name: "no plan: more pods than spec.replicas", counts: rollout.Counts{Replicas: 7, Available: 3}, want: 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := Compute(Input{Object: md(6, false, appsv1beta1.MyDeploymentStatus{}), Counts: tt.counts, Planned: tt.planned, Now: t0})
			if got := r.Status.UnavailableReplicas; got != tt.want {
				t.Errorf("unavailableReplicas = %d, want %d", got, tt.want)
			}
		})
	}
}
