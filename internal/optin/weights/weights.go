// Package weights is what weight steps ("weight N%" in canary-steps, the
// canary module's grammar) need beyond the steps themselves. The route's
// weight is the Application's to write (internal/application's traffic);
// the MyDeployment's rollout depends on it twice, so the Application
// records what its HTTPRoute carries on its MyDeployment
// (RouteWeightAnnotation, a Record) and this module reads it back:
//
//   - on abort, the aborted revision's pods go only once the record says
//     the route sends them nothing, and a drain delay after that
//     (AbortDrainDelayAnnotation; rollout.Input.AbortDrain), as Argo
//     Rollouts' abortScaleDownDelaySeconds: traffic leaves before pods do;
//   - a step's analysis measures only once the route carries the step's
//     stated weight (RouteWaits): it measures at the weight it judges.
//
// The module also owns the headroom (HeadroomAnnotation): how much more
// than an equal share of the traffic a canary pod may take, by which the
// Application multiplies the canary's Ready share before it caps the
// stated weight (Headroom).
package weights

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/canary"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
)

// Name is the module's name in an optin.Set.
const Name = "weights"

// The module's annotations.
const (
	// RouteWeightAnnotation is the route's weight record, written by the
	// Application on its MyDeployment once its HTTPRoute carries a weight
	// for the canary (Record, as JSON), never by hand.
	RouteWeightAnnotation = "apps.mydeployment.io/route-weight"
	// HeadroomAnnotation is how much more than an equal share of the
	// traffic a canary pod can take: a decimal from 1 to 10 (default 1).
	HeadroomAnnotation = "apps.mydeployment.io/weight-headroom"
	// AbortDrainDelayAnnotation is how long after the route sends the
	// aborted revision nothing its pods go: a duration from 0s to 10m
	// (default DefaultAbortDrainDelay).
	AbortDrainDelayAnnotation = "apps.mydeployment.io/abort-drain-delay"
)

// DefaultAbortDrainDelay is the drain delay of an abort, as Argo
// Rollouts' abortScaleDownDelaySeconds defaults to 30 s: connections the
// route sent before its weight went to 0 finish on the pods that took them.
const DefaultAbortDrainDelay = 30 * time.Second

// RouteAnswer bounds the wait for the route's record on abort: a route the
// Application cannot write (Gateway API gone, its write refused) or an
// Application gone never records 0, and an abort must not hold the
// aborted pods for ever. It counts from the abort, beside the drain delay.
const RouteAnswer = time.Minute

// maxAbortDrainDelay and maxHeadroom bound the annotations (beyond them
// a value is a mistake).
const (
	maxAbortDrainDelay = 10 * time.Minute
	maxHeadroom        = 10
)

// Module is the weights module.
var Module optin.Module = module{}

type module struct{}

func (module) Name() string { return Name }

func (module) Keys() []string {
	return []string{RouteWeightAnnotation, HeadroomAnnotation, AbortDrainDelayAnnotation}
}

// Parse reads the module's annotations: a Spec when md's canary steps have
// a weight step (canary.HasWeights), nil otherwise. Refused, each naming
// its annotation: a record that is not the Application's (ParseRecord,
// whatever the steps: a record outlives the steps it was written for), a
// headroom or a drain delay out of its bounds, and either without weight
// steps (they would do nothing).
func (module) Parse(md *appsv1beta1.MyDeployment) (optin.Spec, field.ErrorList) {
	var errs field.ErrorList
	w := &Weights{Headroom: 1, Delay: DefaultAbortDrainDelay}
	if v, ok := md.Annotations[RouteWeightAnnotation]; ok {
		rec, err := ParseRecord(v)
		if err != nil {
			errs = append(errs, field.Invalid(optin.Path(RouteWeightAnnotation), v, err.Error()))
		}
		w.Record = rec
	}
	steps, err := canary.ParseSteps(md.Annotations[appsv1beta1.CanaryStepsAnnotation])
	weighted := err == nil && canary.HasWeights(steps)
	for _, key := range []string{HeadroomAnnotation, AbortDrainDelayAnnotation} {
		v, ok := md.Annotations[key]
		if !ok {
			continue
		}
		if !weighted {
			errs = append(errs, field.Forbidden(optin.Path(key),
				key+" needs weight steps in "+appsv1beta1.CanaryStepsAnnotation+` ("weight 10%, pause, ..."): without them it does nothing`))
			continue
		}
		if err := w.set(key, v); err != nil {
			errs = append(errs, field.Invalid(optin.Path(key), v, err.Error()))
		}
	}
	if !weighted || len(errs) > 0 {
		return nil, errs
	}
	w.steps = steps
	w.abortedAt = abortedAt(md)
	return w, nil
}

// set parses the value v of key, HeadroomAnnotation or
// AbortDrainDelayAnnotation.
func (w *Weights) set(key, v string) error {
	if key == HeadroomAnnotation {
		h, err := ParseHeadroom(v)
		w.Headroom = h
		return err
	}
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil || d < 0 || d > maxAbortDrainDelay {
		return fmt.Errorf(`must be a duration from 0s to %s, like "30s"`, maxAbortDrainDelay)
	}
	w.Delay = d
	return nil
}

// ParseHeadroom parses a HeadroomAnnotation value: a decimal from 1 to 10.
func ParseHeadroom(v string) (float64, error) {
	h, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || math.IsNaN(h) || h < 1 || h > maxHeadroom {
		return 1, fmt.Errorf(`must be a decimal from 1 to %d, like "1.5": how much more than an equal share a canary pod can take`, maxHeadroom)
	}
	return h, nil
}

