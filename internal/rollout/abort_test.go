package rollout

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// aborted is a RollingUpdate from revOld (the current revision, creatable)
// to revNew, aborted.
func aborted(replicas, surge, unavailable int32, ps ...[]*corev1.Pod) Input {
	return Input{Replicas: replicas, MaxSurge: surge, MaxUnavailable: unavailable, Aborted: true,
		CurrentRevision: revOld, Revisions: []string{revOld}, Pods: join(ps...)}
}

func TestComputeAbort(t *testing.T) {
	runPlanCases(t, []planCase{
		{
			name: "aborted at the deadline, 25%/25%: the never-ready updated pods go at no cost, a stable pod is created",
			in:   aborted(10, 3, 2, pods("old", revOld, 8), pods("new", revNew, 4, pending)),
			// 12 active of 13 allowed: 1 stable pod created; the 4 unavailable updated pods cost no availability.
			wantCreations: []Creation{{Revision: revOld, Count: 1}},
			wantDelete:    []string{"new-0", "new-1", "new-2", "new-3"}, wantReason: ReasonAbortRollBack,
		},
		{
			name:          "aborted, the stable pods created: they must become available first",
			in:            aborted(10, 3, 2, pods("old", revOld, 8), pods("back", revOld, 2, pending)),
			wantCreations: nil, wantReason: ReasonAborted,
		},
		{
			name:       "aborted with every pod back on the stable revision: nothing to do",
			in:         aborted(10, 3, 2, pods("old", revOld, 10)),
			wantReason: ReasonAborted,
		},
		{
			name: "aborted mid-rollout, maxSurge=1 maxUnavailable=0: available updated pods go only once a stable pod replaces each",
			in:   aborted(5, 1, 0, pods("old", revOld, 3), pods("new", revNew, 2)),
			// 5 of 6 allowed: one stable pod first; no availability to spend.
			wantCreations: []Creation{{Revision: revOld, Count: 1}}, wantReason: ReasonAbortRollBack,
		},
		{
			name:       "aborted mid-rollout, maxSurge=1 maxUnavailable=0: the stable pod available, one updated pod goes",
			in:         aborted(5, 1, 0, pods("old", revOld, 4), pods("new", revNew, 2)),
			wantDelete: []string{"new-0"}, wantReason: ReasonAbortRollBack,
		},
	})
}

func TestComputeAbortInPlace(t *testing.T) {
	runPlanCases(t, []planCase{
		{
			name: "aborted, in place: updated pods move back in place, within maxUnavailable, no pod created",
			in: func() Input {
				in := aborted(5, 1, 1, pods("old", revOld, 3, gated), pods("new", revNew, 2, gated, notReady))
				in.InPlace = []string{revNew}
				return in
			}(),
			wantInPlace: []string{"new-0"}, wantReason: ReasonAbortRollBack,
		},
		{
			name: "aborted, in place: a pod on its way back is a stable pod that is not available yet",
			in: func() Input {
				in := aborted(5, 1, 1, pods("old", revOld, 3, gated), pods("new", revNew, 1, gated, startedInPlace, notReady),
					pods("new2", revNew, 1, gated))
				in.InPlace = []string{revNew}
				return in
			}(),
			// new-0 is on its way (unavailable, on the stable side): it holds back new2-0.
			wantMoving: []string{"new-0"}, wantReason: ReasonAbortRollBack,
		},
		{
			name: "aborted: a pod on its way in place to the aborted revision counts as a stable pod, and nothing more moves forward",
			in: func() Input {
				in := aborted(3, 1, 1, pods("old", revOld, 2, gated), pods("going", revOld, 1, gated, startedInPlace))
				in.InPlace = []string{revNew}
				return in
			}(),
			wantReason: ReasonAborted,
		},
	})
}

