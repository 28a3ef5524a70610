package rollout

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
)

// canarySteps is the example list.
const canarySteps = "1, pause 30s, 25%, pause, 50%, pause 5m, 100%"

// parseSteps reads a step list as the annotation spells it, for the
// planner's tables: sizes, "pause", "pause <duration>" and "weight <p>%". The canary
// module's parse (internal/optin/canary), which imports this package, is
// the one that refuses lists; its tests hold what it refuses.
func parseSteps(v string) ([]CanaryStep, error) {
	var steps []CanaryStep
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		if item == "pause" {
			steps = append(steps, CanaryStep{Pause: true})
			continue
		}
		if w, ok := strings.CutPrefix(item, "weight "); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(w), "%"))
			if err != nil {
				return nil, err
			}
			steps = append(steps, CanaryStep{Weight: true, Percent: int32(n)})
			continue
		}
		if d, ok := strings.CutPrefix(item, "pause "); ok {
			dur, err := time.ParseDuration(strings.TrimSpace(d))
			if err != nil {
				return nil, err
			}
			steps = append(steps, CanaryStep{Pause: true, Duration: dur})
			continue
		}
		c, err := optin.ParsePodCount(item)
		if err != nil {
			return nil, fmt.Errorf("step %q: %w", item, err)
		}
		steps = append(steps, CanaryStep{Size: c})
	}
	return steps, nil
}

// stepped is a RollingUpdate of replicas from revOld to revNew under the
// canary steps, the record at step index of revNew (another rollout's
// when index is negative), maxSurge 1, maxUnavailable 0.
func stepped(t testing.TB, steps string, replicas int32, index int, ps ...[]*corev1.Pod) Input {
	t.Helper()
	list, err := parseSteps(steps)
	if err != nil {
		t.Fatal(err)
	}
	st := CanaryState{Revision: revNew, Index: index}
	if index < 0 {
		st = CanaryState{Revision: revOld, Index: 6}
	}
	return Input{Replicas: replicas, MaxSurge: 1, MaxUnavailable: 0, UpdateRevision: revNew,
		CurrentRevision: revOld, Revisions: []string{revOld}, Pods: join(ps...), Now: t0,
		Canary: &Canary{Steps: list, State: st}}
}

func promoted(in Input, p CanaryPromote) Input {
	c := *in.Canary
	c.Promote = p
	in.Canary = &c
	return in
}

func pausedSince(in Input, at time.Time) Input {
	c := *in.Canary
	c.State.PausedAt = at
	in.Canary = &c
	return in
}

