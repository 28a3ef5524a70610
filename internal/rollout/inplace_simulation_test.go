package rollout

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// gated gives a pod the in-place readiness gate with its condition True,
// as the controller leaves a pod it created under InPlaceIfPossible.
func gated(p *corev1.Pod) {
	p.Spec.ReadinessGates = append(p.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: appsv1beta1.InPlaceUpdateReadyCondition})
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
		Type: appsv1beta1.InPlaceUpdateReadyCondition, Status: corev1.ConditionTrue, Reason: "Ready"})
}

// startedInPlace puts a gated pod where the controller's first write of
// an in-place update leaves it: its gate condition False, its labels (and
// spec) still those of its revision. Its Ready condition is as it was
// until the kubelet sees the gate.
func startedInPlace(p *corev1.Pod) {
	gateCondition(p).Status = corev1.ConditionFalse
	gateCondition(p).Reason = "InPlaceUpdate"
}

// updatingInPlace puts a gated pod where the spec patch of its in-place
// update leaves it: relabelled to rev with its new images, its gate
// condition still False (and so not Ready once the kubelet saw it).
func updatingInPlace(rev string) podOpt {
	return func(p *corev1.Pod) {
		p.Labels[appsv1beta1.RevisionLabel] = rev
		startedInPlace(p)
		notReady(p)
	}
}

// inPlaceFailed marks a gated pod's in-place update failed.
func inPlaceFailed(p *corev1.Pod) {
	gateCondition(p).Status = corev1.ConditionFalse
	gateCondition(p).Reason = "InPlaceUpdateFailed"
	notReady(p)
}

// inPlaceKubelet plays, in the simulated cluster, the kubelet and the
// controller's per-pod in-place writes, as the controller orders them:
// the plan's UpdateInPlace get their gate False (the start, one write),
// and nothing else; the kubelet sees the gate one step later (the pod
// leaves endpoints, not Ready); then, planned with the next plan, each
// pod the plan says is on its way (Plan.MovingInPlace) gets its one spec
// patch, which relabels it to the update revision; the step after, its
// gate goes True (the kubelet runs the new template), or the update fails
// if fail says so. A pod started and not on its way (paused, a target
// it cannot reach in place, a rollback to its own revision) ends where it
// stands: gate True, nothing patched. failEarly fails an update before its
// patch (a pod that never leaves endpoints, timed out), its labels still
// the old revision's. Ready comes back through the readiness pattern, as
// for a new pod.
type inPlaceKubelet struct {
	c               *cluster
	fail, failEarly func(*corev1.Pod) bool
	started         map[*corev1.Pod]int // the plan's step that began the update
	starts, patches int
	failed          int
	abandoned       int // started, then removed before the update ended
}

func (k *inPlaceKubelet) reconcile(in Input) Plan {
	k.c.t.Helper()
	step := k.c.step
	for pod, at := range k.started {
		if step == at+1 {
			notReady(pod) // the kubelet saw the gate False
		}
	}
	p := k.c.reconcile(in)
	moving, removed := map[*corev1.Pod]bool{}, map[*corev1.Pod]bool{}
	for _, pod := range p.MovingInPlace {
		moving[pod] = true
	}
	for _, pod := range slices.Concat(p.Delete, p.Evict) {
		removed[pod] = true
	}
	// The in-place steps the controller plans with p (every pod here began
	// before p was planned, and is out of endpoints).
	for pod := range k.started {
		if removed[pod] || pod.DeletionTimestamp != nil {
			k.abandoned++
			delete(k.started, pod)
			continue
		}
		cond := gateCondition(pod)
		target := revisionOf(pod)
		if moving[pod] {
			target = in.Target()
		}
		switch {
		case k.failEarly != nil && k.failEarly(pod) && revisionOf(pod) != target:
			cond.Reason = "InPlaceUpdateFailed"
			k.failed++
			delete(k.started, pod)
		case revisionOf(pod) != target:
			pod.Labels[appsv1beta1.RevisionLabel] = target // with the images, one write
			k.patches++
		case k.fail != nil && k.fail(pod):
			cond.Reason = "InPlaceUpdateFailed"
			k.failed++
			delete(k.started, pod)
		default:
			cond.Status, cond.Reason = corev1.ConditionTrue, "Ready"
			delete(k.started, pod)
		}
	}
	k.starts += len(p.UpdateInPlace)
	for _, pod := range p.UpdateInPlace {
		cond := gateCondition(pod)
		cond.Status, cond.Reason, cond.LastTransitionTime = corev1.ConditionFalse, "InPlaceUpdate", metav1.NewTime(k.c.now)
		k.started[pod] = step
	}
	return p
}

