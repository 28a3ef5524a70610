package rollout

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Canary is the planner's canary input (Input.Canary): the step list
// (CanaryStepsAnnotation), the controller's record of where the rollout
// is (CanaryStepAnnotation) and the last promote (CanaryPromoteAnnotation),
// each the zero value when absent. The canary module
// (internal/optin/canary) parses the annotations into it.
type Canary struct {
	Steps   []CanaryStep
	State   CanaryState
	Promote CanaryPromote
}

// CanaryStep is one step of a canary: a size (Pause and Weight false), a
// pause or a weight.
type CanaryStep struct {
	// Size is how many pods the step moves to the update revision: a count
	// or a percentage of spec.replicas, rounded up (Size.Pods).
	Size PodCount
	// Pause: the step waits, for Duration, or for a promote when Duration is 0.
	Pause    bool
	Duration time.Duration
	// Weight: a weight step ("weight N%"): from it on the route's canary
	// weight is stated as Percent (see StatedWeight); it ends at once.
	Weight  bool
	Percent int32
}

// IsSize says s is a size step.
func (s CanaryStep) IsSize() bool { return !s.Pause && !s.Weight }

// String is the step as the annotation spells it.
func (s CanaryStep) String() string {
	switch {
	case s.Weight:
		return fmt.Sprintf("weight %d%%", s.Percent)
	case s.Pause && s.Duration > 0:
		return "pause " + s.Duration.String()
	case s.Pause:
		return "pause"
	}
	return s.Size.String()
}

// CanaryState is where a canary rollout is: the step under way (Index,
// from 0; len(steps) once every step is done) of the rollout to Revision,
// and when a timed pause at Index began (zero otherwise).
type CanaryState struct {
	Revision string
	Index    int
	PausedAt time.Time
}

// CanaryStateRecord is CanaryStepAnnotation's JSON: the step counts from
// 1. CanaryState.String writes it; the canary module reads it.
type CanaryStateRecord struct {
	Revision string `json:"revision"`
	Step     int    `json:"step"`
	PausedAt string `json:"pausedAt,omitempty"`
}

// String is st as CanaryStepAnnotation holds it.
func (st CanaryState) String() string {
	w := CanaryStateRecord{Revision: st.Revision, Step: st.Index + 1}
	if !st.PausedAt.IsZero() {
		w.PausedAt = st.PausedAt.UTC().Format(time.RFC3339)
	}
	b, _ := json.Marshal(w) // strings and an int: cannot fail
	return string(b)
}

// Describe says where st is in steps, as the Progressing condition and the
// plugin show it: "step 3 of 7: 25%", "step 2 of 7: paused 30s, until
// 2026-11-27T22:01:40Z", "step 4 of 7: paused until promote", "all 7
// steps done".
func (st CanaryState) Describe(steps []CanaryStep) string {
	n := len(steps)
	if st.Index >= n {
		return fmt.Sprintf("all %d steps done", n)
	}
	at := fmt.Sprintf("step %d of %d: ", st.Index+1, n)
	switch s := steps[st.Index]; {
	case s.Pause && s.Duration == 0:
		return at + "paused until promote"
	case s.Pause && st.PausedAt.IsZero():
		return at + "pause " + s.Duration.String()
	case s.Pause:
		return at + "paused " + s.Duration.String() + ", until " + st.PausedAt.Add(s.Duration).UTC().Format(time.RFC3339)
	default:
		return at + s.String()
	}
}

// CanaryPromote is a promote (CanaryPromoteAnnotation): end the step Index
// of the rollout to Revision, or every remaining one (Full).
type CanaryPromote struct {
	Revision string
	Index    int
	Full     bool
}

// String is p as CanaryPromoteAnnotation holds it: "<revision>/<step>"
// (the step counts from 1) or "<revision>/full".
func (p CanaryPromote) String() string {
	if p.Full {
		return p.Revision + "/full"
	}
	return p.Revision + "/" + strconv.Itoa(p.Index+1)
}

// Ends says p ends the step st is at: it names st's revision, and st's
// step or every step.
func (p CanaryPromote) Ends(st CanaryState) bool {
	return p.Revision != "" && p.Revision == st.Revision && (p.Full || p.Index == st.Index)
}