func TestComputeCanary(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Input
		// want: the step index, whether it is recorded and new, held, pods created, the requeue.
		index           int
		record, isNew   bool
		held, create    int32
		requeue         time.Duration
		message         string
		wantNilCanary   bool
		wantPausedSince time.Time
	}{
		{name: "a new template starts at step 1: one pod of 10 moves", in: stepped(t, canarySteps, 10, -1, pods("old", revOld, 10)),
			index: 0, record: true, isNew: true, held: 9, create: 1, message: "step 1 of 7: 1"},
		{name: "step 1 waits for its pod to be available", in: stepped(t, canarySteps, 10, 0, pods("old", revOld, 9), pods("new", revNew, 1, notReady)),
			index: 0, held: 9, message: "step 1 of 7: 1"},
		{name: "step 1 done: the 30s pause begins now, nothing moves", in: stepped(t, canarySteps, 10, 0, pods("old", revOld, 9), pods("new", revNew, 1)),
			index: 1, record: true, isNew: true, held: 9, requeue: 30 * time.Second, wantPausedSince: t0,
			message: "step 2 of 7: paused 30s, until 2025-06-01T12:00:30Z"},
		{name: "the pause goes on", in: pausedSince(stepped(t, canarySteps, 10, 1, pods("old", revOld, 9), pods("new", revNew, 1)), t0.Add(-20*time.Second)),
			index: 1, held: 9, requeue: 10 * time.Second, wantPausedSince: t0.Add(-20 * time.Second)},
		{name: "the pause is over: step 3, 25% of 10 is 3 pods", in: pausedSince(stepped(t, canarySteps, 10, 1, pods("old", revOld, 9), pods("new", revNew, 1)), t0.Add(-30*time.Second)),
			index: 2, record: true, isNew: true, held: 7, create: 1, message: "step 3 of 7: 25%"},
		{name: "a bare pause holds", in: stepped(t, canarySteps, 10, 3, pods("old", revOld, 7), pods("new", revNew, 3)),
			index: 3, held: 7, message: "step 4 of 7: paused until promote"},
		{name: "a stale promote (step 2) does not end it", in: promoted(stepped(t, canarySteps, 10, 3, pods("old", revOld, 7), pods("new", revNew, 3)),
			CanaryPromote{Revision: revNew, Index: 1}), index: 3, held: 7},
		{name: "another rollout's promote does not end it", in: promoted(stepped(t, canarySteps, 10, 3, pods("old", revOld, 7), pods("new", revNew, 3)),
			CanaryPromote{Revision: revOld2, Index: 3}), index: 3, held: 7},
		{name: "promoted: step 5, 50%", in: promoted(stepped(t, canarySteps, 10, 3, pods("old", revOld, 7), pods("new", revNew, 3)),
			CanaryPromote{Revision: revNew, Index: 3}), index: 4, record: true, isNew: true, held: 5, create: 1},
		{name: "promoted in full: nothing held", in: promoted(stepped(t, canarySteps, 10, 3, pods("old", revOld, 7), pods("new", revNew, 3)),
			CanaryPromote{Revision: revNew, Full: true}), index: 7, record: true, isNew: true, held: 0, create: 1, message: "all 7 steps done"},
		{name: "a promote of a size step ends it before its pods are available", in: promoted(stepped(t, canarySteps, 10, 0, pods("old", revOld, 10)),
			CanaryPromote{Revision: revNew, Index: 0}), index: 1, record: true, isNew: true, held: 9, create: 1, wantPausedSince: t0,
			requeue: 30 * time.Second},
		{name: "scaled to 20 at 50%: 10 pods held, the fraction kept", in: stepped(t, canarySteps, 20, 5, pods("old", revOld, 5), pods("new", revNew, 5)),
			index: 5, held: 10, create: 10, wantPausedSince: t0, record: true, requeue: 5 * time.Minute},
		{name: "scaled to 20 at a count of 1: 19 held, a count stays a count", in: stepped(t, canarySteps, 20, 1, pods("old", revOld, 9), pods("new", revNew, 1)),
			index: 1, held: 19, create: 10, wantPausedSince: t0, record: true, requeue: 30 * time.Second},
		{name: "a pause first holds every pod", in: stepped(t, "pause, 100%", 4, -1, pods("old", revOld, 4)),
			index: 0, record: true, isNew: true, held: 4},
		{name: "no rollout: no canary", in: func() Input {
			in := stepped(t, canarySteps, 3, -1, pods("new", revNew, 3))
			in.CurrentRevision = revNew
			return in
		}(), wantNilCanary: true},
		{name: "complete at step 1 (one pod is all): the record says every step is done", in: func() Input {
			in := stepped(t, canarySteps, 1, 0, pods("new", revNew, 1))
			in.CurrentRevision = revNew
			return in
		}(), index: 7, record: true, isNew: true, message: "all 7 steps done"},
		{name: "spec.paused: no step ends", in: func() Input {
			in := stepped(t, canarySteps, 10, 0, pods("old", revOld, 9), pods("new", revNew, 1))
			in.Paused, in.SizedFor = true, &Size{Replicas: 10, MaxReplicas: 11}
			return in
		}(), index: 0, held: 9, create: 1}, // Deployment's paused scale towards replicas+maxSurge
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Compute(tc.in)
			checkPlan(t, tc.in, p)
			c := p.Canary
			if tc.wantNilCanary {
				if c != nil {
					t.Fatalf("canary %+v, want none", c)
				}
				return
			}
			if c == nil || c.State.Index != tc.index || c.Record != tc.record || c.NewStep != tc.isNew || c.Held != tc.held ||
				p.Creates() != tc.create || p.RequeueAfter != tc.requeue || !c.State.PausedAt.Equal(tc.wantPausedSince) {
				t.Fatalf("canary %+v, %s, requeue %v; want index %d record %v new %v held %d create %d requeue %v paused since %v",
					c, describe(p), p.RequeueAfter, tc.index, tc.record, tc.isNew, tc.held, tc.create, tc.requeue, tc.wantPausedSince)
			}
			if tc.message != "" && c.Message != tc.message {
				t.Fatalf("message %q, want %q", c.Message, tc.message)
			}
		})
	}
}

