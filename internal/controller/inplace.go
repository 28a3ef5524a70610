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
	seen := map[string]bool{s.update.Name: true}
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
		_, fresh, err := r.inPlace.diff(from, s.update)
		switch {
		case err == nil:
			out = append(out, name)
		case fresh:
			r.Recorder.Eventf(s.md, s.update, corev1.EventTypeNormal, appsv1beta1.EventInPlaceUpdate, "Rollout",
				"Pods of revision %q are replaced, not updated in place: %v", name, err)
		default:
			logf.FromContext(ctx).V(1).Info("revision cannot move in place", "from", name, "to", s.update.Name, "why", err.Error())
		}
	}
	return out
}

// beginInPlace starts the in-place updates the plan chose: each pod's gate
// False, then the update revision's labels, expected in the cache before
// the next plan.
func (r *MyDeploymentReconciler) beginInPlace(ctx context.Context, s *scope) error {
	pods := s.plan.UpdateInPlace
	if len(pods) == 0 {
		return nil
	}
	var errs []error
	started := parallel(len(pods), func(i int) error {
		pod := pods[i]
		from := named(s.revisions, pod.Labels[appsv1beta1.RevisionLabel])
		if from == nil {
			return fmt.Errorf("updating pod %s in place: its revision is gone", pod.Name)
		}
		change, _, err := r.inPlace.diff(from, s.update)
		if err != nil {
			return fmt.Errorf("updating pod %s in place: %w", pod.Name, err)
		}
		// The gate first: the pod leaves Service endpoints before anything
		// else changes. Once it is False (or may be: a lost reply that
		// landed), the next plan must see the pod as unavailable, so it
		// waits for the cache to show it so, even if the relabel fails.
		started := func(p *corev1.Pod) bool {
			return inplace.Updating(p) || p.Labels[appsv1beta1.RevisionLabel] == s.update.Name
		}
		err = r.Pods.SetGate(ctx, s.md, pod, corev1.ConditionFalse, inplace.ReasonUpdating,
			fmt.Sprintf("updating in place to revision %s", s.update.Name))
		if err != nil && !(outcomeUnknown(err) && r.changedAfterAll(ctx, pod, started)) {
			return err
		}
		s.obj.ExpectChange(pod.Name, started, s.now)
		if err != nil {
			return err
		}
		return r.Pods.Relabel(ctx, s.md, pod, s.update, change)
	}, func(err error) { errs = append(errs, err) })
	if started > 0 {
		r.Metrics.InPlaceUpdates(s.md, metrics.InPlaceStarted, started)
		r.Recorder.Eventf(s.md, s.update, corev1.EventTypeNormal, appsv1beta1.EventInPlaceUpdate, "Rollout",
			"Updating %d pod(s) in place to revision %q", started, s.update.Name)
	}
	return kerrors.NewAggregate(errs)
}

// inPlaceStep is one step of an in-place update already under way, for
// one pod: decided by planInPlaceSteps, written by writeInPlaceSteps.
type inPlaceStep struct {
	pod    *corev1.Pod
	rev    *appsv1.ControllerRevision
	target *corev1.PodTemplateSpec
	step   inplace.Step
	why    string
}

// planInPlaceSteps decides the next step (inplace.Next) of each gated pod
// of the update revision, and marks any new pod's gate True: write the new
// images and resources once the pod has left Service endpoints, mark it
// True again once the kubelet runs them, mark it failed (to be replaced)
// when the update was refused or took longer than the timeout. A step
// written and not yet seen in the cache (StepPending) is not repeated. It
// returns the steps and when the soonest unfinished update times out.
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
	for _, pod := range s.pods {
		if !inplace.HasGate(pod) || pod.DeletionTimestamp != nil || acted[pod] {
			continue
		}
		if pod.Labels[appsv1beta1.RevisionLabel] != s.update.Name && inplace.Condition(pod) != nil && !s.md.Spec.Paused {
			// An old pod's update is the planner's: moved again (a start
			// whose relabel failed, a target that changed) or replaced.
			// Only a new pod's gate is marked whatever its revision; while
			// paused (no rollout step) an old pod's update is finished
			// at its own revision rather than left unavailable.
			continue
		}
		rev := named(s.revisions, pod.Labels[appsv1beta1.RevisionLabel])
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
			steps = append(steps, inPlaceStep{pod: pod, rev: rev, target: target, step: step, why: why})
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
// is recorded (StepWritten) until the cache shows the pod changed.
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
			if err == nil && inplace.Condition(ps.pod) != nil {
				mu.Lock()
				completed++
				mu.Unlock()
			}
		case inplace.StepPatch:
			if err = r.Pods.UpdateInPlace(ctx, s.md, ps.pod, ps.target); podcontrol.Refused(err) {
				ps.step, ps.why = inplace.StepFail, "the API server refused it: "+err.Error()
			}
		}
		if ps.step != inplace.StepFail {
			if err == nil {
				s.obj.StepWritten(ps.pod, s.now)
			}
			return err
		}
		if err = r.Pods.SetGate(ctx, s.md, ps.pod, corev1.ConditionFalse, inplace.ReasonFailed, ps.why); err != nil {
			return err
		}
		s.obj.StepWritten(ps.pod, s.now)
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
