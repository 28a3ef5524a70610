package optin

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// Canary is a parsed CanaryStepsAnnotation with the controller's record of
// where the rollout is (CanaryStepAnnotation) and the last promote
// (CanaryPromoteAnnotation), each the zero value when absent.
type Canary struct {
	Steps   []CanaryStep
	State   CanaryState
	Promote CanaryPromote
}

// CanaryStep is one step of a canary: a size (Pause false) or a pause.
type CanaryStep struct {
	// Size is how many pods the step moves to the update revision: a count
	// or a percentage of spec.replicas, rounded up (Size.Pods).
	Size PodCount
	// Pause: the step waits, for Duration, or for a promote when Duration is 0.
	Pause    bool
	Duration time.Duration
}

// String is the step as the annotation spells it.
func (s CanaryStep) String() string {
	switch {
	case s.Pause && s.Duration > 0:
		return "pause " + s.Duration.String()
	case s.Pause:
		return "pause"
	}
	return s.Size.String()
}

// maxCanarySteps bounds a step list (a list this long is a mistake).
const maxCanarySteps = 100

// ParseCanarySteps parses a CanaryStepsAnnotation value: comma-separated
// steps, each a size ("<n>" or "<p>%" with p from 0 to 100), "pause", or
// "pause <duration>" (a positive Go duration). Sizes of the same kind
// (counts, percentages) must not decrease. The error says which step is
// wrong and why.
func ParseCanarySteps(v string) ([]CanaryStep, error) {
	if strings.TrimSpace(v) == "" {
		return nil, fmt.Errorf(`must list at least one step, e.g. "1, pause 30s, 25%%, pause, 100%%"`)
	}
	items := strings.Split(v, ",")
	if len(items) > maxCanarySteps {
		return nil, fmt.Errorf("must list at most %d steps, not %d", maxCanarySteps, len(items))
	}
	steps := make([]CanaryStep, 0, len(items))
	last := map[bool]int{} // the index of the last count and percentage step, plus one
	for i, item := range items {
		s, err := parseCanaryStep(strings.TrimSpace(item))
		if err != nil {
			return nil, fmt.Errorf("step %d %q: %w", i+1, strings.TrimSpace(item), err)
		}
		if !s.Pause {
			if j := last[s.Size.Percent]; j > 0 && steps[j-1].Size.Value > s.Size.Value {
				return nil, fmt.Errorf("step %d %q is smaller than step %d %q: sizes must not decrease", i+1, s, j, steps[j-1])
			}
			last[s.Size.Percent] = i + 1
		}
		steps = append(steps, s)
	}
	return steps, nil
}

func parseCanaryStep(item string) (CanaryStep, error) {
	if item == "pause" {
		return CanaryStep{Pause: true}, nil
	}
	if d, ok := strings.CutPrefix(item, "pause "); ok {
		dur, err := time.ParseDuration(strings.TrimSpace(d))
		if err != nil || dur <= 0 {
			return CanaryStep{}, fmt.Errorf(`a pause's duration must be positive, like "30s" or "5m"`)
		}
		return CanaryStep{Pause: true, Duration: dur}, nil
	}
	p, err := ParsePodCount(item)
	if err != nil {
		return CanaryStep{}, fmt.Errorf(`must be a pod count ("1"), a percentage from 0%% to 100%% ("25%%"), "pause" or "pause <duration>" ("pause 30s")`)
	}
	return CanaryStep{Size: p}, nil
}

// CanaryState is where a canary rollout is: the step under way (Index,
// from 0; len(steps) once every step is done) of the rollout to Revision,
// and when a timed pause at Index began (zero otherwise).
type CanaryState struct {
	Revision string
	Index    int
	PausedAt time.Time
}

// canaryStateWire is CanaryStepAnnotation's JSON: the step counts from 1.
type canaryStateWire struct {
	Revision string `json:"revision"`
	Step     int    `json:"step"`
	PausedAt string `json:"pausedAt,omitempty"`
}

// String is st as CanaryStepAnnotation holds it.
func (st CanaryState) String() string {
	w := canaryStateWire{Revision: st.Revision, Step: st.Index + 1}
	if !st.PausedAt.IsZero() {
		w.PausedAt = st.PausedAt.UTC().Format(time.RFC3339)
	}
	b, _ := json.Marshal(w) // strings and an int: cannot fail
	return string(b)
}

