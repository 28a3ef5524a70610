package status

import (
	"testing"
	"time"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
)

// TestCanaryPause runs the syncs of a canary of 10 pods (progress deadline
// 60s) through a pause until promote: the pause says its step and runs no
// deadline however long it lasts; once promoted the deadline runs again
// from the promote, not from the pause's start.
func TestCanaryPause(t *testing.T) {
	obj := md(10, false, appsv1beta1.MyDeploymentStatus{Replicas: 10, ReadyReplicas: 10, AvailableReplicas: 10})
	counts := func(replicas, available, updated int32) rollout.Counts {
		return rollout.Counts{Replicas: replicas, Ready: available, Available: available, Updated: updated}
	}
	paused := &rollout.CanaryProgress{Paused: true, Held: 5, Message: "step 4 of 5: paused until promote"}
	sized := &rollout.CanaryProgress{Held: 0, Message: "step 5 of 5: 100%"}
	for _, tc := range []struct {
		name    string
		at      time.Duration
		counts  rollout.Counts
		canary  *rollout.CanaryProgress
		reason  string
		requeue bool // a deadline to look at
	}{
		{"step 3: 50%, progressing", 0, counts(11, 9, 5), &rollout.CanaryProgress{Held: 5, Message: "step 3 of 5: 50%"},
			appsv1beta1.ReasonRevisionUpdated, true},
		{"step 4: a pause before every pod is in place: not yet paused", 5 * time.Second, counts(11, 10, 5), paused,
			appsv1beta1.ReasonRevisionUpdated, true},
		{"step 4: paused until promote", 10 * time.Second, counts(10, 10, 5), paused, appsv1beta1.ReasonCanaryPaused, false},
		{"an hour paused: no deadline", time.Hour, counts(10, 10, 5), paused, appsv1beta1.ReasonCanaryPaused, false},
		{"a sync that planned nothing leaves the pause", time.Hour + time.Second, counts(10, 10, 5), nil, appsv1beta1.ReasonCanaryPaused, false},
		{"promoted: step 5, nothing moved yet, the deadline starts now", time.Hour + 2*time.Second, counts(10, 10, 5), sized,
			appsv1beta1.ReasonRevisionUpdated, true},
		{"30s later, still nothing moved: within the deadline", time.Hour + 32*time.Second, counts(10, 10, 5), sized,
			appsv1beta1.ReasonRevisionUpdated, true},
	} {
		r := Compute(Input{Object: obj, Synced: true, Counts: tc.counts, UpdateRevision: "web-2", CurrentRevision: "web-1",
			MaxUnavailable: 2, Canary: tc.canary, Now: t0.Add(tc.at)})
		obj.Status = r.Status
		c := Get(&r.Status, appsv1beta1.ConditionProgressing)
		if c.Reason != tc.reason || (r.RequeueAfter > 0) != tc.requeue || r.DeadlineExceeded {
			t.Fatalf("%s: Progressing %s %q, requeue %v; want %s, a deadline %v", tc.name, c.Reason, c.Message, r.RequeueAfter, tc.reason, tc.requeue)
		}
		if tc.reason == appsv1beta1.ReasonCanaryPaused && c.Message != paused.Message {
			t.Fatalf("%s: message %q, want the step", tc.name, c.Message)
		}
		if !RolloutComplete(obj, &r.Status) != (tc.reason != appsv1beta1.ReasonCanaryPaused) {
			t.Fatalf("%s: a canary pause counts as a finished rollout (as a partition's hold), nothing else here", tc.name)
		}
	}
}
