package rollout

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// e2eSteps are the steps of the e2e: a pod, a timed pause, half,
// a pause until promote, all.
const e2eSteps = "1, pause 10s, 50%, pause, 100%"

// canaryRun drives a canary rollout as the controller does: each plan's
// canary record and size record are written before the next plan, the
// bounds are checked before every reconcile, and the steps seen are kept.
type canaryRun struct {
	t    *testing.T
	c    *cluster
	in   Input
	seen []int // the step index after each reconcile
	// scaled: Replicas changed mid-run, so the bounds are checked per
	// step (no step makes them worse), as reconcileRecorded does.
	scaled bool
	// floor: after every reconcile, the stable side keeps at least the
	// floor its stated weight holds (StableFloor).
	floor bool
}

func newCanaryRun(t *testing.T, ready readiness, f fence, replicas int32, steps string) *canaryRun {
	t.Helper()
	in := scaledInput(t, f, replicas)
	list, err := parseSteps(steps)
	if err != nil {
		t.Fatal(err)
	}
	in.CurrentRevision, in.Revisions, in.MinReadySeconds = revOld, []string{revOld}, 0
	in.Canary = &Canary{Steps: list}
	return &canaryRun{t: t, c: newCluster(t, ready, int(replicas), revOld), in: in}
}

// step reconciles once and records what the plan says to record.
func (r *canaryRun) step() Plan {
	r.t.Helper()
	o := observe(r.c.input(r.in))
	if !r.scaled {
		newBounds(r.in).check(r.t, r.c, r.in)
	}
	p := r.c.reconcile(r.in)
	r.c.checkStep(r.in, o, p)
	if p.RecordSize {
		sized := p.SizedFor
		r.in.SizedFor = &sized
	}
	if p.Canary != nil {
		c := *r.in.Canary
		c.State = p.Canary.State
		r.in.Canary = &c
		r.seen = append(r.seen, p.Canary.State.Index)
		if floor := StableFloor(c.Steps, c.State.Index, r.in.Replicas); r.floor && r.c.activeOf(revOld) < int(floor) {
			r.t.Fatalf("at step %d: %d stable pods, below the floor %d its weight keeps", c.State.Index+1, r.c.activeOf(revOld), floor)
		}
	}
	return p
}

// until reconciles until done says the last plan got there, within the step
// budget (and the pauses' ticks).
func (r *canaryRun) until(what string, done func(Plan) bool) Plan {
	r.t.Helper()
	for range 2*stepBudget(r.in.Replicas) + 20 {
		if p := r.step(); done(p) {
			return p
		}
	}
	r.t.Fatalf("%s: not reached after %d steps (steps seen %v): %+v", what, r.c.step, r.seen,
		Count(r.c.pods, r.in.UpdateRevision, r.in.MinReadySeconds, r.c.now))
	return Plan{}
}

// atStep says a plan is at step index with the pods at the step's shares.
func (r *canaryRun) atStep(index int) func(Plan) bool {
	return func(p Plan) bool {
		held := r.in
		held.Canary, held.Partition = nil, p.Canary.Held
		return p.Canary != nil && p.Canary.State.Index == index && r.c.heldAt(held)
	}
}

// TestCanarySimulation runs the steps for many settings: 1 pod,
// a 10s pause that ends by itself, half, a pause held until promoted, all;
// never beyond replicas+maxSurge, never below replicas-maxUnavailable
// available, every step seen in order, none skipped.
func TestCanarySimulation(t *testing.T) {
	for _, replicas := range []int32{1, 3, 10, 25} {
		for _, f := range fences {
			for _, ready := range readinessPatterns[:3] {
				t.Run(fmt.Sprintf("replicas=%d/fence=%s/%s", replicas, f, ready.name), func(t *testing.T) {
					r := newCanaryRun(t, ready, f, replicas, e2eSteps)
					r.until("step 2, paused 10s", func(p Plan) bool { return p.Canary.State.Index == 1 })
					if n := r.c.activeOf(revNew); n != 1 {
						t.Fatalf("paused after step 1 with %d updated pods, want 1", n)
					}
					p := r.until("step 4, paused until promote", r.atStep(3))
					if want := int(replicas+1) / 2; r.c.activeOf(revNew) != want || p.Canary.Message != "step 4 of 5: paused until promote" {
						t.Fatalf("at %q: %d updated pods, want %d", p.Canary.Message, r.c.activeOf(revNew), want)
					}
					for range 10 {
						if p := r.step(); p.Canary.State.Index != 3 || p.Creates() > 0 || p.Removes() > 0 {
							t.Fatalf("the pause did not hold: %s at step %d", describe(p), p.Canary.State.Index+1)
						}
					}
					r.in = promoted(r.in, CanaryPromote{Revision: revNew, Index: 3})
					r.until("converged", func(Plan) bool { return r.c.converged(r.in) })
					r.step()
					assertStepsInOrder(t, r.seen, 5)
				})
			}
		}
	}
}

// assertStepsInOrder: the steps seen never go back and end past the last.
func assertStepsInOrder(t *testing.T, seen []int, n int) {
	t.Helper()
	for i := 1; i < len(seen); i++ {
		if seen[i] < seen[i-1] {
			t.Fatalf("steps went back: %v", seen)
		}
	}
	if len(seen) == 0 || seen[len(seen)-1] != n {
		t.Fatalf("steps seen %v, want them to end at %d (all done)", seen, n)
	}
}

