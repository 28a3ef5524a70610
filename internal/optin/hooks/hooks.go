// Package hooks is the rollout-hooks opt-in (Annotation): a Job of the
// object's namespace, created suspended by the user as a template, run by
// the controller at points of a rollout: before the first pod of a new
// revision moves (pre), and once the revision is current and complete
// (post), and at chosen canary steps (steps). A pre hook holds the rollout
// until its Job succeeds, a step hook its step; a failure
// holds it (ReplicaFailure HookFailed) or, under onFailure Abort, aborts
// it to the stable revision through the abort path; `kubectl mydeployment
// rollout retry` runs it again under a new name.
//
// The module never writes: it reads the hook Jobs the manager's cache
// holds (Read, through its part), tells the planner to hold (PlanInput),
// names the Job the plan must create (Writes, carried out by act), and
// tells the status and the abort what the Jobs say (ReportInput,
// AbortCause). The Job's own status is the hook's record: nothing is
// written on the object.
package hooks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
)

// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete

// Name is the module's name in an optin.Set.
const Name = "hooks"

// The module's keys, labels and reasons.
const (
	// Annotation is the opt-in: JSON {"pre": HOOK, "steps": {"N": HOOK},
	// "post": HOOK}, each HOOK {"job": NAME, "onFailure": "Hold"|"Abort"|"Report"}.
	Annotation = "apps.mydeployment.io/hooks"
	// HookLabel on a Job the controller made names its point (pre, post);
	// the manager's cache holds only Jobs with it.
	HookLabel = "apps.mydeployment.io/hook"
	// RevisionHashLabel on a hook's Job is its revision's hash.
	RevisionHashLabel = "apps.mydeployment.io/hook-revision"
	// ReasonWaitingForHook: Progressing=True while a pre hook's Job runs.
	ReasonWaitingForHook = "WaitingForHook"
	// ReasonHookFailed: a hook's Job failed, its name was taken, or its
	// template could not be used (ReplicaFailure, and Progressing=False
	// while a pre hook holds the rollout).
	ReasonHookFailed = "HookFailed"
)

// Points of a rollout a hook runs at.
const (
	Pre  = "pre"
	Post = "post"
)

// What a hook's failure does (onFailure).
const (
	// Hold keeps the rollout where it is (pre, steps) until a retry.
	Hold = "Hold"
	// Abort sends every pod back to the stable revision.
	Abort = "Abort"
	// Report only reports it (post).
	Report = "Report"
)

// Module is the hooks module.
var Module optin.Builder = module{}

type module struct{}

func (module) Name() string { return Name }

func (module) Keys() []string { return []string{Annotation} }

// Hook is one point's hook: the template Job's name and what its failure
// does.
type Hook struct {
	Job       string
	OnFailure string
}

// Hooks is the Spec of an object that opts in: its hooks, and (once Read)
// what the manager's cache shows of their Jobs.
type Hooks struct {
	Pre, Post *Hook
	// Steps are the canary steps' hooks, by step counted from 1 (a step
	// beyond the object's last never runs).
	Steps map[int]Hook
	// object is the MyDeployment: the Jobs' owner and their names' prefix.
	object objectRef
	// view is what Read found; nil for a spec only parsed (the webhook,
	// the plugin, the scorecard's planner simulation: no hold).
	view *view
}

// wireHook and wire are Annotation's JSON.
type wireHook struct {
	Job       string `json:"job"`
	OnFailure string `json:"onFailure,omitempty"`
}

type wire struct {
	Pre   *wireHook           `json:"pre,omitempty"`
	Steps map[string]wireHook `json:"steps,omitempty"`
	Post  *wireHook           `json:"post,omitempty"`
}

// Parse reads Annotation: nil without it. Refused, each error naming
// it: a value ParseValue refuses, step hooks without canary steps, and
// onFailure Abort (its own, or the object's on-failure Abort a hook
// inherits) with strategy Recreate, which leaves no stable pods to go back to.
func (module) Parse(md *appsv1beta1.MyDeployment) (optin.Spec, field.ErrorList) {
	v, ok := md.Annotations[Annotation]
	if !ok {
		return nil, nil
	}
	path := optin.Path(Annotation)
	h, err := ParseValue(v, md.Annotations[appsv1beta1.OnFailureAnnotation] == appsv1beta1.OnFailureAbort)
	switch {
	case err != nil:
		return nil, field.ErrorList{field.Invalid(path, v, err.Error())}
	case len(h.Steps) > 0 && !hasSteps(md):
		return nil, field.ErrorList{field.Forbidden(path, "step hooks need "+appsv1beta1.CanaryStepsAnnotation+": they gate canary steps")}
	case md.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType && h.aborts():
		return nil, field.ErrorList{field.Forbidden(path,
			"onFailure Abort needs spec.strategy.type RollingUpdate: Recreate has no stable pods left to go back to")}
	}
	h.object = objectRef{Name: md.Name, Namespace: md.Namespace, UID: md.UID}
	return h, nil
}

