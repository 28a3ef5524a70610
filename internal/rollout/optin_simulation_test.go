package rollout

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// bounds are the invariants a sequence checks before every reconcile.
type bounds struct {
	maxActive, minAvailable int
	// held: once at least this many old pods are active, never fewer.
	held    int
	reached bool
}

func newBounds(in Input) *bounds {
	return &bounds{
		maxActive:    int(in.Replicas + in.MaxSurge),
		minAvailable: int(in.Replicas - min(in.MaxUnavailable, in.Replicas)),
		held:         int(min(in.Partition, in.Replicas)),
	}
}

func (b *bounds) check(t *testing.T, c *cluster, in Input) {
	t.Helper()
	o := observe(c.input(in))
	if o.active > b.maxActive {
		t.Fatalf("step %d: %d active pods > replicas+maxSurge=%d", c.step, o.active, b.maxActive)
	}
	if o.available < b.minAvailable {
		t.Fatalf("step %d: %d available pods < replicas-maxUnavailable=%d", c.step, o.available, b.minAvailable)
	}
	if b.reached && o.old < b.held {
		t.Fatalf("step %d: %d pods on old revisions < partition %d, reached before", c.step, o.old, b.held)
	}
	b.reached = b.reached || o.old >= b.held
}

// heldAt reports whether the rollout is held at its partition: replicas
// pods, all available, none terminating, partition of them on the current
// revision and the rest updated, and nothing left to do.
func (c *cluster) heldAt(in Input) bool {
	held := int(min(in.Partition, in.Replicas))
	if len(c.pods) != int(in.Replicas) {
		return false
	}
	current := 0
	for _, p := range c.pods {
		if !IsAvailable(p, in.MinReadySeconds, c.now) {
			return false
		}
		switch revisionOf(p) {
		case in.UpdateRevision:
		case in.CurrentRevision:
			current++
		default:
			return false
		}
	}
	p := Compute(c.input(in))
	return current == held && len(p.Create) == 0 && p.Removes() == 0
}

// runToHold reconciles until the rollout is held at in's partition
// (converged, for partition 0), checking the bounds at every step.
func runToHold(t *testing.T, c *cluster, in Input, what string) {
	t.Helper()
	b := newBounds(in)
	start := c.step
	done := func() bool {
		if in.Partition == 0 {
			return c.converged(in)
		}
		return c.heldAt(in)
	}
	for !done() {
		if c.step-start > stepBudget(in.Replicas) {
			t.Fatalf("%s: not held after %d steps: %+v", what, c.step-start, Count(c.pods, in.UpdateRevision, in.MinReadySeconds, c.now))
		}
		b.check(t, c, in)
		c.reconcile(in)
	}
}

// TestPartitionSimulation rolls a canary for many settings: to a
// partition, lower, raised above the updated pods (pods move back), then
// removed, each phase held (or converged) within the step budget, never
// beyond replicas+maxSurge, never below replicas-maxUnavailable available,
// and never fewer than the partition's pods on old revisions once reached.
func TestPartitionSimulation(t *testing.T) {
	for _, replicas := range []int32{1, 3, 5, 10, 25} {
		for _, f := range fences {
			for _, ready := range readinessPatterns[:3] {
				for _, minReady := range []int32{0, 5} {
					t.Run(fmt.Sprintf("replicas=%d/fence=%s/minReady=%d/%s", replicas, f, minReady, ready.name), func(t *testing.T) {
						surge, unavailable, err := ResolveFenceposts(&f.surge, &f.unavailable, replicas)
						if err != nil {
							t.Fatal(err)
						}
						in := Input{Replicas: replicas, MaxSurge: surge, MaxUnavailable: unavailable, MinReadySeconds: minReady,
							UpdateRevision: revNew, CurrentRevision: revOld, Revisions: []string{revOld}}
						c := newCluster(t, ready, int(replicas), revOld)
						for _, phase := range []struct {
							what      string
							partition int32
						}{
							{"to 80%", (replicas*80 + 99) / 100},
							{"lowered to half", replicas / 2},
							{"raised to all but one", max(replicas-1, replicas/2)},
							{"raised to all", replicas},
							{"lowered to 1", 1},
							{"removed", 0},
						} {
							in.Partition = phase.partition
							runToHold(t, c, in, phase.what)
						}
						assertSettled(t, c, in)
					})
				}
			}
		}
	}
}

// TestPartitionRollOverSimulation starts a canary from pods of two old
// revisions: the held pods converge on the current one.
func TestPartitionRollOverSimulation(t *testing.T) {
	for _, f := range fences {
		t.Run(f.String(), func(t *testing.T) {
			surge, unavailable, err := ResolveFenceposts(&f.surge, &f.unavailable, 10)
			if err != nil {
				t.Fatal(err)
			}
			in := Input{Replicas: 10, MaxSurge: surge, MaxUnavailable: unavailable, Partition: 4,
				UpdateRevision: revNew, CurrentRevision: revOld, Revisions: []string{revOld2, revOld}}
			c := newCluster(t, readinessPatterns[0], 10, revOld, revOld2)
			runToHold(t, c, in, "held")
			if n := c.activeOf(revOld2); n != 0 {
				t.Fatalf("held with %d pods of another old revision", n)
			}
		})
	}
}