// TestInPlaceSimulation rolls image-only changes in place for many
// settings: every pod keeps its identity (no pod is created, none
// deleted), there are never more than replicas pods, never fewer than
// replicas-maxUnavailable available (a pod mid-update counts as
// unavailable), and the rollout converges within the step budget. Then
// the same back (a rollback in place), and with a partition held first.
func TestInPlaceSimulation(t *testing.T) {
	for _, replicas := range []int32{1, 3, 10, 25} {
		for _, f := range fences {
			for _, minReady := range []int32{0, 5} {
				for _, ready := range readinessPatterns {
					t.Run(fmt.Sprintf("replicas=%d/fence=%s/minReady=%d/%s", replicas, f, minReady, ready.name), func(t *testing.T) {
						c, k, surge, unavailable := gatedCluster(t, f, ready, replicas)
						created := c.created
						in := Input{Replicas: replicas, MaxSurge: surge, MaxUnavailable: unavailable, MinReadySeconds: minReady}
						for _, phase := range []struct {
							what              string
							from, to, current string
							partition         int32
						}{
							{"canary at 60%", revOld, revNew, revOld, (replicas*60 + 99) / 100},
							{"promoted", revOld, revNew, revOld, 0},
							{"rolled back", revNew, revOld, revNew, 0},
						} {
							in.UpdateRevision, in.CurrentRevision, in.Revisions, in.InPlace = phase.to, phase.current, []string{phase.from}, []string{phase.from}
							in.Partition = phase.partition
							runInPlace(t, k, in, phase.what)
						}
						// With maxUnavailable 0, surge pods make room (or,
						// partitioned, pods are replaced).
						if unavailable > 0 && c.created != created {
							t.Fatalf("%d pods created; an in-place rollout with maxUnavailable %d creates none", c.created-created, unavailable)
						}
						// Each start is followed by exactly one spec patch:
						// a pod on its way is never started again, and
						// never removed (with maxUnavailable 0 the surge
						// pod's room is given back by removing the last
						// old pod, not by starting it and removing it).
						if k.patches != k.starts || k.abandoned > 0 {
							t.Fatalf("%d in-place starts, %d spec patches, %d started pods removed; want one patch a start, none removed",
								k.starts, k.patches, k.abandoned)
						}
					})
				}
			}
		}
	}
}

// runInPlace reconciles until the rollout is held (or converged), checking
// at every step: no more active pods than replicas, the availability floor,
// and no pod ever removed.
func runInPlace(t *testing.T, k *inPlaceKubelet, in Input, what string) {
	t.Helper()
	c := k.c
	b := newBounds(in)
	b.maxActive = int(in.Replicas + surgeIfNoUnavailable(in.MaxSurge, in.MaxUnavailable))
	start := c.step
	done := func() bool {
		if in.Partition == 0 {
			return c.converged(in)
		}
		return c.heldAt(in)
	}
	for !done() {
		if c.step-start > stepBudget(in.Replicas) {
			t.Fatalf("%s: not done after %d steps: %+v", what, c.step-start, Count(c.pods, in.UpdateRevision, in.MinReadySeconds, c.now))
		}
		b.check(t, c, in)
		if p := k.reconcile(in); p.Removes() > 0 && in.MaxUnavailable > 0 {
			t.Fatalf("%s, step %d: an in-place rollout removed pods: %s", what, c.step, describe(p))
		}
	}
}

// surgeIfNoUnavailable is the surge an in-place rollout may use: none,
// unless maxUnavailable is 0.
func surgeIfNoUnavailable(surge, unavailable int32) int32 {
	if unavailable > 0 {
		return 0
	}
	return surge
}