// hasSteps says md has canary steps (the canary module parses them).
func hasSteps(md *appsv1beta1.MyDeployment) bool {
	_, ok := md.Annotations[appsv1beta1.CanaryStepsAnnotation]
	return ok
}

// aborts says a hook of h aborts on failure.
func (h *Hooks) aborts() bool {
	for _, k := range []*Hook{h.Pre, h.Post} {
		if k != nil && k.OnFailure == Abort {
			return true
		}
	}
	for _, k := range h.Steps {
		if k.OnFailure == Abort {
			return true
		}
	}
	return false
}

// ParseValue parses an Annotation value; abortByDefault is the object's
// on-failure Abort, the default of every hook's onFailure (otherwise Hold
// for pre and steps, Report for post). The error names the field that is
// wrong: JSON that is not an object of the known fields, no hook at all,
// a job that is not a Job's name (a DNS label: it is its pods' label
// value), an onFailure other than Hold or Abort for pre and steps, or
// Report or Abort for post, a step that is not an integer from 1.
func ParseValue(v string, abortByDefault bool) (*Hooks, error) {
	var w wire
	dec := json.NewDecoder(bytes.NewReader([]byte(v)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return nil, fmt.Errorf("must be a JSON object of pre, steps and post: %v", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("must be one JSON object")
	}
	if w.Pre == nil && w.Post == nil && len(w.Steps) == 0 {
		return nil, fmt.Errorf("names no hook: set pre, steps or post")
	}
	h := &Hooks{}
	var err error
	if h.Pre, err = parseHook(Pre, w.Pre, abortByDefault); err != nil {
		return nil, err
	}
	if h.Post, err = parseHook(Post, w.Post, abortByDefault); err != nil {
		return nil, err
	}
	if h.Steps, err = parseSteps(w.Steps, abortByDefault); err != nil {
		return nil, err
	}
	return h, nil
}

// parseSteps reads the step hooks: keys are canary steps from 1.
func parseSteps(steps map[string]wireHook, abortByDefault bool) (map[int]Hook, error) {
	if len(steps) == 0 {
		return nil, nil
	}
	out := map[int]Hook{}
	for key, w := range steps {
		n, err := strconv.Atoi(key)
		if err != nil || n < 1 || strconv.Itoa(n) != key {
			return nil, fmt.Errorf("steps: %q is not a canary step: want an integer from 1, as `kubectl mydeployment get` counts them", key)
		}
		k, err := parseHook("steps."+key, &w, abortByDefault)
		if err != nil {
			return nil, err
		}
		out[n] = *k
	}
	return out, nil
}

// parseHook reads the hook at point (nil: none).
func parseHook(point string, w *wireHook, abortByDefault bool) (*Hook, error) {
	if w == nil {
		return nil, nil
	}
	if msgs := validation.IsDNS1123Label(w.Job); len(msgs) > 0 {
		return nil, fmt.Errorf("%s.job: %q is not the name of a Job: %s", point, w.Job, strings.Join(msgs, "; "))
	}
	allowed := []string{Hold, Abort}
	if point == Post {
		allowed = []string{Report, Abort}
	}
	h := &Hook{Job: w.Job, OnFailure: w.OnFailure}
	switch {
	case h.OnFailure == "" && abortByDefault:
		h.OnFailure = Abort
	case h.OnFailure == "":
		h.OnFailure = allowed[0]
	case h.OnFailure != allowed[0] && h.OnFailure != allowed[1]:
		return nil, fmt.Errorf("%s.onFailure: %q is not supported: want %s or %s", point, h.OnFailure, allowed[0], allowed[1])
	}
	return h, nil
}

// Of is the hooks s opts into; nil without them (or with an annotation
// Parse refuses).
func Of(s optin.Set) *Hooks {
	h, _ := optin.Get[*Hooks](s, Name)
	return h
}

// Module implements optin.Spec.
func (*Hooks) Module() string { return Name }
