package controller

import (
	"context"
	"fmt"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/inplace"
	"github.com/mydeployment-io/mydeployment-operator/internal/podcontrol"
)

// beginInPlace starts the in-place updates the plan chose: each pod's gate
// False, its one write in this sync, expected in the cache before the next
// plan. The pod keeps its labels (and spec) until its spec patch, a later
// step: from the gate on, the planner counts it as on its way to the
// update revision (rollout.Plan.MovingInPlace), so it is neither started
// again nor replaced as an old pod, and no surge pod is made for it.
func (a actor) beginInPlace(ctx context.Context, p *syncPlan, out *outcome) error {
	pods := p.UpdateInPlace
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
		err := a.pods.SetGate(ctx, p.md, pod, corev1.ConditionFalse, inplace.ReasonUpdating,
			fmt.Sprintf("updating in place to revision %s", p.towards.Name))
		if !a.wrote(ctx, p, out, writeGateStart, pod, nil, err) {
			return err
		}
		gated[i] = true
		return err
	}, func(err error) { errs = append(errs, err) })
	for i, pod := range pods {
		if gated[i] {
			out.startedInPlace = append(out.startedInPlace, pod)
		}
	}
	if out.inPlaceStarted = started; started > 0 {
		a.recorder.Eventf(inSeries(p.md), revisionInSeries(p.towards), corev1.EventTypeNormal, appsv1beta1.EventInPlaceUpdate, "Rollout",
			"Updating pods in place to revision %q", p.towards.Name)
	}
	return kerrors.NewAggregate(errs)
}

// writeInPlaceSteps writes the steps rollout.Steps decided, all at once
// (thousands of pods can be on their way in one sync); each written step
// is recorded (StepWritten) until the cache shows it (rollout.InPlaceStep.Shown).
func (a actor) writeInPlaceSteps(ctx context.Context, p *syncPlan, out *outcome) error {
	var errs []error
	var mu sync.Mutex
	completed, failed := 0, 0
	parallel(len(p.steps), func(i int) error {
		ps := p.steps[i]
		var err error
		switch ps.Step {
		case inplace.StepMarkReady:
			err = a.pods.SetGate(ctx, p.md, ps.Pod, corev1.ConditionTrue, inplace.ReasonReady, "")
			if err == nil && ps.Ends {
				logf.FromContext(ctx).V(1).Info("in-place update ended where it stood", "pod", klog.KObj(ps.Pod), "revision", ps.Revision.Name)
			} else if err == nil && inplace.Condition(ps.Pod) != nil {
				mu.Lock()
				completed++
				mu.Unlock()
			}
		case inplace.StepPatch:
			err = a.pods.UpdateInPlace(ctx, p.md, ps.Pod, ps.Revision, ps.Target, ps.Change)
			if ps.FailIfRefused && podcontrol.Refused(err) { // the plan's contingency (rollout.InPlaceStep)
				ps.Step, ps.Why = inplace.StepFail, "the API server refused it: "+err.Error()
			}
		}
		if ps.Step != inplace.StepFail {
			a.wrote(ctx, p, out, writeStep, ps.Pod, ps.Shown(), err)
			return err
		}
		err = a.pods.SetGate(ctx, p.md, ps.Pod, corev1.ConditionFalse, inplace.ReasonFailed, ps.Why)
		if a.wrote(ctx, p, out, writeStep, ps.Pod, ps.Shown(), err); err != nil {
			return err
		}
		mu.Lock()
		failed++
		mu.Unlock()
		a.recorder.Eventf(p.md, ps.Pod, corev1.EventTypeWarning, appsv1beta1.EventInPlaceUpdateFailed, "Rollout",
			"Pod %s is replaced: its in-place update to revision %q failed: %s", ps.Pod.Name, ps.Revision.Name, ps.Why)
		logf.FromContext(ctx).Info("in-place update failed; replacing the pod", "pod", klog.KObj(ps.Pod), "why", ps.Why)
		return nil
	}, func(err error) { errs = append(errs, err) })
	out.inPlaceCompleted, out.inPlaceFallback = completed, failed
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