// Canary steps (RollingUpdate, Input.Canary set, CurrentRevision neither
// empty nor UpdateRevision) are a partition the planner lowers step by
// step: at a size step of S pods (a count, or a percentage of Replicas
// rounded up, recomputed when Replicas change; a count stays a count, at
// most Replicas) the rolling step holds Replicas-S pods on the current
// revision, as partition.go holds them, within maxSurge and
// maxUnavailable. The step ends once S pods of the update revision that are
// not labelled specified-delete are available (minReadySeconds included). A
// pause holds what the last size step before it held (every pod when there
// is none): "pause <d>" ends d after it began, "pause" when promoted. A
// promote (Input.Canary.Promote) ends the step it names of the rollout it
// names, whatever its kind; "full" ends every remaining step. Once every
// step is done nothing is held and the rollout completes; once it is
// complete (CurrentRevision is UpdateRevision) the record says every step
// is done, whichever step it named. A new update revision starts at the
// first step. While paused (spec.paused) no step ends. Several steps may
// end in one plan (a size already reached, a pause promoted); the plan
// then takes the pods towards the step it is at.
//
// Weight steps ("weight N%") state the route's canary weight from them on
// (StatedWeight; the Application writes the route, capped by the canary's
// Ready pods). A list with a weight step keeps the stable side at least
// StableFloor pods at every step, one pod's share at most below its
// weight, as the larger of two partitions: before the first weight step
// (stated 0) every pod is held, and a size step beyond the weight's pods
// (WeightPods) cannot end; it holds there (CanaryProgress.WeightHeld).
// A weight step itself ends at once, with no analysis.
//
// With analysis (Input.Analysis), a size step whose pods are available, or
// a timed pause that has run its time, ends only if the analysis passed
// that very step (AnalysisGate.Ends); until then the rollout holds there
// (CanaryProgress.Analyzing). A promote ends a step whatever the analysis
// says, as it ends a pause.

// CanaryProgress is where a canary rollout is once a plan is carried out.
type CanaryProgress struct {
	// State is the step under way: the caller records it
	// (CanaryStepAnnotation) before it carries out the plan when Record
	// says it differs from Input.Canary.State, since the pods move
	// towards it.
	State  CanaryState
	Record bool
	// NewStep says State names a step the record did not (its event).
	NewStep bool
	// Paused says State is at a pause step.
	Paused bool
	// Held is the pods the step holds on the current revision (the
	// rolling step's partition); Message is State described
	// (CanaryState.Describe).
	Held    int32
	Message string
	// Analyzing says State's step is done but for its analysis
	// (Input.Analysis): the rollout holds there until the analysis passes.
	Analyzing bool
	// WeightHeld says State's step is a size step the stated weight does
	// not let through (StableFloor): it holds there until a scale lets it.
	WeightHeld bool
	// wait, when positive, is when the timed pause under way ends.
	wait time.Duration
}

// AnalysisGate is what the planner reads of a canary analysis: the step
// (of the rollout to a revision) whose analysis passed, if any. The
// measurements are the caller's (internal/optin/analysis); a failed analysis
// reaches the planner as Input.Aborted.
type AnalysisGate struct {
	// Passed names the step whose analysis passed; zero when none has.
	Passed CanaryState
}

// Ends says g lets the step st is at end: nil (no analysis) always does,
// otherwise only a pass of that step of that revision.
func (g *AnalysisGate) Ends(st CanaryState) bool {
	return g == nil || g.Passed.Revision != "" && g.Passed.Revision == st.Revision && g.Passed.Index == st.Index
}

