package status

import (
	"testing"
	"time"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
)

// TestWaveBake runs the syncs of a waves rollout of 6 pods (progress
// deadline 60s): while a wave moves Progressing names it; its bake holds
// with no deadline however long it lasts, and is no finished rollout;
// once the next wave starts the deadline runs again from then.
func TestWaveBake(t *testing.T) {
	obj := md(6, false, appsv1beta1.MyDeploymentStatus{Replicas: 6, ReadyReplicas: 6, AvailableReplicas: 6})
	counts := func(replicas, available, updated int32) rollout.Counts {
		return rollout.Counts{Replicas: replicas, Ready: available, Available: available, Updated: updated}
	}
	moving := &Wave{Message: "wave 1 of 3: zone-a"}
	baking := &Wave{Message: "wave 1 of 3: zone-a, baking until 2026-01-01T00:10:00Z", Baking: true}
	next := &Wave{Message: "wave 2 of 3: zone-b"}
	for _, tc := range []struct {
		name            string
		at              time.Duration
		counts          rollout.Counts
		wave            *Wave
		reason, message string
		requeue         bool // a deadline to look at
	}{
		{"wave 1 moves", 0, counts(7, 6, 1), moving, appsv1beta1.ReasonRevisionUpdated, moving.Message, true},
		{"wave 1 bakes before its pods are all available: not yet held", 5 * time.Second, counts(7, 6, 2), baking,
			appsv1beta1.ReasonRevisionUpdated, baking.Message, true},
		{"wave 1 bakes", 10 * time.Second, counts(6, 6, 2), baking, ReasonWaveBaking, baking.Message, false},
		{"an hour of bake: no deadline", time.Hour, counts(6, 6, 2), baking, ReasonWaveBaking, baking.Message, false},
		{"wave 2 starts, nothing moved yet: the deadline starts now", time.Hour + time.Second, counts(6, 6, 2), next,
			appsv1beta1.ReasonRevisionUpdated, next.Message, true},
		{"30s later, still nothing moved: within the deadline", time.Hour + 31*time.Second, counts(6, 6, 2), next,
			appsv1beta1.ReasonRevisionUpdated, next.Message, true},
		{"wave 3 begins, no pod moved yet: said at once, the deadline still from wave 2's start", time.Hour + 41*time.Second,
			counts(6, 6, 2), &Wave{Message: "wave 3 of 3: zone-c"}, appsv1beta1.ReasonRevisionUpdated, "wave 3 of 3: zone-c", true},
		{"and it runs out 60s after wave 2's start", time.Hour + 62*time.Second,
			counts(6, 6, 2), &Wave{Message: "wave 3 of 3: zone-c"}, appsv1beta1.ReasonProgressDeadlineExceeded, "", false},
	} {
		r := Compute(Input{Object: obj, Synced: true, Counts: tc.counts, UpdateRevision: "web-2", CurrentRevision: "web-1",
			MaxUnavailable: 1, Wave: tc.wave, Now: t0.Add(tc.at)})
		obj.Status = r.Status
		c := Get(&r.Status, appsv1beta1.ConditionProgressing)
		exceeded := tc.reason == appsv1beta1.ReasonProgressDeadlineExceeded
		if c.Reason != tc.reason || tc.message != "" && c.Message != tc.message || (r.RequeueAfter > 0) != tc.requeue ||
			r.DeadlineExceeded != exceeded {
			t.Fatalf("%s: Progressing %s %q, requeue %v; want %s %q, a deadline %v", tc.name, c.Reason, c.Message, r.RequeueAfter,
				tc.reason, tc.message, tc.requeue)
		}
		if RolloutComplete(obj, &r.Status) {
			t.Fatalf("%s: a waves rollout under way counts as finished", tc.name)
		}
	}
}