// TestInPlaceFallbackSimulation rolls where in-place is only partly
// possible: pods created before the mode have no gate and are replaced
// within maxSurge, and some in-place updates fail (half before their spec
// patch, still labelled old, half after it) and those pods are replaced. The surge and availability bounds hold throughout, it
// converges, and only the pods that had to be replaced were.
func TestInPlaceFallbackSimulation(t *testing.T) {
	for _, replicas := range []int32{2, 5, 10} {
		for _, f := range fences {
			for _, ready := range readinessPatterns[:3] {
				t.Run(fmt.Sprintf("replicas=%d/fence=%s/%s", replicas, f, ready.name), func(t *testing.T) {
					surge, unavailable, err := ResolveFenceposts(&f.surge, &f.unavailable, replicas)
					if err != nil {
						t.Fatal(err)
					}
					c := newCluster(t, ready, int(replicas), revOld)
					ungated := 0
					for i, p := range c.pods {
						if i%3 == 2 {
							ungated++
							continue // created before the mode was set
						}
						gated(p)
					}
					// Half of the failing pods fail before their spec
					// patch (still labelled old), half after it.
					failing, early := map[string]bool{}, map[string]bool{}
					for i, p := range c.pods {
						if i%4 == 1 && hasGate(p) {
							failing[p.Name] = true
							early[p.Name] = i%8 == 1
						}
					}
					k := &inPlaceKubelet{c: c, started: map[*corev1.Pod]int{},
						fail:      func(p *corev1.Pod) bool { return failing[p.Name] },
						failEarly: func(p *corev1.Pod) bool { return early[p.Name] }}
					created := c.created
					in := Input{Replicas: replicas, MaxSurge: surge, MaxUnavailable: unavailable, MinReadySeconds: 5,
						UpdateRevision: revNew, CurrentRevision: revOld, Revisions: []string{revOld}, InPlace: []string{revOld}}
					b := newBounds(in)
					for !c.converged(in) {
						if c.step > stepBudget(in.Replicas) {
							t.Fatalf("no convergence after %d steps: %+v", c.step, Count(c.pods, in.UpdateRevision, in.MinReadySeconds, c.now))
						}
						b.check(t, c, in)
						k.reconcile(in)
					}
					assertSettled(t, c, in)
					want := ungated + len(failing)
					if unavailable == 0 {
						want = ungated // a failing pod may go as surplus before it fails
					}
					if got, surge := c.created-created, int(min(1, surgeIfNoUnavailable(surge, unavailable))); got < want || got > ungated+len(failing)+surge {
						t.Fatalf("%d pods created, want %d (%d without the gate, %d failed in place) and up to %d to surge",
							got, want, ungated, len(failing), surge)
					}
					if unavailable > 0 && k.failed != len(failing) {
						t.Fatalf("%d in-place updates failed, want %d", k.failed, len(failing))
					}
				})
			}
		}
	}
}

// TestInPlaceRetargetSimulation changes the update revision while pods are
// on their way in place: to a revision both old ones reach in place (every
// pod still moves, a pod not yet patched straight to the newest, and none
// is created or removed), or to one the oldest cannot reach (its pods on
// their way are old pods again: ended where they stand, or replaced).
// The surge and availability bounds hold throughout and it converges.
func TestInPlaceRetargetSimulation(t *testing.T) {
	const revNewer = "app-newer"
	for _, replicas := range []int32{3, 10} {
		for _, f := range fences {
			for _, ready := range readinessPatterns[:2] {
				for _, reachable := range []bool{true, false} {
					t.Run(fmt.Sprintf("replicas=%d/fence=%s/%s/reachable=%v", replicas, f, ready.name, reachable), func(t *testing.T) {
						c, k, surge, unavailable := gatedCluster(t, f, ready, replicas)
						in := Input{Replicas: replicas, MaxSurge: surge, MaxUnavailable: unavailable, MinReadySeconds: 5,
							UpdateRevision: revNew, CurrentRevision: revOld, Revisions: []string{revOld}, InPlace: []string{revOld}}
						b := newBounds(in)
						for range 3 { // under way: some pods started, some patched
							b.check(t, c, in)
							k.reconcile(in)
						}
						created := c.created
						in.UpdateRevision, in.Revisions, in.InPlace = revNewer, []string{revOld, revNew}, []string{revOld, revNew}
						if !reachable {
							in.InPlace = []string{revNew}
						}
						for !c.converged(in) {
							if c.step > stepBudget(in.Replicas) {
								t.Fatalf("no convergence after %d steps: %+v", c.step, Count(c.pods, in.UpdateRevision, in.MinReadySeconds, c.now))
							}
							b.check(t, c, in)
							p := k.reconcile(in)
							if reachable && unavailable > 0 && (p.Removes() > 0 || len(p.Create) > 0) {
								t.Fatalf("step %d: every pod can move in place, yet the plan creates or removes: %s", c.step, describe(p))
							}
						}
						assertSettled(t, c, in)
						if reachable && unavailable > 0 && c.created != created {
							t.Fatalf("%d pods created; every pod could move in place", c.created-created)
						}
					})
				}
			}
		}
	}
}

// gatedCluster is a cluster of replicas gated pods of revOld, the kubelet
// that moves them in place, and f resolved for replicas.
func gatedCluster(t *testing.T, f fence, ready readiness, replicas int32) (*cluster, *inPlaceKubelet, int32, int32) {
	t.Helper()
	surge, unavailable, err := ResolveFenceposts(&f.surge, &f.unavailable, replicas)
	if err != nil {
		t.Fatal(err)
	}
	c := newCluster(t, ready, int(replicas), revOld)
	for _, p := range c.pods {
		gated(p)
	}
	return c, &inPlaceKubelet{c: c, started: map[*corev1.Pod]int{}}, surge, unavailable
}
