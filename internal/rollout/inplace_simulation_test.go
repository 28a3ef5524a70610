package rollout

import (
	"fmt"
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

// updatingInPlace puts a gated pod mid in-place update: relabelled to rev,
// its gate condition False (and so not Ready once the kubelet saw it).
func updatingInPlace(rev string) podOpt {
	return func(p *corev1.Pod) {
		p.Labels[appsv1beta1.RevisionLabel] = rev
		gateCondition(p).Status = corev1.ConditionFalse
		gateCondition(p).Reason = "InPlaceUpdate"
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
// controller's per-pod in-place steps: a pod whose update began (gate
// False) leaves endpoints (not Ready) one step later; the next step its
// container restarts on the new image and the controller sets the gate
// True, unless fail says the update fails, then the gate says so; Ready
// comes back through the readiness pattern, as for a new pod.
type inPlaceKubelet struct {
	c       *cluster
	fail    func(*corev1.Pod) bool
	started map[*corev1.Pod]int // step the update began
	failed  int
}

func (k *inPlaceKubelet) reconcile(in Input) Plan {
	k.c.t.Helper()
	for pod, at := range k.started {
		cond := gateCondition(pod)
		switch {
		case pod.DeletionTimestamp != nil:
			delete(k.started, pod)
		case k.c.step == at+1:
			notReady(pod)
		case k.c.step >= at+2 && k.fail != nil && k.fail(pod):
			cond.Reason = "InPlaceUpdateFailed"
			k.failed++
			delete(k.started, pod)
		case k.c.step >= at+2:
			cond.Status, cond.Reason = corev1.ConditionTrue, "Ready"
			delete(k.started, pod)
		}
	}
	p := k.c.reconcile(in)
	for _, pod := range p.UpdateInPlace {
		pod.Labels[appsv1beta1.RevisionLabel] = in.UpdateRevision
		cond := gateCondition(pod)
		cond.Status, cond.Reason, cond.LastTransitionTime = corev1.ConditionFalse, "InPlaceUpdate", metav1.NewTime(k.c.now)
		k.started[pod] = k.c.step
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
						surge, unavailable, err := ResolveFenceposts(&f.surge, &f.unavailable, replicas)
						if err != nil {
							t.Fatal(err)
						}
						c := newCluster(t, ready, int(replicas), revOld)
						for _, p := range c.pods {
							gated(p)
						}
						k := &inPlaceKubelet{c: c, started: map[*corev1.Pod]int{}}
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
// within maxSurge, and some in-place updates fail and those pods are
// replaced. The surge and availability bounds hold throughout, it
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
					failing := map[string]bool{}
					for i, p := range c.pods {
						if i%4 == 1 && hasGate(p) {
							failing[p.Name] = true
						}
					}
					k := &inPlaceKubelet{c: c, started: map[*corev1.Pod]int{}, fail: func(p *corev1.Pod) bool { return failing[p.Name] }}
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