func TestComputeAbortWithOtherInputs(t *testing.T) {
	runPlanCases(t, []planCase{
		{
			name: "aborted under a partition: every pod goes back all the same",
			in: func() Input {
				in := aborted(4, 1, 1, pods("old", revOld, 2), pods("new", revNew, 2))
				in.Partition = 2
				return in
			}(),
			wantCreations: []Creation{{Revision: revOld, Count: 1}}, wantDelete: []string{"new-0"}, wantReason: ReasonAbortRollBack,
		},
		{
			name: "aborted mid canary step (step 3 of 7, 25%: 3 pods updated, never ready): every pod goes back, the step holds nothing",
			in: func() Input {
				in := stepped(t, canarySteps, 10, 2, pods("old", revOld, 8), pods("new", revNew, 3, pending))
				in.Aborted = true
				return in
			}(),
			// 11 active of 11 allowed: nothing created yet. maxUnavailable 0 leaves room to scale
			// down 11-10 = 1 pod, as Deployment's cleanupUnhealthyReplicas: one unavailable updated pod.
			wantDelete: []string{"new-0"}, wantReason: ReasonAbortRollBack,
		},
		{
			name: "aborted at a canary pause with its pods updated: they go back too, not held by the step",
			in: func() Input {
				in := stepped(t, canarySteps, 4, 3, pods("old", revOld, 3), pods("new", revNew, 1))
				in.Aborted = true
				return in
			}(),
			// maxSurge 1, maxUnavailable 0: a stable pod first, as any abort with no availability to spend.
			wantCreations: []Creation{{Revision: revOld, Count: 1}}, wantReason: ReasonAbortRollBack,
		},
		{
			name: "aborted without the stable revision's history: nothing to go back to, the rollout goes on",
			in: Input{Replicas: 3, MaxSurge: 1, MaxUnavailable: 0, Aborted: true, CurrentRevision: revOld,
				Pods: join(pods("old", revOld, 3))},
			wantCreate: 1, wantReason: ReasonRollingUpdate,
		},
		{
			name: "aborted and paused: no rollout step, only the paused scale, the stable revision counted as the newest",
			in: func() Input {
				in := aborted(4, 1, 1, pods("old", revOld, 2), pods("new", revNew, 2))
				in.Paused, in.SizedFor = true, &Size{Replicas: 4, MaxReplicas: 5}
				return in
			}(),
			wantCreations: []Creation{{Revision: revOld, Count: 1}}, wantReason: ReasonPausedScaleUp,
		},
	})
}

func TestTargetIsTheStableRevisionOnlyWhileAborting(t *testing.T) {
	in := aborted(3, 1, 0)
	in.UpdateRevision = revNew
	if got := in.Target(); got != revOld {
		t.Errorf("aborted: target %q, want %q", got, revOld)
	}
	in.Aborted = false
	if got := in.Target(); got != revNew {
		t.Errorf("not aborted: target %q, want %q", got, revNew)
	}
	in.Aborted, in.Revisions = true, nil
	if got := in.Target(); got != revNew {
		t.Errorf("aborted with no stable history: target %q, want %q", got, revNew)
	}
}

// TestAbortSimulation rolls an update whose pods never become Ready,
// aborts it after a few steps (some pods updated), and runs until every
// pod is back on the stable revision and available, with nothing left to
// do; then a retry starts the same rollout over (pods of the update
// revision are created again), and a new template after another abort
// rolls out normally. Never beyond replicas+maxSurge, never below
// replicas-maxUnavailable available, and no pod of the aborted revision
// is created while aborted.
func TestAbortSimulation(t *testing.T) {
	for _, replicas := range []int32{1, 3, 10} {
		for _, f := range fences {
			for _, minReady := range []int32{0, 5} {
				t.Run(fmt.Sprintf("replicas=%d/fence=%s/minReady=%d", replicas, f, minReady), func(t *testing.T) {
					surge, unavailable, err := ResolveFenceposts(&f.surge, &f.unavailable, replicas)
					if err != nil {
						t.Fatal(err)
					}
					c := newCluster(t, readinessPatterns[0], int(replicas), revOld)
					c.broken = revNew
					in := Input{Replicas: replicas, MaxSurge: surge, MaxUnavailable: unavailable, MinReadySeconds: minReady,
						UpdateRevision: revNew, CurrentRevision: revOld, Revisions: []string{revOld}}
					runAborting(t, c, in, nil)
				})
			}
		}
	}
}

// TestAbortInPlaceSimulation is TestAbortSimulation with gated pods and an
// image-only change: while aborted the updated pods move back in place,
// none created (maxUnavailable > 0).
func TestAbortInPlaceSimulation(t *testing.T) {
	for _, replicas := range []int32{1, 3, 10} {
		for _, f := range fences {
			t.Run(fmt.Sprintf("replicas=%d/fence=%s", replicas, f), func(t *testing.T) {
				c, k, surge, unavailable := gatedCluster(t, f, readinessPatterns[0], replicas)
				c.broken = revNew
				in := Input{Replicas: replicas, MaxSurge: surge, MaxUnavailable: unavailable,
					UpdateRevision: revNew, CurrentRevision: revOld, Revisions: []string{revOld}, InPlace: []string{revOld}}
				runAborting(t, c, in, k)
			})
		}
	}
}

