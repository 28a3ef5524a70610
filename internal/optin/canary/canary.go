// Package canary is the canary opt-in (CanaryStepsAnnotation): a
// RollingUpdate moves its pods step by step, each step a size (a count or
// a percentage of spec.replicas) or a pause, timed or until `kubectl
// mydeployment rollout promote` (CanaryPromoteAnnotation). The controller
// records the step under way (CanaryStepAnnotation). The module parses the
// three annotations into the planner's input (rollout.Canary; the steps
// themselves are the planner's, internal/rollout/canary.go), and reads the
// step record for the metrics and the Application's traffic.
package canary

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
)

// Name is the module's name in an optin.Set.
const Name = "canary"

// Module is the canary module.
var Module optin.Module = module{}

type module struct{}

func (module) Name() string { return Name }

func (module) Keys() []string {
	return []string{appsv1beta1.CanaryStepsAnnotation, appsv1beta1.CanaryStepAnnotation, appsv1beta1.CanaryPromoteAnnotation}
}

// Parse reads md's canary annotations: nil without CanaryStepsAnnotation.
// Each error names its annotation: a step record or a promote that is not
// in the controller's or the plugin's form (reported with or without
// steps), a step list ParseSteps refuses, steps with strategy Recreate or
// beside a partition. With any error there is no Spec.
func (module) Parse(md *appsv1beta1.MyDeployment) (optin.Spec, field.ErrorList) {
	var errs field.ErrorList
	c := &Canary{}
	if v, ok := md.Annotations[appsv1beta1.CanaryStepAnnotation]; ok {
		st, err := ParseState(v)
		if err != nil {
			errs = append(errs, field.Invalid(optin.Path(appsv1beta1.CanaryStepAnnotation), v, err.Error()))
		}
		c.State = st
	}
	if v, ok := md.Annotations[appsv1beta1.CanaryPromoteAnnotation]; ok {
		p, err := ParsePromote(v)
		if err != nil {
			errs = append(errs, field.Invalid(optin.Path(appsv1beta1.CanaryPromoteAnnotation), v, err.Error()))
		}
		c.Promote = p
	}
	v, ok := md.Annotations[appsv1beta1.CanaryStepsAnnotation]
	if !ok {
		return nil, errs
	}
	steps, err := ParseSteps(v)
	path := optin.Path(appsv1beta1.CanaryStepsAnnotation)
	switch _, partitioned := md.Annotations[appsv1beta1.PartitionAnnotation]; {
	case err != nil:
		errs = append(errs, field.Invalid(path, v, err.Error()))
	case md.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType:
		errs = append(errs, field.Forbidden(path,
			"canary steps need spec.strategy.type RollingUpdate: Recreate replaces every pod at once"))
	case partitioned:
		errs = append(errs, field.Forbidden(path,
			"canary steps cannot be set together with "+appsv1beta1.PartitionAnnotation+": the steps set the partition"))
	case HasWeights(steps) && !ownedByApplication(md):
		errs = append(errs, field.Forbidden(path,
			"weight steps need an Application with spec.route: they state its route's weight, and this MyDeployment is no Application's"))
	}
	if len(errs) > 0 {
		return nil, errs
	}
	c.Steps = steps
	return c, nil
}

// Canary is the Spec of an object with canary steps: the planner's canary
// input, as parsed.
type Canary struct {
	rollout.Canary
}

// Of is the canary s opts into; nil without one (or with an annotation
// Parse refuses).
func Of(s optin.Set) *Canary {
	c, _ := optin.Get[*Canary](s, Name)
	return c
}

// Module implements optin.Spec.
func (*Canary) Module() string { return Name }

// PlanInput implements rollout.Planner: the planner steps the rollout
// through c (rollout/canary.go).
func (c *Canary) PlanInput(in *rollout.Input) {
	in.Canary = &c.Canary
}

// RolloutCanary is c as the planner reads it: its steps, the step record
// and the promote (the plugin's promote, status and status column read it).
func (c *Canary) RolloutCanary() *rollout.Canary { return &c.Canary }