// checkCanary asserts the promises of a canary plan: the rollout it names
// is the update revision's; a step of the same rollout is never gone back
// to; a pause that waits for a promote ends only by a promote naming it
// (so a repeated or stale promote never skips two steps); what it records
// is what differs from the record; the held pods are the step's.
func checkCanary(t testing.TB, in Input, c *CanaryProgress) {
	t.Helper()
	rec, steps := in.Canary.State, in.Canary.Steps
	if c.State.Revision != in.UpdateRevision {
		t.Fatalf("canary of %q, not of the update revision %q", c.State.Revision, in.UpdateRevision)
	}
	from := 0
	if rec.Revision == in.UpdateRevision {
		from = rec.Index
		if c.State.Index < rec.Index {
			t.Fatalf("canary went back from step %d to %d", rec.Index+1, c.State.Index+1)
		}
	}
	promote := in.Canary.Promote
	complete := in.CurrentRevision == in.UpdateRevision // every pod got there: nothing left to wait for
	for i := from; i < min(c.State.Index, len(steps)) && !complete; i++ {
		if steps[i].Pause && steps[i].Duration == 0 && !(promote.Revision == in.UpdateRevision && (promote.Full || promote.Index == i)) {
			t.Fatalf("step %d (pause) ended without its promote (%s)", i+1, promote)
		}
	}
	for i := from; i < min(c.State.Index, len(steps)) && !complete && in.Analysis != nil; i++ {
		at := CanaryState{Revision: in.UpdateRevision, Index: i}
		if !in.Analysis.Ends(at) && !(promote.Revision == in.UpdateRevision && (promote.Full || promote.Index == i)) {
			t.Fatalf("step %d ended without its analysis passing (passed: %+v) or a promote", i+1, in.Analysis.Passed)
		}
	}
	moved := rec.Revision != c.State.Revision || rec.Index != c.State.Index
	if c.NewStep != moved || c.Record != (moved || !rec.PausedAt.Equal(c.State.PausedAt)) {
		t.Fatalf("canary record %+v for %+v: Record %v NewStep %v", rec, c.State, c.Record, c.NewStep)
	}
	if want := max(canaryHeld(steps, c.State.Index, max(in.Replicas, 0)), StableFloor(steps, c.State.Index, max(in.Replicas, 0))); c.Held != want || want < 0 {
		t.Fatalf("canary holds %d at step %d, want %d", c.Held, c.State.Index+1, want)
	}
}

func analysed(in Input, passed CanaryState) Input {
	in.Analysis = &AnalysisGate{Passed: passed}
	return in
}