// canaryStep is where the canary rollout of in is, given the pods of s
// (classified, not yet held): nil when no canary rollout is under way.
func (s podSet) canaryStep(in Input) *CanaryProgress {
	c := in.Canary
	replicas := max(in.Replicas, 0)
	switch {
	case c == nil || in.Strategy == Recreate || in.CurrentRevision == "":
		return nil
	case in.CurrentRevision == in.UpdateRevision:
		if c.State.Revision == in.UpdateRevision && c.State.Index < len(c.Steps) {
			// Every pod got there (a step of all pods, or a size that
			// rounds up to all): the record says so.
			return canaryProgress(c, CanaryState{Revision: c.State.Revision, Index: len(c.Steps)}, replicas, 0)
		}
		return nil
	}
	st := c.State
	if st.Revision != in.UpdateRevision || st.Index < 0 {
		st = CanaryState{Revision: in.UpdateRevision} // a new template starts at the first step
	}
	_, keep := s.splitDoomed(s.updated)
	available := int32(s.available(keep))
	var wait time.Duration
	for !in.Paused && st.Index < len(c.Steps) {
		step := c.Steps[st.Index]
		switch {
		case c.Promote.Ends(st) && c.Promote.Full:
			st = CanaryState{Revision: st.Revision, Index: len(c.Steps)}
			continue
		case c.Promote.Ends(st):
		case step.Weight:
		case step.IsSize() && available < step.Size.Pods(replicas):
			p := canaryProgress(c, st, replicas, 0)
			if step.Size.Pods(replicas) > replicas-p.Held { // only the floor holds more than the step's size
				stated, _ := StatedWeight(c.Steps, st.Index)
				p.WeightHeld = true
				p.Message += fmt.Sprintf(", held by the weight: the stable side carries %d%% and keeps %d of %d pods",
					100-stated, p.Held, replicas)
			}
			return p
		case step.Pause && step.Duration == 0:
			return canaryProgress(c, st, replicas, 0)
		case step.Pause:
			if st.PausedAt.IsZero() {
				st.PausedAt = in.Now.UTC().Truncate(time.Second) // as the record keeps it
			}
			if wait = st.PausedAt.Add(step.Duration).Sub(in.Now); wait > 0 {
				return canaryProgress(c, st, replicas, wait)
			}
			fallthrough
		default:
			if !in.Analysis.Ends(st) {
				p := canaryProgress(c, st, replicas, 0)
				p.Analyzing, p.Message = true, p.Message+", waiting for its analysis"
				return p
			}
		}
		st = CanaryState{Revision: st.Revision, Index: st.Index + 1}
	}
	return canaryProgress(c, st, replicas, 0)
}

// canaryProgress is the progress of a rollout at st, compared with the record.
func canaryProgress(c *Canary, st CanaryState, replicas int32, wait time.Duration) *CanaryProgress {
	rec := c.State
	newStep := rec.Revision != st.Revision || rec.Index != st.Index
	return &CanaryProgress{
		State:   st,
		Record:  newStep || !rec.PausedAt.Equal(st.PausedAt),
		NewStep: newStep,
		Paused:  st.Index < len(c.Steps) && c.Steps[st.Index].Pause,
		Held:    max(canaryHeld(c.Steps, st.Index, replicas), StableFloor(c.Steps, st.Index, replicas)),
		Message: st.Describe(c.Steps),
		wait:    wait,
	}
}

// canaryHeld is what step i holds of replicas: replicas less the size of
// the last size step up to i, all of them before any, none once every
// step is done.
func canaryHeld(steps []CanaryStep, i int, replicas int32) int32 {
	if i >= len(steps) {
		return 0
	}
	for ; i >= 0; i-- {
		if steps[i].IsSize() {
			return replicas - steps[i].Size.Pods(replicas)
		}
	}
	return replicas
}

// StatedWeight is the route's canary weight stated at step i of steps,
// in percent: the last weight step's up to i, 0 before the first; ok is
// false when steps have no weight step (the weight is then the Ready
// pods' share, internal/application).
func StatedWeight(steps []CanaryStep, i int) (percent int32, ok bool) {
	if !slices.ContainsFunc(steps, func(s CanaryStep) bool { return s.Weight }) {
		return 0, false
	}
	for i = min(i, len(steps)-1); i >= 0; i-- {
		if steps[i].Weight {
			return steps[i].Percent, true
		}
	}
	return 0, true
}

// StableFloor is how many pods the stable side keeps at step i of steps
// of replicas (stableFloor); 0 without weight steps, or once every step
// is done.
func StableFloor(steps []CanaryStep, i int, replicas int32) int32 {
	stated, ok := StatedWeight(steps, i)
	if !ok || i >= len(steps) {
		return 0
	}
	return stableFloor(stated, replicas)
}

// stableFloor is floor(replicas x (100 - stated) / 100), so the stable
// side never carries a pod's share more than its pods, and at least one
// pod while it carries anything (1 replica at 98%: the one pod stays).
func stableFloor(stated, replicas int32) int32 {
	r := int64(max(replicas, 0))
	floor := int32(r * int64(100-stated) / 100)
	if stated < 100 && r > 0 {
		floor = max(floor, 1)
	}
	return floor
}

// WeightPods is how many pods of replicas the canary may have at stated
// weight percent: replicas less the stable side's floor.
func WeightPods(stated, replicas int32) int32 {
	return max(replicas, 0) - stableFloor(stated, replicas)
}
