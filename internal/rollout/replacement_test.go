package rollout

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// replacementCase is one input planned without and with
// TerminationComplete: off is Deployment's plan, on the opt-in's.
type replacementCase struct {
	name    string
	in      Input
	off, on planCase
}

func TestComputeTerminationComplete(t *testing.T) {
	failed := phase(corev1.PodFailed)
	cases := []replacementCase{
		{
			name: "rolling maxSurge=1 maxUnavailable=0, an old pod terminating: its replacement waits for it",
			in:   Input{Replicas: 3, MaxSurge: 1, Pods: join(pods("old", revOld, 2), pods("gone", revOld, 1, terminating), pods("new", revNew, 1))},
			off:  planCase{wantCreate: 1, wantReason: ReasonRollingUpdate},
			on:   planCase{wantReason: ReasonWaitForPodsGone},
		},
		{
			name: "rolling maxSurge=1 maxUnavailable=0, the old pod gone: the next new pod",
			in:   Input{Replicas: 3, MaxSurge: 1, Pods: join(pods("old", revOld, 2), pods("new", revNew, 1))},
			off:  planCase{wantCreate: 1, wantReason: ReasonRollingUpdate},
			on:   planCase{wantCreate: 1, wantReason: ReasonRollingUpdate},
		},
		{
			name: "rolling maxSurge=0 maxUnavailable=1, an old pod terminating: no pod before it is gone",
			in:   Input{Replicas: 3, MaxUnavailable: 1, Pods: join(pods("old", revOld, 2), pods("gone", revOld, 1, terminating))},
			off:  planCase{wantCreate: 1, wantReason: ReasonRollingUpdate},
			on:   planCase{wantReason: ReasonWaitForPodsGone},
		},
		{
			name: "rolling maxSurge=2, one pod terminating: it takes one of the surge",
			in:   Input{Replicas: 3, MaxSurge: 2, Pods: join(pods("old", revOld, 3), pods("gone", revOld, 1, terminating))},
			off:  planCase{wantCreate: 2, wantReason: ReasonRollingUpdate},
			on:   planCase{wantCreate: 1, wantReason: ReasonRollingUpdate},
		},
		{
			name: "rolling, old pods still removed within maxUnavailable while a pod terminates",
			in: Input{Replicas: 4, MaxSurge: 1, MaxUnavailable: 1,
				Pods: join(pods("old", revOld, 3), pods("gone", revOld, 1, terminating), pods("new", revNew, 1))},
			off: planCase{wantCreate: 1, wantDelete: []string{"old-0"}, wantReason: ReasonRollingUpdate},
			on:  planCase{wantDelete: []string{"old-0"}, wantReason: ReasonRollingUpdate},
		},
		{
			name: "a deleted pod of 3 replicas: replaced only once it is gone",
			in:   Input{Replicas: 3, MaxSurge: 1, Pods: join(pods("new", revNew, 2), pods("gone", revNew, 1, terminating))},
			off:  planCase{wantCreate: 1, wantReason: ReasonScaleUp},
			on:   planCase{wantReason: ReasonWaitForPodsGone},
		},
		{
			name: "a deleted pod of 3 replicas, Recreate: replaced only once it is gone",
			in: Input{Replicas: 3, Strategy: Recreate,
				Pods: join(pods("new", revNew, 2), pods("gone", revNew, 1, terminating))},
			off: planCase{wantCreate: 1, wantReason: ReasonScaleUp},
			on:  planCase{wantReason: ReasonWaitForPodsGone},
		},
		{
			name: "a pod the kubelet evicted (Failed): deleted at once, replaced once it is gone",
			in:   Input{Replicas: 3, MaxSurge: 1, Pods: join(pods("new", revNew, 2), pods("evicted", revNew, 1, failed))},
			off:  planCase{wantCreate: 1, wantDelete: []string{"evicted-0"}, wantReason: ReasonScaleUp},
			on:   planCase{wantDelete: []string{"evicted-0"}, wantReason: ReasonWaitForPodsGone},
		},
		{
			name: "scaled 5 to 3 and back to 5: the pods made up as the removed ones go",
			in:   Input{Replicas: 5, MaxSurge: 1, Pods: join(pods("new", revNew, 3), pods("gone", revNew, 2, terminating))},
			off:  planCase{wantCreate: 2, wantReason: ReasonScaleUp},
			on:   planCase{wantReason: ReasonWaitForPodsGone},
		},
		{
			name: "scaled 5 to 3 and back to 5, one removed pod gone: one pod made up",
			in:   Input{Replicas: 5, MaxSurge: 1, Pods: join(pods("new", revNew, 3), pods("gone", revNew, 1, terminating))},
			off:  planCase{wantCreate: 2, wantReason: ReasonScaleUp},
			on:   planCase{wantCreate: 1, wantReason: ReasonScaleUp},
		},
		{
			name: "a scale-down while pods terminate: removals as without the opt-in",
			in:   Input{Replicas: 3, MaxSurge: 1, Pods: join(pods("new", revNew, 5), pods("gone", revNew, 2, terminating))},
			off:  planCase{wantDelete: []string{"new-0", "new-1"}, wantReason: ReasonScaleDown},
			on:   planCase{wantDelete: []string{"new-0", "new-1"}, wantReason: ReasonScaleDown},
		},
		{
			name: "paused, a deleted pod: replaced only once it is gone",
			in:   Input{Replicas: 3, MaxSurge: 1, Paused: true, Pods: join(pods("new", revNew, 2), pods("gone", revNew, 1, terminating))},
			off:  planCase{wantCreate: 1, wantReason: ReasonPausedScaleUp},
			on:   planCase{wantReason: ReasonWaitForPodsGone},
		},
		{
			name: "a specified delete: the new pod first within maxSurge, as without the opt-in",
			in:   Input{Replicas: 3, MaxSurge: 1, Pods: join(pods("new", revNew, 2), pods("doomed", revNew, 1, labelled))},
			off:  planCase{wantCreate: 1, wantReason: ReasonSpecifiedDelete},
			on:   planCase{wantCreate: 1, wantReason: ReasonSpecifiedDelete},
		},
	}
	var planCases []planCase
	for _, tc := range cases {
		for _, on := range []bool{false, true} {
			c := tc.off
			c.name = tc.name + ": as Deployment"
			if on {
				c = tc.on
				c.name = tc.name + ": TerminationComplete"
			}
			c.in = tc.in
			c.in.TerminationComplete = on
			planCases = append(planCases, c)
		}
	}
	runPlanCases(t, planCases)
}

