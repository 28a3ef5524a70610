package controller

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/revision"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
)

// syncPlan names every write a sync makes once it has claimed its pods and
// revisions, in the order act makes them (see act). decide fills it from
// the observation alone; act carries it out and decides nothing.
type syncPlan struct {
	// Plan is the rollout planner's: pods to delete, evict, move in place
	// and create (with the in-place gate marked on each new pod when the
	// update mode is in place), and when to look again.
	rollout.Plan
	// recordFirst are annotations written before any pod moves: the size
	// record the step relies on (rollout.Plan.RecordFirst), and the canary
	// step the pods move towards (rollout.CanaryProgress.Record).
	recordFirst map[string]string
	// record are annotations written beside the pod writes: the revision
	// number, and a size that may go with it.
	record map[string]string
	// recordAfterPods is a size written once the pod writes succeeded.
	recordAfterPods map[string]string
	// events are recorded by act once the claims are written: what the
	// decision found that a user should know (a revision whose pods are
	// replaced rather than updated in place).
	events []planEvent
	// steps move the in-place updates already under way one step on.
	steps []rollout.InPlaceStep
	// inPlaceAfter, when positive, is when the soonest unfinished
	// in-place update times out.
	inPlaceAfter time.Duration
	// abortRecorded says recordFirst records an abort
	// (AbortedRevisionAnnotation): its event follows the write.
	abortRecorded bool
	// truncate are the revisions beyond revisionHistoryLimit to delete.
	truncate []*appsv1.ControllerRevision
}

// decide computes s's plan from what observe and the claims found. It
// reads no client and no clock (s.now is the sync's).
func (r *MyDeploymentReconciler) decide(ctx context.Context, s *scope) (syncPlan, error) {
	current := s.update.Name
	if s.current != nil {
		current = s.current.Name
	}
	in, err := rollout.NewInput(s.md, current, s.update.Name, s.revisions, s.pods, s.now)
	if err != nil {
		return syncPlan{}, fmt.Errorf("planning: %w", err)
	}
	in.Aborted = s.abortOrNot()
	s.target = named(s.revisions, in.Target())
	s.aborted = in.Target() != in.UpdateRevision
	var events []planEvent
	if s.optIn.InPlace {
		in.InPlace, events = r.inPlaceRevisions(ctx, s)
	}
	if s.optIn.Drain {
		in.DrainingNodes = s.drainingNodes
	}
	p := syncPlan{Plan: rollout.Compute(in), events: events}
	now, afterPods := s.annotations(p.Plan)
	p.abortRecorded = s.abortRecord(now)
	if p.RecordFirst || p.abortRecorded {
		// The pods must not move before the record says what they are
		// sized for (rollout.Plan.RecordFirst), or that the rollout is
		// aborted (abort.go).
		p.recordFirst = now
	} else {
		// The annotations do not gate the pods: written while the pods
		// are, one round trip less per new revision.
		p.record = now
	}
	p.recordAfterPods = afterPods
	if c := p.Canary; c != nil && c.Record {
		// The pods move towards the step the record names: written first,
		// or a sync reading the older record would move them back.
		if p.recordFirst == nil {
			p.recordFirst = map[string]string{}
		}
		p.recordFirst[appsv1beta1.CanaryStepAnnotation] = c.State.String()
	}
	var stepsErr error
	p.steps, p.inPlaceAfter, stepsErr = rollout.Steps(rollout.StepsInput{Pods: s.pods, Revisions: s.revisions,
		Towards: s.towards(), Plan: p.Plan, Template: r.inPlace.template, Diff: r.inPlace.change,
		Pending: s.stepsPending, Now: s.now, Timeout: r.inPlaceTimeout()})
	p.truncate = truncation(s)
	return p, stepsErr
}

// truncation is the revisions beyond revisionHistoryLimit, never the
// current, the update, or one a live pod still runs.
func truncation(s *scope) []*appsv1.ControllerRevision {
	podRevisions := make([]string, 0, len(s.pods))
	for _, pod := range s.pods {
		podRevisions = append(podRevisions, pod.Labels[appsv1beta1.RevisionLabel])
	}
	live := revision.Live(s.current, s.update, podRevisions...)
	return revision.TruncateCandidates(s.revisions, live, ptr.Deref(s.md.Spec.RevisionHistoryLimit, 10))
}

// planEvent is an event a plan asks act to record about the object.
type planEvent struct {
	related                         runtime.Object
	eventType, reason, action, note string
}
