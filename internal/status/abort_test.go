package status

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
)

// TestAbortSequence runs the syncs of an update of 10 pods (progress
// deadline 60s) whose pods never become available, with on-failure Abort,
// as a table: the deadline verdict, the abort the controller takes from it
// (AbortDue), the pods back, a retry, and the deadline running again.
func TestAbortSequence(t *testing.T) {
	obj := md(10, false, appsv1beta1.MyDeploymentStatus{Replicas: 10, ReadyReplicas: 10, AvailableReplicas: 10})
	counts := func(replicas, available, updated int32) rollout.Counts {
		return rollout.Counts{Replicas: replicas, Ready: available, Available: available, Updated: updated}
	}
	var retriedAt time.Time
	for _, tc := range []struct {
		name    string
		at      time.Duration
		counts  rollout.Counts
		newRev  bool
		aborted bool // the controller passes the aborted revision
		retry   bool // `rollout retry` at this moment

		reason    string
		status    corev1.ConditionStatus
		due       bool // AbortDue says the next sync aborts
		available corev1.ConditionStatus
	}{
		{name: "step 1/8: the new revision", counts: counts(10, 10, 0), newRev: true,
			reason: appsv1beta1.ReasonNewRevisionCreated, status: corev1.ConditionTrue, available: corev1.ConditionTrue},
		{name: "step 2/8: 4 new pods, never available", at: 5 * time.Second, counts: counts(12, 8, 4),
			reason: appsv1beta1.ReasonRevisionUpdated, status: corev1.ConditionTrue, available: corev1.ConditionTrue},
		{name: "step 3/8: past the deadline: ProgressDeadlineExceeded, the abort is due", at: 2 * time.Minute, counts: counts(12, 8, 4),
			reason: appsv1beta1.ReasonProgressDeadlineExceeded, status: corev1.ConditionFalse, due: true, available: corev1.ConditionTrue},
		{name: "step 4/8: aborted: RolloutAborted, the new pods going", at: 2*time.Minute + time.Second, counts: counts(11, 8, 1), aborted: true,
			reason: appsv1beta1.ReasonRolloutAborted, status: corev1.ConditionFalse, available: corev1.ConditionTrue},
		{name: "step 5/8: every pod back on the stable revision: still aborted, Available about the stable pods", at: time.Hour, counts: counts(10, 10, 0), aborted: true,
			reason: appsv1beta1.ReasonRolloutAborted, status: corev1.ConditionFalse, available: corev1.ConditionTrue},
		{name: "step 6/8: retried: RolloutRetried, the deadline runs again", at: time.Hour + time.Minute, counts: counts(10, 10, 0), retry: true,
			reason: appsv1beta1.ReasonRolloutRetried, status: corev1.ConditionTrue, available: corev1.ConditionTrue},
		{name: "step 7/8: the rollout starts over", at: time.Hour + time.Minute + 5*time.Second, counts: counts(12, 8, 4),
			reason: appsv1beta1.ReasonRevisionUpdated, status: corev1.ConditionTrue, available: corev1.ConditionTrue},
		{name: "step 8/8: stuck again past the deadline: due again", at: time.Hour + 3*time.Minute, counts: counts(12, 8, 4),
			reason: appsv1beta1.ReasonProgressDeadlineExceeded, status: corev1.ConditionFalse, due: true, available: corev1.ConditionTrue},
	} {
		if tc.retry {
			retriedAt = t0.Add(tc.at)
		}
		in := Input{Object: obj, Synced: true, Counts: tc.counts, UpdateRevision: "web-2", CurrentRevision: "web-1",
			NewRevision: tc.newRev, MaxUnavailable: 2, AbortOnFailure: true, RetriedAt: retriedAt, Now: t0.Add(tc.at)}
		if tc.aborted {
			in.Aborted = "web-2"
		}
		r := Compute(in)
		obj.Status = r.Status
		c := Get(&r.Status, appsv1beta1.ConditionProgressing)
		if c.Reason != tc.reason || c.Status != tc.status {
			t.Fatalf("%s: Progressing %s %s %q, want %s %s", tc.name, c.Status, c.Reason, c.Message, tc.status, tc.reason)
		}
		if tc.aborted && r.RequeueAfter != 0 {
			t.Fatalf("%s: aborted, yet a deadline to look at in %v", tc.name, r.RequeueAfter)
		}
		if a := Get(&r.Status, appsv1beta1.ConditionAvailable); a.Status != tc.available {
			t.Fatalf("%s: Available %s, want %s", tc.name, a.Status, tc.available)
		}
		if due := AbortDue(obj, "web-2", retriedAt); due != tc.due {
			t.Fatalf("%s: AbortDue %v, want %v", tc.name, due, tc.due)
		}
		if r.Status.CurrentRevision != "web-1" || Aborted(&r.Status) != tc.aborted || RolloutComplete(obj, &r.Status) {
			t.Fatalf("%s: currentRevision %q, aborted %v, complete %v", tc.name, r.Status.CurrentRevision, Aborted(&r.Status), RolloutComplete(obj, &r.Status))
		}
	}
}