// Step implements optin.Stepper: the step the record names, while it is
// one of the steps (the analysis measures it).
func (c *Canary) Step() (revision string, index int, ok bool) {
	st := c.State
	if st.Revision == "" || st.Index >= len(c.Steps) {
		return "", 0, false
	}
	return st.Revision, st.Index, true
}

var (
	_ rollout.Planner = (*Canary)(nil)
	_ optin.Stepper   = (*Canary)(nil)
)

// HasWeights says steps have a weight step.
func HasWeights(steps []rollout.CanaryStep) bool {
	_, ok := rollout.StatedWeight(steps, 0)
	return ok
}

// ownedByApplication: md's controller is an Application.
func ownedByApplication(md *appsv1beta1.MyDeployment) bool {
	ref := metav1.GetControllerOf(md)
	return ref != nil && ref.Kind == "Application" && ref.APIVersion == appsv1beta1.GroupVersion.String()
}

// maxSteps bounds a step list (a list this long is a mistake).
const maxSteps = 100

// ParseSteps parses a CanaryStepsAnnotation value: comma-separated
// steps, each a size ("<n>" or "<p>%" with p from 0 to 100), "pause",
// "pause <duration>" (a positive Go duration), or "weight <p>%". Sizes of
// the same kind (counts, percentages) must not decrease, nor weights. In a
// list with a weight step the pods follow the weight (rollout.StableFloor):
// no size step before the first weight step, and no percentage beyond the
// weight stated before it. The error says which step is wrong and why.
func ParseSteps(v string) ([]rollout.CanaryStep, error) {
	if strings.TrimSpace(v) == "" {
		return nil, fmt.Errorf(`must list at least one step, e.g. "1, pause 30s, 25%%, pause, 100%%"`)
	}
	items := strings.Split(v, ",")
	if len(items) > maxSteps {
		return nil, fmt.Errorf("must list at most %d steps, not %d", maxSteps, len(items))
	}
	steps := make([]rollout.CanaryStep, 0, len(items))
	last := map[bool]int{} // the index of the last count and percentage step, plus one
	for i, item := range items {
		s, err := parseStep(strings.TrimSpace(item))
		if err != nil {
			return nil, fmt.Errorf("step %d %q: %w", i+1, strings.TrimSpace(item), err)
		}
		if s.IsSize() {
			if j := last[s.Size.Percent]; j > 0 && steps[j-1].Size.Value > s.Size.Value {
				return nil, fmt.Errorf("step %d %q is smaller than step %d %q: sizes must not decrease", i+1, s, j, steps[j-1])
			}
			last[s.Size.Percent] = i + 1
		}
		steps = append(steps, s)
	}
	if err := weightsFirst(steps); err != nil {
		return nil, err
	}
	return steps, nil
}

// weightsFirst checks that in steps with a weight step the pods follow
// the weight: weights do not decrease, no size step comes before the
// first weight step, and no percentage exceeds the weight stated before
// it. A count beyond the weight's pods depends on spec.replicas, which a
// scale changes: the rollout holds there (rollout.CanaryProgress.WeightHeld).
func weightsFirst(steps []rollout.CanaryStep) error {
	if !HasWeights(steps) {
		return nil
	}
	stated, at := int32(-1), 0 // the weight in force and its step, from 1
	for i, s := range steps {
		switch {
		case s.Weight && s.Percent < stated:
			return fmt.Errorf("step %d %q is below step %d %q: weights must not decrease", i+1, s, at, steps[at-1])
		case s.Weight:
			stated, at = s.Percent, i+1
		case s.Pause:
		case stated < 0:
			return fmt.Errorf("step %d %q comes before any weight step: its pods would get no traffic while the "+
				"stable side keeps every pod; state a weight first (\"weight 10%%, %s\")", i+1, s, s)
		case s.Size.Percent && s.Size.Value > stated:
			return fmt.Errorf("step %d %q exceeds the weight stated at step %d (%d%%): the stable side keeps its "+
				"pods for its traffic; state a weight of at least %d%% before it (the rollout completes after the last step anyway)",
				i+1, s, at, stated, s.Size.Value)
		}
	}
	return nil
}