// checkAfterTermination checks what Input.TerminationComplete promises of
// p, given q, the plan of the same input without it: the same removals and
// in-place moves, q's creates cut, never more pods (active, terminating or
// finished, and created) than the step's ceiling (Replicas outside a
// rollout or under Recreate, Replicas+MaxSurge within one), and a cut
// only where the pods reach Replicas without the cut ones.
func checkAfterTermination(t testing.TB, in Input, p, q Plan) {
	t.Helper()
	if describe(Plan{Delete: p.Delete, Evict: p.Evict, UpdateInPlace: p.UpdateInPlace, MovingInPlace: p.MovingInPlace}) !=
		describe(Plan{Delete: q.Delete, Evict: q.Evict, UpdateInPlace: q.UpdateInPlace, MovingInPlace: q.MovingInPlace}) {
		t.Fatalf("TerminationComplete changed what the plan removes or moves in place:\n%s\nwithout it:\n%s", describe(p), describe(q))
	}
	if want := capCreates(q.Create, int(p.Creates())); describe(Plan{Create: p.Create}) != describe(Plan{Create: want}) {
		t.Fatalf("TerminationComplete creates %v, not the first of %v", p.Create, q.Create)
	}
	ob := in
	if ob.aborting() {
		ob = ob.towardsStable()
	}
	o := observe(ob)
	pods := 0
	for _, pod := range in.Pods {
		if pod != nil {
			pods++
		}
	}
	create := int(p.Creates())
	ceiling := o.replicas + o.drainSurge()
	if o.recreate || o.old == 0 && o.specified == 0 && o.held == 0 && len(o.labels) <= 1 && ob.Canary == nil {
		ceiling = o.replicas
	}
	if create > 0 && pods+create > ceiling {
		t.Fatalf("TerminationComplete: %d pods, %d of them not active, and %d created: more than %d: %s",
			pods, pods-o.active, create, ceiling, describe(p))
	}
	if create < int(q.Creates()) && pods+create < o.replicas {
		t.Fatalf("TerminationComplete: %d pods and %d created, fewer than replicas=%d, yet creates cut from %v: %s",
			pods, create, o.replicas, q.Create, describe(p))
	}
}

// TestTerminationCompleteSimulation rolls a MyDeployment with
// TerminationComplete for many settings on the simulated cluster, where a
// removed pod terminates for one reconcile, and asserts at every step that
// the pods, terminating ones counted, never exceed replicas+maxSurge,
// availability never falls below replicas-maxUnavailable, and the rollout
// converges; then that a pod deleted at rest is replaced only once it is
// gone, as are pods a scale-in removed when it is undone.
func TestTerminationCompleteSimulation(t *testing.T) {
	for _, replicas := range simReplicas {
		for _, f := range fences {
			for _, ready := range readinessPatterns {
				t.Run(fmt.Sprintf("replicas=%d/fence=%s/%s", replicas, f, ready.name), func(t *testing.T) {
					surge, unavailable, err := ResolveFenceposts(&f.surge, &f.unavailable, replicas)
					if err != nil {
						t.Fatal(err)
					}
					in := Input{Replicas: replicas, MaxSurge: surge, MaxUnavailable: unavailable,
						UpdateRevision: revNew, TerminationComplete: true}
					c := newCluster(t, ready, int(replicas), revOld)
					runAfterTermination(t, c, in, int(replicas+surge), int(replicas-min(unavailable, replicas)), 2*stepBudget(replicas))
					if replicas == 0 {
						return
					}
					// A deleted pod, then a scale-in undone: never more than replicas pods.
					ts := metav1.NewTime(c.now)
					c.pods[0].DeletionTimestamp = &ts
					runAfterTermination(t, c, in, int(replicas), 0, c.step+stepBudget(replicas))
					for _, pod := range c.pods[:len(c.pods)/2] {
						pod.DeletionTimestamp = &ts
					}
					runAfterTermination(t, c, in, int(replicas), 0, c.step+stepBudget(replicas))
				})
			}
		}
	}
}

// runAfterTermination reconciles until c converges, within budget steps,
// checking that no step sees more than most pods, terminating ones counted,
// or fewer than minAvailable available.
func runAfterTermination(t *testing.T, c *cluster, in Input, most, minAvailable, budget int) {
	t.Helper()
	for !c.converged(in) {
		if c.step > budget {
			t.Fatalf("no convergence after %d steps: %+v", c.step, Count(c.pods, in.UpdateRevision, in.MinReadySeconds, c.now))
		}
		if len(c.pods) > most {
			t.Fatalf("step %d: %d pods, terminating ones counted, > %d", c.step, len(c.pods), most)
		}
		if o := observe(c.input(in)); o.available < minAvailable {
			t.Fatalf("step %d: %d available pods < replicas-maxUnavailable=%d", c.step, o.available, minAvailable)
		}
		c.reconcile(in)
	}
	assertSettled(t, c, in)
}