// TestComputeCanaryAnalysis: with analysis, a step whose pods are there
// (or whose pause ran its time) ends only once the analysis passed that
// very step; a promote ends it anyway.
func TestComputeCanaryAnalysis(t *testing.T) {
	at := func(i int) CanaryState { return CanaryState{Revision: revNew, Index: i} }
	for _, tc := range []struct {
		name      string
		in        Input
		index     int
		analyzing bool
		create    int32
		message   string
	}{
		{name: "step 1's pod is available: it holds for its analysis",
			in:    analysed(stepped(t, canarySteps, 10, 0, pods("old", revOld, 9), pods("new", revNew, 1)), CanaryState{}),
			index: 0, analyzing: true, message: "step 1 of 7: 1, waiting for its analysis"},
		{name: "step 1 passed: the pause begins",
			in:    analysed(stepped(t, canarySteps, 10, 0, pods("old", revOld, 9), pods("new", revNew, 1)), at(0)),
			index: 1},
		{name: "a pass of another revision's step 1 ends nothing",
			in:    analysed(stepped(t, canarySteps, 10, 0, pods("old", revOld, 9), pods("new", revNew, 1)), CanaryState{Revision: revOld2}),
			index: 0, analyzing: true},
		{name: "a pass of step 1 does not end the timed pause after it",
			in:    analysed(pausedSince(stepped(t, canarySteps, 10, 1, pods("old", revOld, 9), pods("new", revNew, 1)), t0.Add(-time.Minute)), at(0)),
			index: 1, analyzing: true, message: "step 2 of 7: paused 30s, until 2025-06-01T11:59:30Z, waiting for its analysis"},
		{name: "the pause ran its time and passed: step 3 moves pods",
			in:    analysed(pausedSince(stepped(t, canarySteps, 10, 1, pods("old", revOld, 9), pods("new", revNew, 1)), t0.Add(-time.Minute)), at(1)),
			index: 2, create: 1},
		{name: "the step's pods are not there yet: waiting for them, not for the analysis",
			in:    analysed(stepped(t, canarySteps, 10, 2, pods("old", revOld, 9), pods("new", revNew, 1)), at(2)),
			index: 2, create: 1},
		{name: "a promote ends a step its analysis did not pass",
			in: promoted(analysed(stepped(t, canarySteps, 10, 0, pods("old", revOld, 9), pods("new", revNew, 1)), CanaryState{}),
				CanaryPromote{Revision: revNew, Index: 0}),
			index: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Compute(tc.in)
			checkPlan(t, tc.in, p)
			c := p.Canary
			if c == nil || c.State.Index != tc.index || c.Analyzing != tc.analyzing || p.Creates() != tc.create {
				t.Fatalf("canary %+v, %s; want index %d analyzing %v create %d", c, describe(p), tc.index, tc.analyzing, tc.create)
			}
			if tc.message != "" && c.Message != tc.message {
				t.Fatalf("message %q, want %q", c.Message, tc.message)
			}
		})
	}
}

func TestCanaryDescribe(t *testing.T) {
	steps, err := parseSteps("1, pause 30s, 25%, pause")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 27, 22, 1, 10, 0, time.UTC)
	for _, tc := range []struct {
		st   CanaryState
		want string
	}{
		{CanaryState{Index: 0}, "step 1 of 4: 1"},
		{CanaryState{Index: 1, PausedAt: at}, "step 2 of 4: paused 30s, until 2026-11-27T22:01:40Z"},
		{CanaryState{Index: 3}, "step 4 of 4: paused until promote"},
		{CanaryState{Index: 4}, "all 4 steps done"},
	} {
		if got := tc.st.Describe(steps); got != tc.want {
			t.Fatalf("%+v: %q, want %q", tc.st, got, tc.want)
		}
	}
}

// weightSteps are the weight steps: 2% to one pod, 10%, then 50%
// to half the pods.
const weightSteps = "weight 2%, 1, pause, weight 10%, pause, weight 50%, 50%, pause"