func parseStep(item string) (rollout.CanaryStep, error) {
	if w, ok := strings.CutPrefix(item, "weight "); ok {
		w = strings.TrimSpace(w)
		n, err := strconv.Atoi(strings.TrimSuffix(w, "%"))
		if err != nil || !strings.HasSuffix(w, "%") || n < 0 || n > 100 || w != strconv.Itoa(n)+"%" {
			return rollout.CanaryStep{}, fmt.Errorf(`a weight must be a percentage from 0%% to 100%%, like "weight 5%%"`)
		}
		return rollout.CanaryStep{Weight: true, Percent: int32(n)}, nil
	}
	if item == "pause" {
		return rollout.CanaryStep{Pause: true}, nil
	}
	if d, ok := strings.CutPrefix(item, "pause "); ok {
		dur, err := time.ParseDuration(strings.TrimSpace(d))
		if err != nil || dur <= 0 {
			return rollout.CanaryStep{}, fmt.Errorf(`a pause's duration must be positive, like "30s" or "5m"`)
		}
		return rollout.CanaryStep{Pause: true, Duration: dur}, nil
	}
	p, err := optin.ParsePodCount(item)
	if err != nil {
		return rollout.CanaryStep{}, fmt.Errorf(`must be a pod count ("1"), a percentage from 0%% to 100%% ("25%%"), "pause" or "pause <duration>" ("pause 30s")`)
	}
	return rollout.CanaryStep{Size: p}, nil
}

// ParseState parses a CanaryStepAnnotation value, as
// rollout.CanaryState.String writes it.
func ParseState(v string) (rollout.CanaryState, error) {
	var w rollout.CanaryStateRecord
	if err := json.Unmarshal([]byte(v), &w); err != nil || w.Revision == "" || w.Step < 1 {
		return rollout.CanaryState{}, fmt.Errorf(`must be written by the controller, like {"revision":"web-5d8f","step":2}`)
	}
	st := rollout.CanaryState{Revision: w.Revision, Index: w.Step - 1}
	if w.PausedAt != "" {
		t, err := time.Parse(time.RFC3339, w.PausedAt)
		if err != nil {
			return rollout.CanaryState{}, fmt.Errorf("pausedAt %q is not an RFC 3339 time", w.PausedAt)
		}
		st.PausedAt = t
	}
	return st, nil
}

// Recorded is md's canary step record (CanaryStepAnnotation): where the
// canary rollout is, as the controller last wrote it; nil when absent or
// unreadable (Parse reports an unreadable one, the one record a user may
// write by hand). The metrics and the Application's traffic read it
// beside ParseSteps, whatever else md's canary annotations say.
func Recorded(md *appsv1beta1.MyDeployment) *rollout.CanaryState {
	if md == nil {
		return nil
	}
	v, ok := md.Annotations[appsv1beta1.CanaryStepAnnotation]
	if !ok {
		return nil
	}
	st, err := ParseState(v)
	if err != nil {
		return nil
	}
	return &st
}

// ParsePromote parses a CanaryPromoteAnnotation value, as
// rollout.CanaryPromote.String writes it.
func ParsePromote(v string) (rollout.CanaryPromote, error) {
	const want = `must be "<revision>/<step>" or "<revision>/full", as 'kubectl mydeployment rollout promote' writes it`
	i := strings.LastIndex(v, "/")
	if i <= 0 {
		return rollout.CanaryPromote{}, fmt.Errorf("%s", want)
	}
	p := rollout.CanaryPromote{Revision: v[:i]}
	if v[i+1:] == "full" {
		p.Full = true
		return p, nil
	}
	n, err := strconv.Atoi(v[i+1:])
	if err != nil || n < 1 || v[i+1:] != strconv.Itoa(n) {
		return rollout.CanaryPromote{}, fmt.Errorf("%s", want)
	}
	p.Index = n - 1
	return p, nil
}