// Headroom is md's headroom (HeadroomAnnotation): 1 when absent or
// refused. The Application reads it beside the canary steps.
func Headroom(md *appsv1beta1.MyDeployment) float64 {
	v, ok := md.Annotations[HeadroomAnnotation]
	if !ok {
		return 1
	}
	h, _ := ParseHeadroom(v)
	return h
}

// Record is RouteWeightAnnotation: what the Application's HTTPRoute
// carries for the canary of the rollout to Revision, since At. Stated is
// the weight the steps state at the step the Application read (the
// rollout's StatedWeight), Effective what the route carries (the stated
// weight capped by the Ready canary pods, 0 once the rollout is aborted).
// The Application writes it only while its route names the canary
// Service: a route that points at the one Service sends the canary's pods
// their share, and no record says otherwise.
type Record struct {
	Revision  string    `json:"revision"`
	Stated    int32     `json:"stated"`
	Effective int32     `json:"effective"`
	At        time.Time `json:"at"`
}

// String is r as RouteWeightAnnotation holds it, At to the second.
func (r Record) String() string {
	r.At = r.At.UTC().Truncate(time.Second)
	b, _ := json.Marshal(r) // strings, numbers and a time: cannot fail
	return string(b)
}

// Same says r and o record the same weights for the same revision
// (whenever each was written).
func (r Record) Same(o Record) bool {
	return r.Revision == o.Revision && r.Stated == o.Stated && r.Effective == o.Effective
}

// ParseRecord parses a RouteWeightAnnotation value, as Record.String
// writes it.
func ParseRecord(v string) (Record, error) {
	var r Record
	err := json.Unmarshal([]byte(v), &r)
	switch {
	case err != nil, r.Revision == "", r.At.IsZero():
		return Record{}, fmt.Errorf(`must be written by the Application, like {"revision":"web-5d8f","stated":10,"effective":10,"at":"2026-11-30T20:00:00Z"}`)
	case r.Stated < 0 || r.Stated > 100 || r.Effective < 0 || r.Effective > 100:
		return Record{}, fmt.Errorf("stated and effective must be percentages from 0 to 100")
	}
	return r, nil
}

// RecordOf is md's route-weight record; false when absent or unreadable.
func RecordOf(md *appsv1beta1.MyDeployment) (Record, bool) {
	v, ok := md.Annotations[RouteWeightAnnotation]
	if !ok {
		return Record{}, false
	}
	r, err := ParseRecord(v)
	return r, err == nil
}

// Weights is the Spec of an object whose canary steps have a weight step.
type Weights struct {
	// Record is the route's weight record; zero without one.
	Record Record
	// Headroom multiplies the canary's Ready share (1: an equal share).
	Headroom float64
	// Delay is the abort's drain delay.
	Delay time.Duration
	// steps are the canary steps; abortedAt is when the status last said
	// the rollout was aborted (zero if it does not).
	steps     []rollout.CanaryStep
	abortedAt time.Time
}

// Of is the weights s opts into; nil without weight steps.
func Of(s optin.Set) *Weights {
	w, _ := optin.Get[*Weights](s, Name)
	return w
}

// Module implements optin.Spec.
func (*Weights) Module() string { return Name }

// PlanInput implements rollout.Planner: should the rollout to the update
// revision be aborted, its pods go at AbortDrain (AbortDrainOf).
func (w *Weights) PlanInput(in *rollout.Input) {
	in.AbortDrain = w.AbortDrainOf(in.UpdateRevision, in.Now)
}

// AbortDrainOf is when the pods of revision, aborted, may go: the drain
// delay after the record says the route sends revision nothing, or, until
// it does, RouteAnswer and the delay after the abort (the status's, or
// now for an abort this sync decides).
func (w *Weights) AbortDrainOf(revision string, now time.Time) time.Time {
	if r := w.Record; r.Revision == revision && r.Effective == 0 {
		return r.At.Add(w.Delay)
	}
	from := w.abortedAt
	if from.IsZero() {
		from = now
	}
	return from.Add(RouteAnswer + w.Delay)
}

// RouteWaits implements optin.RouteWaiter: the route does not carry yet
// the weight step index of the rollout to revision states (the record
// names another revision, or another stated weight); why says what it
// carries. A step before any weight step (stated 0) waits for nothing.
func (w *Weights) RouteWaits(revision string, index int) (why string, waits bool) {
	stated, ok := rollout.StatedWeight(w.steps, index)
	if !ok || stated == 0 {
		return "", false
	}
	r := w.Record
	if r.Revision == revision && r.Stated == stated {
		return "", false
	}
	if r.Revision != revision {
		return fmt.Sprintf("waiting for the route to carry the stated weight %d%%: no weight recorded for revision %q yet", stated, revision), true
	}
	return fmt.Sprintf("waiting for the route to carry the stated weight %d%%: it carries %d%% of a stated %d%%", stated, r.Effective, r.Stated), true
}

var (
	_ rollout.Planner   = (*Weights)(nil)
	_ optin.RouteWaiter = (*Weights)(nil)
)

// abortedAt is when md's status says its rollout was aborted (its
// Progressing condition, RolloutAborted, keeps its time once set); zero
// when it does not say so.
func abortedAt(md *appsv1beta1.MyDeployment) time.Time {
	for _, c := range md.Status.Conditions {
		if c.Type == appsv1beta1.ConditionProgressing && c.Reason == appsv1beta1.ReasonRolloutAborted {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}