func TestStatedWeightAndStableFloor(t *testing.T) {
	steps, err := parseSteps(weightSteps)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		index       int
		replicas    int32
		stated      int32
		floor, pods int32
	}{
		{index: 0, replicas: 10, stated: 2, floor: 9, pods: 1},
		{index: 2, replicas: 10, stated: 2, floor: 9, pods: 1},
		{index: 3, replicas: 10, stated: 10, floor: 9, pods: 1},
		{index: 5, replicas: 10, stated: 50, floor: 5, pods: 5},
		{index: 7, replicas: 10, stated: 50, floor: 5, pods: 5},
		{index: 8, replicas: 10, stated: 50, floor: 0, pods: 5}, // every step done: nothing held
		{index: 0, replicas: 100, stated: 2, floor: 98, pods: 2},
		{index: 0, replicas: 1, stated: 2, floor: 1, pods: 0}, // one replica: no canary pod at any weight below 100%
		{index: 5, replicas: 3, stated: 50, floor: 1, pods: 2},
		{index: 0, replicas: 0, stated: 2, floor: 0, pods: 0},
	} {
		stated, ok := StatedWeight(steps, tc.index)
		floor, pods := StableFloor(steps, tc.index, tc.replicas), WeightPods(stated, tc.replicas)
		if !ok || stated != tc.stated || floor != tc.floor || pods != tc.pods {
			t.Errorf("step %d of %d replicas: stated %d (%v), floor %d, pods %d; want %d, %d, %d",
				tc.index+1, tc.replicas, stated, ok, floor, pods, tc.stated, tc.floor, tc.pods)
		}
	}
	before, _ := parseSteps("pause, weight 5%")
	if stated, ok := StatedWeight(before, 0); !ok || stated != 0 || StableFloor(before, 0, 10) != 10 {
		t.Errorf("before the first weight step: stated %d (%v), floor %d; want 0, every pod", stated, ok, StableFloor(before, 0, 10))
	}
	plain, _ := parseSteps(canarySteps)
	if _, ok := StatedWeight(plain, 2); ok || StableFloor(plain, 2, 10) != 0 {
		t.Errorf("steps without a weight state none and hold no floor")
	}
}

func TestComputeCanaryWeights(t *testing.T) {
	for _, tc := range []struct {
		name         string
		in           Input
		index        int
		held, create int32
		weightHeld   bool
		message      string
	}{
		{name: "a weight step ends at once: step 2 moves one pod, the stable side keeps 9 for its 98%",
			in: stepped(t, weightSteps, 10, -1, pods("old", revOld, 10)), index: 1, held: 9, create: 1, message: "step 2 of 8: 1"},
		{name: "the pause after it holds the pod",
			in: stepped(t, weightSteps, 10, 2, pods("old", revOld, 9), pods("new", revNew, 1)), index: 2, held: 9},
		{name: "weight 10% promoted past its pause: still one pod, 9 stable for 90%",
			in:    promoted(stepped(t, weightSteps, 10, 2, pods("old", revOld, 9), pods("new", revNew, 1)), CanaryPromote{Revision: revNew, Index: 2}),
			index: 4, held: 9},
		{name: "weight 50% then 50%: five pods",
			in:    promoted(stepped(t, weightSteps, 10, 4, pods("old", revOld, 9), pods("new", revNew, 1)), CanaryPromote{Revision: revNew, Index: 4}),
			index: 6, held: 5, create: 1},
		{name: "a count beyond the weight's pods (scaled from 10 to 4): held by the weight",
			in:    stepped(t, "weight 10%, 1, pause, weight 20%, 2, pause", 4, 4, pods("old", revOld, 3), pods("new", revNew, 1)),
			index: 4, held: 3, weightHeld: true,
			message: "step 5 of 6: 2, held by the weight: the stable side carries 80% and keeps 3 of 4 pods"},
		{name: "one replica: its pod stays stable while it carries 98%",
			in: stepped(t, weightSteps, 1, -1, pods("old", revOld, 1)), index: 1, held: 1, weightHeld: true,
			message: "step 2 of 8: 1, held by the weight: the stable side carries 98% and keeps 1 of 1 pods"},
		{name: "a pause before the first weight holds every pod",
			in: stepped(t, "pause, weight 10%, 10%", 10, -1, pods("old", revOld, 10)), index: 0, held: 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Compute(tc.in)
			checkPlan(t, tc.in, p)
			c := p.Canary
			if c == nil || c.State.Index != tc.index || c.Held != tc.held || p.Creates() != tc.create || c.WeightHeld != tc.weightHeld {
				t.Fatalf("canary %+v, %s; want index %d held %d create %d weight held %v", c, describe(p), tc.index, tc.held, tc.create, tc.weightHeld)
			}
			if tc.message != "" && c.Message != tc.message {
				t.Fatalf("message %q, want %q", c.Message, tc.message)
			}
		})
	}
}