// TestAbortDueOnlyForThisRollout: a verdict about another revision, an
// unobserved generation, or older than the last retry aborts nothing.
func TestAbortDueOnlyForThisRollout(t *testing.T) {
	exceeded := func() *appsv1beta1.MyDeployment {
		obj := md(3, false, appsv1beta1.MyDeploymentStatus{ObservedGeneration: 2, UpdateRevision: "web-2"})
		set(&obj.Status, cond(appsv1beta1.ConditionProgressing, corev1.ConditionFalse, appsv1beta1.ReasonProgressDeadlineExceeded, "", metav1.NewTime(t0)))
		return obj
	}
	if !AbortDue(exceeded(), "web-2", time.Time{}) {
		t.Fatal("the rollout to web-2 timed out: due")
	}
	if AbortDue(exceeded(), "web-3", time.Time{}) {
		t.Error("a verdict about web-2 aborts web-3")
	}
	if obj := exceeded(); func() bool { obj.Generation = 3; return AbortDue(obj, "web-2", time.Time{}) }() {
		t.Error("a verdict from an older generation aborts")
	}
	if AbortDue(exceeded(), "web-2", t0.Add(time.Second)) {
		t.Error("a verdict older than the retry aborts")
	}
}

// TestAbortOnFailureHoldsTheCurrentRevisionUntilAvailable: one replica,
// maxUnavailable 1, the new pod made but not available: Deployment's rule
// (StatefulSet's) makes it current at once; under on-failure Abort it
// stays the stable one, for an abort to go back to.
func TestAbortOnFailureHoldsTheCurrentRevisionUntilAvailable(t *testing.T) {
	for _, abort := range []bool{false, true} {
		obj := md(1, false, appsv1beta1.MyDeploymentStatus{})
		r := Compute(Input{Object: obj, Synced: true, Counts: rollout.Counts{Replicas: 1, Updated: 1},
			UpdateRevision: "web-2", CurrentRevision: "web-1", MaxUnavailable: 1, AbortOnFailure: abort, Now: t0})
		want := "web-2"
		if abort {
			want = "web-1"
		}
		if r.Status.CurrentRevision != want {
			t.Errorf("on-failure Abort %v: currentRevision %q, want %q", abort, r.Status.CurrentRevision, want)
		}
	}
}

// TestRetryNeedsNoClock: a retry whose retried-at is not after the abort
// (the same second, or a client clock behind) still starts the rollout
// over: the abort record is gone, and that is what counts.
func TestRetryNeedsNoClock(t *testing.T) {
	obj := md(3, false, appsv1beta1.MyDeploymentStatus{ObservedGeneration: 2, UpdateRevision: "web-2",
		Replicas: 3, ReadyReplicas: 3, AvailableReplicas: 3})
	set(&obj.Status, cond(appsv1beta1.ConditionProgressing, corev1.ConditionFalse, appsv1beta1.ReasonRolloutAborted, "", metav1.NewTime(t0)))
	r := Compute(Input{Object: obj, Synced: true, Counts: rollout.Counts{Replicas: 3, Ready: 3, Available: 3},
		UpdateRevision: "web-2", CurrentRevision: "web-1", MaxUnavailable: 1, AbortOnFailure: true,
		RetriedAt: t0.Add(-time.Hour), Now: t0.Add(time.Second)})
	c := Get(&r.Status, appsv1beta1.ConditionProgressing)
	if c.Reason != appsv1beta1.ReasonRolloutRetried || c.Status != corev1.ConditionTrue || r.RequeueAfter <= 0 {
		t.Fatalf("Progressing %s %s, requeue %v; want True RolloutRetried and a deadline to look at", c.Status, c.Reason, r.RequeueAfter)
	}
}