// ParseCanaryState parses a CanaryStepAnnotation value.
func ParseCanaryState(v string) (CanaryState, error) {
	var w canaryStateWire
	if err := json.Unmarshal([]byte(v), &w); err != nil || w.Revision == "" || w.Step < 1 {
		return CanaryState{}, fmt.Errorf(`must be written by the controller, like {"revision":"web-5d8f","step":2}`)
	}
	st := CanaryState{Revision: w.Revision, Index: w.Step - 1}
	if w.PausedAt != "" {
		t, err := time.Parse(time.RFC3339, w.PausedAt)
		if err != nil {
			return CanaryState{}, fmt.Errorf("pausedAt %q is not an RFC 3339 time", w.PausedAt)
		}
		st.PausedAt = t
	}
	return st, nil
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

// CanaryPromote is a parsed CanaryPromoteAnnotation: end the step Index of
// the rollout to Revision, or every remaining one (Full).
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

// ParseCanaryPromote parses a CanaryPromoteAnnotation value.
func ParseCanaryPromote(v string) (CanaryPromote, error) {
	const want = `must be "<revision>/<step>" or "<revision>/full", as 'kubectl mydeployment rollout promote' writes it`
	i := strings.LastIndex(v, "/")
	if i <= 0 {
		return CanaryPromote{}, fmt.Errorf("%s", want)
	}
	p := CanaryPromote{Revision: v[:i]}
	if v[i+1:] == "full" {
		p.Full = true
		return p, nil
	}
	n, err := strconv.Atoi(v[i+1:])
	if err != nil || n < 1 || v[i+1:] != strconv.Itoa(n) {
		return CanaryPromote{}, fmt.Errorf("%s", want)
	}
	p.Index = n - 1
	return p, nil
}

// Ends says p ends the step st is at: it names st's revision, and st's
// step or every step.
func (p CanaryPromote) Ends(st CanaryState) bool {
	return p.Revision != "" && p.Revision == st.Revision && (p.Full || p.Index == st.Index)
}

// parseCanary reads md's canary annotations: nil without
// CanaryStepsAnnotation. Each error names its annotation: a step list
// ParseCanarySteps refuses, steps with strategy Recreate or beside a
// partition, a record or promote that is not in the controller's or the
// plugin's form.
func parseCanary(md *appsv1beta1.MyDeployment) (*Canary, field.ErrorList) {
	var errs field.ErrorList
	c := &Canary{}
	if v, ok := md.Annotations[appsv1beta1.CanaryStepAnnotation]; ok {
		st, err := ParseCanaryState(v)
		if err != nil {
			errs = append(errs, field.Invalid(Path(appsv1beta1.CanaryStepAnnotation), v, err.Error()))
		}
		c.State = st
	}
	if v, ok := md.Annotations[appsv1beta1.CanaryPromoteAnnotation]; ok {
		p, err := ParseCanaryPromote(v)
		if err != nil {
			errs = append(errs, field.Invalid(Path(appsv1beta1.CanaryPromoteAnnotation), v, err.Error()))
		}
		c.Promote = p
	}
	v, ok := md.Annotations[appsv1beta1.CanaryStepsAnnotation]
	if !ok {
		return nil, errs
	}
	steps, err := ParseCanarySteps(v)
	path := Path(appsv1beta1.CanaryStepsAnnotation)
	switch _, partitioned := md.Annotations[appsv1beta1.PartitionAnnotation]; {
	case err != nil:
		errs = append(errs, field.Invalid(path, v, err.Error()))
	case md.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType:
		errs = append(errs, field.Forbidden(path,
			"canary steps need spec.strategy.type RollingUpdate: Recreate replaces every pod at once"))
	case partitioned:
		errs = append(errs, field.Forbidden(path,
			"canary steps cannot be set together with "+appsv1beta1.PartitionAnnotation+": the steps set the partition"))
	}
	if len(errs) > 0 {
		return nil, errs
	}
	c.Steps = steps
	return c, nil
}