// TestCanaryPromoteFullSimulation: promote --full during step 1 completes
// the rollout without stopping at any pause; a promote repeated at the
// next pause (stale) ends nothing.
func TestCanaryPromoteFullSimulation(t *testing.T) {
	for _, f := range fences {
		t.Run(f.String(), func(t *testing.T) {
			r := newCanaryRun(t, readinessPatterns[1], f, 10, e2eSteps)
			r.step()
			r.in = promoted(r.in, CanaryPromote{Revision: revNew, Full: true})
			r.until("converged", func(Plan) bool { return r.c.converged(r.in) })
			r.step()
			assertStepsInOrder(t, r.seen, 5)

			r = newCanaryRun(t, readinessPatterns[0], f, 10, "pause, 50%, pause, 100%")
			r.in = promoted(r.in, CanaryPromote{Revision: revNew, Index: 0})
			p := r.until("step 3, paused until promote", r.atStep(2))
			for range 5 {
				if p = r.step(); p.Canary.State.Index != 2 {
					t.Fatalf("a stale promote of step 1 ended step %d", p.Canary.State.Index)
				}
			}
		})
	}
}

// TestCanaryScaleSimulation scales a canary held at a pause after 50%:
// the percentage is recomputed for the new size (the fraction kept), a
// count step stays a count; each within the new size's bounds.
func TestCanaryScaleSimulation(t *testing.T) {
	quarter := intstr.FromString("25%")
	f := fence{quarter, quarter}
	for _, tc := range []struct {
		steps       string
		to          int32
		wantUpdated int
	}{
		{"50%, pause, 100%", 20, 10},
		{"50%, pause, 100%", 5, 3},
		{"3, pause, 100%", 20, 3},
		{"3, pause, 100%", 2, 2},
	} {
		t.Run(fmt.Sprintf("%s/10->%d", tc.steps, tc.to), func(t *testing.T) {
			r := newCanaryRun(t, readinessPatterns[1], f, 10, tc.steps)
			r.until("paused", r.atStep(1))
			next := scaledInput(t, f, tc.to)
			next.SizedFor, next.CurrentRevision, next.Revisions, next.MinReadySeconds, next.Canary = r.in.SizedFor, revOld, []string{revOld}, 0, r.in.Canary
			r.in, r.scaled = next, true
			r.until("paused again", r.atStep(1))
			if n := r.c.activeOf(revNew); n != tc.wantUpdated {
				t.Fatalf("%d updated pods after the scale, want %d", n, tc.wantUpdated)
			}
		})
	}
}

// TestCanaryAnalysisSimulation runs a canary under analysis whose verdict
// takes three reconciles of a step to pass it: every step (the timed pause
// too) holds until then, the steps are seen in order, none ends on a
// verdict of another step (checkCanary), and the rollout completes. (With
// one replica the first step moves the only pod: the steps after it hold
// nothing, but are still passed one by one.)
func TestCanaryAnalysisSimulation(t *testing.T) {
	for _, replicas := range []int32{1, 3, 10} {
		for _, f := range fences {
			t.Run(fmt.Sprintf("replicas=%d/fence=%s", replicas, f), func(t *testing.T) {
				r := newCanaryRun(t, readinessPatterns[0], f, replicas, "1, pause 10s, 50%, 100%")
				r.in.Analysis = &AnalysisGate{}
				analyzed, held := map[int]int{}, 0
				r.until("converged", func(p Plan) bool {
					if c := p.Canary; c != nil && c.Analyzing {
						held++
						if analyzed[c.State.Index]++; analyzed[c.State.Index] == 3 {
							r.in.Analysis = &AnalysisGate{Passed: c.State}
						}
					}
					return r.c.converged(r.in) && p.Canary != nil && p.Canary.State.Index == 4
				})
				assertStepsInOrder(t, r.seen, 4)
				if held == 0 {
					t.Fatal("no step held for its analysis")
				}
			})
		}
	}
}

// TestCanaryWeightSimulation runs the weight steps (2% to one pod,
// 10%, 50% to half) for many settings, promoting each pause: the stable
// side never below the floor its stated weight keeps (checked after every
// reconcile), one pod at the 2% and 10% pauses, half at the last, every
// step seen in order.
func TestCanaryWeightSimulation(t *testing.T) {
	for _, replicas := range []int32{2, 3, 10, 25} { // 1 holds (TestComputeCanaryWeights)
		for _, f := range fences {
			for _, ready := range readinessPatterns[:3] {
				t.Run(fmt.Sprintf("replicas=%d/fence=%s/%s", replicas, f, ready.name), func(t *testing.T) {
					r := newCanaryRun(t, ready, f, replicas, weightSteps)
					r.floor = true
					steps := r.in.Canary.Steps
					for _, pause := range []int{2, 4, 7} {
						p := r.until(fmt.Sprintf("step %d", pause+1), r.atStep(pause))
						// The size steps' pods: "1" at the 2% and 10% pauses, "50%" at the last.
						want := map[int]int32{2: 1, 4: 1, 7: (replicas + 1) / 2}[pause]
						if n := r.c.activeOf(revNew); n != int(want) {
							t.Fatalf("at %q: %d pods of the new revision, want %d", p.Canary.Message, n, want)
						}
						r.in = promoted(r.in, CanaryPromote{Revision: revNew, Index: pause})
					}
					r.until("converged", func(Plan) bool { return r.c.converged(r.in) })
					r.step()
					assertStepsInOrder(t, r.seen, len(steps))
				})
			}
		}
	}
}