// runAborting is the sequence of TestAbortSimulation, reconciled through
// k when not nil (in place).
func runAborting(t *testing.T, c *cluster, in Input, k *inPlaceKubelet) {
	t.Helper()
	reconcile := c.reconcile
	if k != nil {
		reconcile = k.reconcile
	}
	b := newBounds(in)
	for range 4 { // the rollout gets going; its pods never become Ready
		b.check(t, c, in)
		reconcile(in)
	}
	if c.activeOf(revNew) == 0 {
		t.Fatalf("no pod of the update revision after 4 steps: nothing to abort")
	}
	in.Aborted = true
	if k != nil {
		in.InPlace = []string{revNew} // the controller computes InPlace towards Target
	}
	created := c.created
	for start := c.step; !c.converged(in.towardsStable()); {
		if c.step-start > stepBudget(in.Replicas) {
			t.Fatalf("abort: not back after %d steps: %+v", c.step-start, Count(c.pods, revOld, in.MinReadySeconds, c.now))
		}
		b.check(t, c, in)
		if p := reconcile(in); createdOf(p, revNew) > 0 {
			t.Fatalf("step %d: an aborted rollout creates pods of the aborted revision: %s", c.step, describe(p))
		}
	}
	if k != nil && in.MaxUnavailable > 0 && c.created != created {
		t.Fatalf("%d pods created; an abort in place with maxUnavailable %d creates none", c.created-created, in.MaxUnavailable)
	}
	if p := Compute(c.input(in)); p.Reason != ReasonAborted || len(p.Create) > 0 || p.Removes() > 0 || len(p.UpdateInPlace) > 0 {
		t.Fatalf("back on the stable revision, yet: %s", describe(p))
	}

	// A retry: the same rollout starts over.
	in.Aborted = false
	if k != nil {
		in.InPlace = []string{revOld}
	}
	for range 3 {
		b.check(t, c, in)
		reconcile(in)
	}
	if c.activeOf(revNew) == 0 {
		t.Fatalf("retried, yet no pod of the update revision after 3 steps")
	}

	// Aborted again, then a new template that works rolls out normally.
	in.Aborted = true
	for start := c.step; !c.converged(in.towardsStable()); {
		if c.step-start > stepBudget(in.Replicas) {
			t.Fatalf("second abort: not back after %d steps", c.step-start)
		}
		b.check(t, c, in)
		reconcile(in)
	}
	const revFixed = "app-fixed"
	in.Aborted, in.UpdateRevision, in.Revisions = false, revFixed, []string{revOld, revNew}
	if k != nil {
		in.InPlace = []string{revOld, revNew}
	}
	for start := c.step; !c.converged(in); {
		if c.step-start > stepBudget(in.Replicas) {
			t.Fatalf("new template: no convergence after %d steps", c.step-start)
		}
		b.check(t, c, in)
		reconcile(in)
	}
}

// drained is in with its aborted revision's pods held until t0+wait
// (Input.AbortDrain: the route's weight not yet off them).
func drained(in Input, wait time.Duration) Input {
	in.AbortDrain = t0.Add(wait)
	return in
}

func TestComputeAbortDrainsTrafficFirst(t *testing.T) {
	runPlanCases(t, []planCase{
		{
			name: "aborted, the route's weight not yet off the updated pods: the stable pod is created, no updated pod goes",
			in:   drained(aborted(10, 3, 2, pods("old", revOld, 8), pods("new", revNew, 4, pending)), 30*time.Second),
			// As the undrained case (TestComputeAbort's first) but for the removals: due again once they may go.
			wantCreations: []Creation{{Revision: revOld, Count: 1}}, wantReason: ReasonAbortDrainTraffic, wantRequeue: 30 * time.Second,
		},
		{
			name:       "aborted, maxSurge=1 maxUnavailable=0, the stable pod available: the updated pod stays until the drain ends",
			in:         drained(aborted(5, 1, 0, pods("old", revOld, 4), pods("new", revNew, 2)), 10*time.Second),
			wantReason: ReasonAbortDrainTraffic, wantRequeue: 10 * time.Second,
		},
		{
			name:       "aborted, the drain over: the updated pod goes",
			in:         drained(aborted(5, 1, 0, pods("old", revOld, 4), pods("new", revNew, 2)), -time.Second),
			wantDelete: []string{"new-0"}, wantReason: ReasonAbortRollBack,
		},
		{
			name: "aborted, in place: no updated pod moves back while traffic drains",
			in: func() Input {
				in := drained(aborted(5, 1, 1, pods("old", revOld, 3, gated), pods("new", revNew, 2, gated, notReady)), 5*time.Second)
				in.InPlace = []string{revNew}
				return in
			}(),
			wantReason: ReasonAbortDrainTraffic, wantRequeue: 5 * time.Second,
		},
		{
			name: "aborted, every updated pod already terminating: nothing held, no requeue for the drain",
			in: drained(aborted(4, 1, 1, pods("old", revOld, 4), pods("new", revNew, 1, terminating)),
				30*time.Second),
			wantReason: ReasonAborted,
		},
	})
}
