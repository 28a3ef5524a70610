package status

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
)

// TestPartitionHold runs the syncs of a canary of 10 pods (progress
// deadline 60s) as a table: each step's counts and partition, and what the
// status must then say.
func TestPartitionHold(t *testing.T) {
	obj := md(10, false, appsv1beta1.MyDeploymentStatus{Replicas: 10, ReadyReplicas: 10, AvailableReplicas: 10})
	counts := func(replicas, available, updated int32) rollout.Counts {
		return rollout.Counts{Replicas: replicas, Ready: available, Available: available, Updated: updated}
	}
	for _, tc := range []struct {
		name      string
		at        time.Duration
		counts    rollout.Counts
		partition int32
		newRev    bool

		reason, message string
		held            bool // the hold is newly reached: one event
		exceeded        bool
		current         string
	}{
		{name: "step 1/6: the new revision, partition 8", counts: counts(10, 10, 0), partition: 8, newRev: true,
			reason: appsv1beta1.ReasonNewRevisionCreated, current: "web-1"},
		{name: "step 2/6: 2 new pods surge, not yet available", at: 5 * time.Second, counts: counts(12, 8, 2), partition: 8,
			reason: appsv1beta1.ReasonRevisionUpdated, current: "web-1"},
		{name: "step 3/6: held: 2 updated and available, 8 on the current revision", at: 10 * time.Second, counts: counts(10, 10, 2), partition: 8,
			reason: appsv1beta1.ReasonPartitionAvailable, message: "2 of 10 pods updated, 8 held by partition", held: true, current: "web-1"},
		{name: "step 4/6: an hour held, far beyond the deadline: no ProgressDeadlineExceeded, no second event", at: time.Hour, counts: counts(10, 10, 2), partition: 8,
			reason: appsv1beta1.ReasonPartitionAvailable, message: "2 of 10 pods updated, 8 held by partition", current: "web-1"},
		{name: "step 5/6: partition lowered to 5: progressing again, the deadline runs", at: time.Hour + time.Second, counts: counts(13, 8, 5), partition: 5,
			reason: appsv1beta1.ReasonRevisionUpdated, current: "web-1"},
		{name: "step 6/6: stuck there past the deadline: ProgressDeadlineExceeded as usual", at: time.Hour + 2*time.Minute, counts: counts(13, 8, 5), partition: 5,
			reason: appsv1beta1.ReasonProgressDeadlineExceeded, exceeded: true, current: "web-1"},
	} {
		r := Compute(Input{Object: obj, Synced: true, Counts: tc.counts, UpdateRevision: "web-2", CurrentRevision: "web-1",
			NewRevision: tc.newRev, MaxUnavailable: 2, Partition: tc.partition, Now: t0.Add(tc.at)})
		obj.Status = r.Status
		c := Get(&r.Status, appsv1beta1.ConditionProgressing)
		if c.Reason != tc.reason || tc.message != "" && c.Message != tc.message {
			t.Fatalf("%s: Progressing %s %q, want %s %q", tc.name, c.Reason, c.Message, tc.reason, tc.message)
		}
		if tc.reason == appsv1beta1.ReasonPartitionAvailable && (c.Status != corev1.ConditionTrue || r.RequeueAfter != 0) {
			t.Fatalf("%s: held is Progressing=True with no deadline to look at: %+v requeue %v", tc.name, c, r.RequeueAfter)
		}
		if r.PartitionHeld != tc.held || r.DeadlineExceeded != tc.exceeded {
			t.Fatalf("%s: newly held %v, newly exceeded %v; want %v, %v", tc.name, r.PartitionHeld, r.DeadlineExceeded, tc.held, tc.exceeded)
		}
		if r.Status.CurrentRevision != tc.current {
			t.Fatalf("%s: currentRevision %q, want %q", tc.name, r.Status.CurrentRevision, tc.current)
		}
	}
}

// TestPartitionHoldNeedsEveryPodAvailable: no hold while a pod is
// unavailable, surplus or terminating, nor without a partition.
func TestPartitionHoldNeedsEveryPodAvailable(t *testing.T) {
	for _, tc := range []struct {
		name      string
		counts    rollout.Counts
		partition int32
	}{
		{"one pod unavailable", rollout.Counts{Replicas: 10, Ready: 9, Available: 9, Updated: 2}, 8},
		{"a surplus pod", rollout.Counts{Replicas: 11, Ready: 11, Available: 11, Updated: 2}, 8},
		{"a pod terminating", rollout.Counts{Replicas: 10, Ready: 10, Available: 10, Updated: 2, Terminating: 1}, 8},
		{"more updated than the partition lets", rollout.Counts{Replicas: 10, Ready: 10, Available: 10, Updated: 3}, 8},
		{"no partition", rollout.Counts{Replicas: 10, Ready: 10, Available: 10, Updated: 2}, 0},
	} {
		obj := md(10, false, appsv1beta1.MyDeploymentStatus{})
		r := Compute(Input{Object: obj, Synced: true, Counts: tc.counts, UpdateRevision: "web-2", CurrentRevision: "web-1",
			MaxUnavailable: 2, Partition: tc.partition, Now: t0})
		if got := reason(r.Status, appsv1beta1.ConditionProgressing); got == appsv1beta1.ReasonPartitionAvailable || r.PartitionHeld {
			t.Errorf("%s: held (%s)", tc.name, got)
		}
	}
}

// TestPartitionAfterCompletion: without a partition (the controller passes
// 0 once promoted) the rollout completes and the update revision becomes
// current.
func TestPartitionAfterCompletion(t *testing.T) {
	obj := md(10, false, appsv1beta1.MyDeploymentStatus{})
	full := rollout.Counts{Replicas: 10, Ready: 10, Available: 10, Updated: 10}
	r := Compute(Input{Object: obj, Synced: true, Counts: full, UpdateRevision: "web-2", CurrentRevision: "web-1", MaxUnavailable: 2, Now: t0})
	if got := reason(r.Status, appsv1beta1.ConditionProgressing); got != appsv1beta1.ReasonNewRevisionAvailable || r.Status.CurrentRevision != "web-2" {
		t.Fatalf("complete: %s, current %q", got, r.Status.CurrentRevision)
	}
}