// TestPartitionScaleSimulation scales a held canary with a percent
// partition (recomputed, as the caller does) and with a count: it holds
// again at the partition's meaning, with the bounds of the new size.
func TestPartitionScaleSimulation(t *testing.T) {
	quarter := intstr.FromString("25%")
	f := fence{quarter, quarter}
	for _, tc := range []struct {
		name     string
		from, to int32
		percent  bool
		p        int32
	}{
		{"80% 10->20", 10, 20, true, 80},
		{"80% 20->5", 20, 5, true, 80},
		{"count 8 10->20", 10, 20, false, 8},
		{"count 8 10->5", 10, 5, false, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resolve := func(replicas int32) int32 {
				if tc.percent {
					return (tc.p*replicas + 99) / 100
				}
				return min(tc.p, replicas)
			}
			c := newCluster(t, readinessPatterns[1], int(tc.from), revOld)
			in := scaledInput(t, f, tc.from)
			in.CurrentRevision, in.Partition = revOld, resolve(tc.from)
			runToHold(t, c, in, "held")
			in = c.reconcileRecorded(in) // held: records nothing new
			next := scaledInput(t, f, tc.to)
			next.SizedFor, next.CurrentRevision, next.Partition = in.SizedFor, revOld, resolve(tc.to)
			in = next
			for !c.heldAt(in) {
				if c.step > 2*stepBudget(max(tc.from, tc.to)) {
					t.Fatalf("not held after the scale: %+v", Count(c.pods, in.UpdateRevision, in.MinReadySeconds, c.now))
				}
				in = c.reconcileRecorded(in)
			}
			if updated := c.activeOf(revNew); updated != int(tc.to-in.Partition) {
				t.Fatalf("%d updated pods, want %d", updated, tc.to-in.Partition)
			}
		})
	}
}

// TestSpecifiedDeleteSimulation labels pods of a settled MyDeployment and
// of a rollout under way: the labelled pods are replaced within the
// bounds, no other pod goes before them, and the rollout converges.
func TestSpecifiedDeleteSimulation(t *testing.T) {
	for _, replicas := range []int32{1, 3, 10} {
		for _, f := range fences {
			for _, rollout := range []bool{false, true} {
				for _, pdb := range []bool{false, true} {
					t.Run(fmt.Sprintf("replicas=%d/fence=%s/rollout=%v/respectPDB=%v", replicas, f, rollout, pdb), func(t *testing.T) {
						surge, unavailable, err := ResolveFenceposts(&f.surge, &f.unavailable, replicas)
						if err != nil {
							t.Fatal(err)
						}
						in := Input{Replicas: replicas, MaxSurge: surge, MaxUnavailable: unavailable, UpdateRevision: revNew, RespectPDB: pdb}
						start := revNew
						if rollout {
							start = revOld
						}
						c := newCluster(t, readinessPatterns[2], int(replicas), start)
						marked := c.pods[len(c.pods)-1] // the least deletable by ranking: created last... all equal, named last
						labelled(marked)
						b := newBounds(in)
						for !c.converged(in) || slices.Contains(c.pods, marked) {
							if c.step > stepBudget(replicas) {
								t.Fatalf("not converged after %d steps", c.step)
							}
							b.check(t, c, in)
							before := len(c.active())
							p := c.reconcile(in)
							removed := slices.Concat(p.Delete, p.Evict)
							if marked.DeletionTimestamp == nil && len(removed) > 0 {
								for _, d := range removed {
									if IsAvailable(d, 0, c.now) {
										t.Fatalf("step %d: available pod %s removed before the labelled one (%d active)", c.step, d.Name, before)
									}
								}
							}
							if pdb && !rollout && len(p.Delete) > 0 {
								t.Fatalf("step %d: a replacement under respect-pdb deleted instead of evicted: %s", c.step, describe(p))
							}
						}
						assertSettled(t, c, in)
					})
				}
			}
		}
	}
}

// TestSpecifiedDeleteScaleDown: on a scale-down (the pods were sized for
// more replicas) the labelled pod goes first, in the first step, deleted
// even under respect-pdb.
func TestSpecifiedDeleteScaleDown(t *testing.T) {
	c := newCluster(t, readinessPatterns[0], 5, revNew)
	marked := c.pods[2]
	labelled(marked)
	in := Input{Replicas: 4, MaxSurge: 1, MaxUnavailable: 1, UpdateRevision: revNew, RespectPDB: true, SizedFor: &Size{Replicas: 5, MaxReplicas: 6}}
	p := c.reconcile(in)
	if !slices.Equal(p.Delete, []*corev1.Pod{marked}) || len(p.Evict) != 0 {
		t.Fatalf("scale-down 5 -> 4: %s, want the labelled pod %s deleted", describe(p), marked.Name)
	}
}
