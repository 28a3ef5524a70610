package rollout

import (
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/inplace"
)

// The in-place strategy after its start: once Compute has started a pod's
// in-place update (Plan.UpdateInPlace, its gate False), each later sync
// moves it one step on (Steps): its spec patch, then its gate True, or a
// failure that has it replaced. inplace.go decides which pods start.

// InPlaceStep is one step of an in-place update already under way, for
// one pod.
type InPlaceStep struct {
	Pod *corev1.Pod
	// Revision is the revision the pod is to run, Target its template;
	// Change is the template's label and annotation change from the pod's
	// own revision (nil when the pod carries Revision's labels already).
	Revision *appsv1.ControllerRevision
	Target   *corev1.PodTemplateSpec
	Change   *inplace.Change
	Step     inplace.Step
	Why      string
	// Ends says the step ends an update that is not to go on, where it
	// stands: the pod runs its own revision, untouched; not a completed
	// update.
	Ends bool
}

// Shown says whether a later state of the pod shows the step written:
// until the cache does, the step is not written again.
func (ps InPlaceStep) Shown() func(*corev1.Pod) bool {
	switch ps.Step {
	case inplace.StepMarkReady:
		return func(p *corev1.Pod) bool {
			c := inplace.Condition(p)
			return c != nil && c.Status == corev1.ConditionTrue
		}
	case inplace.StepPatch:
		name, target := ps.Revision.Name, ps.Target
		return func(p *corev1.Pod) bool {
			return p.Labels[appsv1beta1.RevisionLabel] == name && inplace.SpecMatches(p, target)
		}
	default:
		return inplace.Failed
	}
}

// StepsInput is what Steps reads: the pods and revisions as claimed, the
// revision pods move to, the plan Compute made this sync, and which pods
// have a step written that the cache does not show yet.
type StepsInput struct {
	Pods      []*corev1.Pod
	Revisions []*appsv1.ControllerRevision
	// Towards is the revision pods move to: the update revision, or the
	// current one while aborted.
	Towards *appsv1.ControllerRevision
	Plan    Plan
	// Template is a revision's pod template, Diff the in-place change
	// between two revisions' templates (both pure: revisions never change).
	Template func(*appsv1.ControllerRevision) (*corev1.PodTemplateSpec, error)
	Diff     func(from, to *appsv1.ControllerRevision) (*inplace.Change, error)
	// Pending are the pods (by UID) with a step written and not yet seen:
	// not stepped again.
	Pending map[types.UID]bool
	Now     time.Time
	Timeout time.Duration
}

// Steps decides the next step (inplace.Next) of each gated pod. A pod of
// the update revision, or on its way to it (Plan.MovingInPlace: an old pod
// whose gate went False), goes towards in.Towards: its spec patch once it
// has left Service endpoints, one write carrying the new images, the
// revision's labels and the template's label and annotation changes (then
// the resize, if resources change), its gate True once the kubelet runs
// them, failed (to be replaced) when the update was refused or took longer
// than the timeout. Labels so change with the spec, never before it: a
// pod's revision label says what it runs at every moment. Any other pod
// goes towards its own revision: an update begun that is not to go on
// (paused, or the target changed to one its revision cannot reach in
// place) ends where it stands, its gate True again once its containers are
// ready, nothing restarted, since its spec was never touched; the planner
// then treats it as any old pod. Pods this sync's plan starts or removes
// are left to the next sync, which sees them changed. It returns the
// steps and when the soonest unfinished update times out.
func Steps(in StepsInput) ([]InPlaceStep, time.Duration, error) {
	var (
		steps []InPlaceStep
		errs  []error
		after time.Duration
	)
	acted := map[*corev1.Pod]bool{}
	for _, pod := range slices.Concat(in.Plan.UpdateInPlace, in.Plan.Delete, in.Plan.Evict) {
		acted[pod] = true
	}
	moving := make(map[*corev1.Pod]bool, len(in.Plan.MovingInPlace))
	for _, pod := range in.Plan.MovingInPlace {
		moving[pod] = true
	}
	for _, pod := range in.Pods {
		if !inplace.HasGate(pod) || pod.DeletionTimestamp != nil || acted[pod] {
			continue
		}
		ps, err := in.stepOf(pod, moving[pod])
		switch {
		case err != nil:
			errs = append(errs, err)
			continue
		case ps == nil:
			continue
		case ps.Step != inplace.StepNone && !in.Pending[pod.UID]:
			steps = append(steps, *ps)
		}
		if d := timesOutIn(pod, ps.Step, in.Now, in.Timeout); d > 0 && (after == 0 || d < after) {
			after = d
		}
	}
	return steps, after, kerrors.NewAggregate(errs)
}

// stepOf is pod's next step (Step may be StepNone), nil when its revision
// is gone (nothing to step towards).
func (in StepsInput) stepOf(pod *corev1.Pod, moving bool) (*InPlaceStep, error) {
	rev := revisionNamed(in.Revisions, pod.Labels[appsv1beta1.RevisionLabel])
	if rev == nil {
		return nil, nil // its history is gone: the planner did not list it either
	}
	var change *inplace.Change
	if moving {
		var err error
		if change, err = in.Diff(rev, in.Towards); err != nil {
			return nil, err
		}
		rev = in.Towards
	}
	target, err := in.Template(rev)
	if err != nil {
		return nil, err
	}
	step, why := inplace.Next(pod, target, in.Now, in.Timeout)
	ends := !moving && rev.Name != in.Towards.Name && inplace.UnderWay(pod)
	return &InPlaceStep{Pod: pod, Revision: rev, Target: target, Change: change, Step: step, Why: why, Ends: ends}, nil
}

// timesOutIn is how long until pod's unfinished update times out (0: it
// is not updating, or fails now).
func timesOutIn(pod *corev1.Pod, step inplace.Step, now time.Time, timeout time.Duration) time.Duration {
	c := inplace.Condition(pod)
	if step == inplace.StepFail || c == nil || !inplace.Updating(pod) || c.Reason == inplace.ReasonFailed {
		return 0
	}
	return max(c.LastTransitionTime.Add(timeout).Sub(now), 0)
}

// revisionNamed is the revision of that name among revs, nil if none.
func revisionNamed(revs []*appsv1.ControllerRevision, name string) *appsv1.ControllerRevision {
	for _, r := range revs {
		if r.Name == name {
			return r
		}
	}
	return nil
}
