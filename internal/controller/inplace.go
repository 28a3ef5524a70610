package controller

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/inplace"
	"github.com/mydeployment-io/mydeployment-operator/internal/metrics"
	"github.com/mydeployment-io/mydeployment-operator/internal/podcontrol"
	"github.com/mydeployment-io/mydeployment-operator/internal/revision"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
)

// DefaultInPlaceTimeout is how long an in-place update may take, from its
// start until the pod runs the new template, before the pod is replaced.
const DefaultInPlaceTimeout = 2 * time.Minute

// inPlaceMemo remembers what is computed from immutable keys: decoded
// revision templates and whether the pods of one revision can move to
// another in place (ControllerRevisions never change: keyed by UID), and
// the hash of a ConfigMap's or Secret's data (keyed by UID and
// resourceVersion, which never name two different data; see config.go).
// Entries never go stale; each map is emptied when it grows past
// maxInPlaceMemo entries.
type inPlaceMemo struct {
	mu        sync.Mutex
	templates map[types.UID]*corev1.PodTemplateSpec
	diffs     map[[2]types.UID]inPlaceDiff
	configs   map[configHashKey]string
}

type inPlaceDiff struct {
	change *inplace.Change
	err    error
}

const maxInPlaceMemo = 4096

// template is rev's pod template, decoded once; callers must not modify it.
func (m *inPlaceMemo) template(rev *appsv1.ControllerRevision) (*corev1.PodTemplateSpec, error) {
	if rev.UID == "" {
		// Not created yet (the update revision this sync writes): no key.
		t, err := revision.Template(rev)
		if err != nil {
			return nil, fmt.Errorf("decoding revision %s: %w", rev.Name, err)
		}
		return t, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if t, ok := m.templates[rev.UID]; ok {
		return t, nil
	}
	t, err := revision.Template(rev)
	if err != nil {
		return nil, fmt.Errorf("decoding revision %s: %w", rev.Name, err)
	}
	if m.templates == nil || len(m.templates) >= maxInPlaceMemo {
		m.templates = map[types.UID]*corev1.PodTemplateSpec{}
	}
	m.templates[rev.UID] = t
	return t, nil
}

// diff is inplace.Diff from from's template to to's, computed once; fresh
// reports whether it was computed by this call.
func (m *inPlaceMemo) diff(from, to *appsv1.ControllerRevision) (change *inplace.Change, fresh bool, err error) {
	compute := func() (d inPlaceDiff, err error) {
		a, err := m.template(from)
		if err != nil {
			return d, err
		}
		b, err := m.template(to)
		if err != nil {
			return d, err
		}
		d.change, d.err = inplace.Diff(a, b)
		return d, nil
	}
	if from.UID == "" || to.UID == "" {
		// A revision not created yet: computed every time, never kept
		// (fresh only once it exists, so its event is not repeated).
		d, err := compute()
		if err != nil {
			return nil, false, err
		}
		return d.change, false, d.err
	}
	key := [2]types.UID{from.UID, to.UID}
	m.mu.Lock()
	d, ok := m.diffs[key]
	m.mu.Unlock()
	if ok {
		return d.change, false, d.err
	}
	d, err = compute()
	if err != nil {
		return nil, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.diffs == nil || len(m.diffs) >= maxInPlaceMemo {
		m.diffs = map[[2]types.UID]inPlaceDiff{}
	}
	m.diffs[key] = d
	return d.change, true, d.err
}

// inPlaceRevisions names the old revisions whose gated pods can move to
// the update revision in place (the planner's Input.InPlace). The first
// time a pair of revisions is found not to, an event says why.
func (r *MyDeploymentReconciler) inPlaceRevisions(ctx context.Context, s *scope) []string {
	seen := map[string]bool{s.towards().Name: true}
	var out []string
	for _, pod := range s.pods {
		name := pod.Labels[appsv1beta1.RevisionLabel]
		if seen[name] || !inplace.HasGate(pod) {
			continue
		}
		seen[name] = true
		from := named(s.revisions, name)
		if from == nil {
			continue // its history is gone: nothing to compare with
		}
		_, fresh, err := r.inPlace.diff(from, s.towards())
		switch {
		case err == nil:
			out = append(out, name)
		case fresh:
			r.Recorder.Eventf(s.md, s.towards(), corev1.EventTypeNormal, appsv1beta1.EventInPlaceUpdate, "Rollout",
				"Pods of revision %q are replaced, not updated in place: %v", name, err)
		default:
			logf.FromContext(ctx).V(1).Info("revision cannot move in place", "from", name, "to", s.towards().Name, "why", err.Error())
		}
	}
	return out
}

// beginInPlace starts the in-place updates the plan chose: each pod's gate
// False, its one write in this sync, expected in the cache before the next
// plan. The pod keeps its labels (and spec) until its spec patch, a later
// step: from the gate on, the planner counts it as on its way to the
// update revision (rollout.Plan.MovingInPlace), so it is neither started
// again nor replaced as an old pod, and no surge pod is made for it.
func (r *MyDeploymentReconciler) beginInPlace(ctx context.Context, s *scope) error {
	pods := s.plan.UpdateInPlace
	if len(pods) == 0 {
		return nil
	}
	var errs []error
	gated := make([]bool, len(pods))
	started := parallel(len(pods), func(i int) error {
		pod := pods[i]
		// The gate first: the pod leaves Service endpoints before anything
		// else changes. Once it is False (or may be: a lost reply that
		// landed), the next plan must see the pod on its way, so it waits
		// for the cache to show it so.
		err := r.Pods.SetGate(ctx, s.md, pod, corev1.ConditionFalse, inplace.ReasonUpdating,
			fmt.Sprintf("updating in place to revision %s", s.towards().Name))
		if err != nil && !(outcomeUnknown(err) && r.changedAfterAll(ctx, pod, inplace.Updating)) {
			return err
		}
		s.obj.ExpectChange(pod.Name, inplace.Updating, s.now)
		s.obj.ForgetSteps(pod) // its last step, gate True, is no longer what the cache will show
		gated[i] = true
		return err
	}, func(err error) { errs = append(errs, err) })
	for i, pod := range pods {
		if gated[i] {
			s.startedInPlace = append(s.startedInPlace, pod)
		}
	}
	if started > 0 {
		r.Metrics.InPlaceUpdates(s.md, metrics.InPlaceStarted, started)
		r.Recorder.Eventf(inSeries(s.md), revisionInSeries(s.towards()), corev1.EventTypeNormal, appsv1beta1.EventInPlaceUpdate, "Rollout",
			"Updating pods in place to revision %q", s.towards().Name)
	}
	return kerrors.NewAggregate(errs)
}

// inPlaceStep is one step of an in-place update already under way, for
// one pod: decided by planInPlaceSteps, written by writeInPlaceSteps.
type inPlaceStep struct {
	pod *corev1.Pod
	// rev is the revision the pod is to run, target its template; change
	// is the template's label and annotation change from the pod's own
	// revision (nil when the pod carries rev's labels already).
	rev    *appsv1.ControllerRevision
	target *corev1.PodTemplateSpec
	change *inplace.Change
	step   inplace.Step
	why    string
	// ends says the step ends an update that is not to go on, where it
	// stands: the pod runs its own revision, untouched (see
	// planInPlaceSteps); not a completed update.
	ends bool
}

// noteStep records a step written (err nil), or one whose reply was lost
// but which the API server shows landed, until the cache shows it: the
// syncs in between, planned from a cache without it, must not write it
// again. A step that failed, or may not have landed, is not recorded: the
// next sync writes it again, to the same effect.
func (r *MyDeploymentReconciler) noteStep(ctx context.Context, s *scope, ps inPlaceStep, err error) {
	if err == nil || outcomeUnknown(err) && r.changedAfterAll(ctx, ps.pod, ps.shown()) {
		s.obj.StepWritten(ps.pod, ps.shown(), s.now)
	}
}

// shown says whether a later state of the pod shows the step written: the
// freshness record holds the step back until the cache does
// (freshness.Record.StepPending).
func (ps inPlaceStep) shown() func(*corev1.Pod) bool {
	switch ps.step {
	case inplace.StepMarkReady:
		return func(p *corev1.Pod) bool {
			c := inplace.Condition(p)
			return c != nil && c.Status == corev1.ConditionTrue
		}
	case inplace.StepPatch:
		name, target := ps.rev.Name, ps.target
		return func(p *corev1.Pod) bool {
			return p.Labels[appsv1beta1.RevisionLabel] == name && inplace.SpecMatches(p, target)
		}
	default:
		return inplace.Failed
	}
}

// planInPlaceSteps decides the next step (inplace.Next) of each gated pod
// and marks any new pod's gate True. A pod of the update revision, or on
// its way to it (p.MovingInPlace: an old pod whose gate went False), goes
// towards the update revision: its spec patch once it has left Service
// endpoints, one write carrying the new images, the update revision's
// labels and the template's label and annotation changes (then the
// resize, if resources change), its gate True once the kubelet runs them,
// failed (to be replaced) when the update was refused or took longer than
// the timeout. Labels so change with the spec, never before it: a pod's
// revision label says what it runs at every moment. Any other pod goes
// towards its own revision: an update begun that is not to go on (paused,
// or the update revision changed to one its revision cannot reach in
// place) ends where it stands, its gate True again once its containers are
// ready, nothing restarted, since its spec was never touched; the planner
// then treats it as any old pod (a replaced one is not stepped: the plan's
// removals are left alone). A step written and not yet seen in the cache
// (StepPending) is not repeated. It returns the steps and when the soonest
// unfinished update times out.
func (r *MyDeploymentReconciler) planInPlaceSteps(s *scope, p rollout.Plan) ([]inPlaceStep, time.Duration, error) {
	timeout := r.InPlaceTimeout
	if timeout <= 0 {
		timeout = DefaultInPlaceTimeout
	}
	var steps []inPlaceStep
	var errs []error
	var after time.Duration
	// Pods this sync's plan starts or removes are as the cache had them
	// before: leave them to the next sync, which sees them changed.
	acted := map[*corev1.Pod]bool{}
	for _, pod := range slices.Concat(p.UpdateInPlace, p.Delete, p.Evict) {
		acted[pod] = true
	}
	moving := make(map[*corev1.Pod]bool, len(p.MovingInPlace))
	for _, pod := range p.MovingInPlace {
		moving[pod] = true
	}
	for _, pod := range s.pods {
		if !inplace.HasGate(pod) || pod.DeletionTimestamp != nil || acted[pod] {
			continue
		}
		rev := named(s.revisions, pod.Labels[appsv1beta1.RevisionLabel])
		var change *inplace.Change
		if moving[pod] {
			if rev == nil {
				continue // its history is gone: the planner did not list it
			}
			var err error
			if change, _, err = r.inPlace.diff(rev, s.towards()); err != nil {
				errs = append(errs, err)
				continue
			}
			rev = s.towards()
		}
		if rev == nil {
			continue
		}
		target, err := r.inPlace.template(rev)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		step, why := inplace.Next(pod, target, s.now, timeout)
		if step != inplace.StepNone && !s.obj.StepPending(pod, s.now) {
			ends := !moving[pod] && rev.Name != s.towards().Name && inplace.UnderWay(pod)
			steps = append(steps, inPlaceStep{pod: pod, rev: rev, target: target, change: change, step: step, why: why, ends: ends})
		}
		if c := inplace.Condition(pod); step != inplace.StepFail && c != nil && inplace.Updating(pod) && c.Reason != inplace.ReasonFailed {
			if d := c.LastTransitionTime.Add(timeout).Sub(s.now); d > 0 && (after == 0 || d < after) {
				after = d
			}
		}
	}
	return steps, after, kerrors.NewAggregate(errs)
}

// writeInPlaceSteps writes the steps planInPlaceSteps decided, all at once
// (thousands of pods can be on their way in one sync); each written step
// is recorded (StepWritten) until the cache shows it (inPlaceStep.shown).
func (r *MyDeploymentReconciler) writeInPlaceSteps(ctx context.Context, s *scope, steps []inPlaceStep) error {
	var errs []error
	var mu sync.Mutex
	completed, failed := 0, 0
	parallel(len(steps), func(i int) error {
		ps := steps[i]
		var err error
		switch ps.step {
		case inplace.StepMarkReady:
			err = r.Pods.SetGate(ctx, s.md, ps.pod, corev1.ConditionTrue, inplace.ReasonReady, "")
			if err == nil && ps.ends {
				logf.FromContext(ctx).V(1).Info("in-place update ended where it stood", "pod", klog.KObj(ps.pod), "revision", ps.rev.Name)
			} else if err == nil && inplace.Condition(ps.pod) != nil {
				mu.Lock()
				completed++
				mu.Unlock()
			}
		case inplace.StepPatch:
			if err = r.Pods.UpdateInPlace(ctx, s.md, ps.pod, ps.rev, ps.target, ps.change); podcontrol.Refused(err) {
				ps.step, ps.why = inplace.StepFail, "the API server refused it: "+err.Error()
			}
		}
		if ps.step != inplace.StepFail {
			r.noteStep(ctx, s, ps, err)
			return err
		}
		err = r.Pods.SetGate(ctx, s.md, ps.pod, corev1.ConditionFalse, inplace.ReasonFailed, ps.why)
		if r.noteStep(ctx, s, ps, err); err != nil {
			return err
		}
		mu.Lock()
		failed++
		mu.Unlock()
		r.Recorder.Eventf(s.md, ps.pod, corev1.EventTypeWarning, appsv1beta1.EventInPlaceUpdateFailed, "Rollout",
			"Pod %s is replaced: its in-place update to revision %q failed: %s", ps.pod.Name, ps.rev.Name, ps.why)
		logf.FromContext(ctx).Info("in-place update failed; replacing the pod", "pod", klog.KObj(ps.pod), "why", ps.why)
		return nil
	}, func(err error) { errs = append(errs, err) })
	r.Metrics.InPlaceUpdates(s.md, metrics.InPlaceCompleted, completed)
	r.Metrics.InPlaceUpdates(s.md, metrics.InPlaceFallback, failed)
	return kerrors.NewAggregate(errs)
}

// inSeries refers to md without its resourceVersion, so that the events
// of one rollout's batches are one event series: events.k8s.io folds
// events of the same reason, regarding and related object into a series
// (one create, one patch, then counted in memory; a new event after 6
// minutes without one). With the resourceVersion, which every status
// write changes, each batch was an event of its own: 10 writes or more an
// object in an in-place rollout of 50 pods (issue 31). How many pods each
// batch started is in mydeployment_in_place_updates_total. The UID stays:
// kubectl describe finds an object's events by it.
func inSeries(md *appsv1beta1.MyDeployment) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: appsv1beta1.GroupVersion.String(), Kind: "MyDeployment",
		Namespace: md.Namespace, Name: md.Name, UID: md.UID}
}

// revisionInSeries refers to rev by name only, for the same reason: the
// revision a sync has just created has no UID in memory yet, the next
// sync's copy from the cache has.
func revisionInSeries(rev *appsv1.ControllerRevision) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: "apps/v1", Kind: "ControllerRevision", Namespace: rev.Namespace, Name: rev.Name}
}
