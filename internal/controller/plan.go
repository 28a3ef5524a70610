package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/inplace"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/abort"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/updatemode"
	"github.com/mydeployment-io/mydeployment-operator/internal/revision"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
	"github.com/mydeployment-io/mydeployment-operator/internal/status"
)

// syncPlan names every write a sync makes once it has claimed its pods and
// revisions, in the order act makes them (see act), and what act needs to
// make them. decide fills it from the observation and the claims alone;
// act carries it out and decides nothing.
type syncPlan struct {
	// Plan is the rollout planner's: pods to delete, evict, move in place
	// and create (with the in-place gate marked on each new pod when the
	// update mode is in place), and when to look again.
	rollout.Plan
	// md is the object the writes are for, obj what the controller keeps
	// of it (the freshness record act tells of its writes), now the
	// sync's clock, selector md's.
	md       *appsv1beta1.MyDeployment
	obj      *object
	now      time.Time
	selector labels.Selector
	// claims are written first (writeClaims).
	claims *claimed
	// revisions are md's once the claims are written; update is the update
	// revision, towards the revision the pods move to (the update
	// revision, or the current one while the rollout is aborted: aborted).
	revisions       []*appsv1.ControllerRevision
	update, towards *appsv1.ControllerRevision
	aborted         bool
	// inPlace: the pods are created with the in-place gate (update-mode
	// InPlaceIfPossible).
	inPlace bool
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
	// abortCause, when set, is the module's verdict that aborts (a failed
	// analysis or hook), for that event and the status.
	abortRecorded bool
	abortCause    optin.Cause
	// analysisAfter, when positive, is when the canary step's next
	// analysis measurement is due.
	analysisAfter time.Duration
	// truncate are the revisions beyond revisionHistoryLimit to delete.
	truncate []*appsv1.ControllerRevision
	// writes are the modules' own objects to write (optin.Writer: a hook's
	// Job), before any pod moves.
	writes []optin.Write
}

// decide computes the plan of a sync from its observation and claims
// alone: no client, no recorder, no clock (o.now is the sync's), and the
// freshness record only as the claims read it (c.stepsPending). parts are
// the modules' long-lived parts, of which decide reads update-mode's memo
// of what is computed from immutable revisions (templates, in-place
// diffs); timeout bounds an in-place update. Its one error is the
// in-place steps' (a template that cannot be decoded), and the plan comes
// back with it (what status says of an abort).
func decide(o *observation, c *claimed, parts map[string]optin.Part, timeout time.Duration) (*syncPlan, error) {
	memo, inPlace := updatemode.MemoOf(parts), updatemode.InPlace(o.optIn)
	current := c.update.Name
	if c.current != nil {
		current = c.current.Name
	}
	in := rollout.NewInputOf(o.md, rollout.Parsed{OptIn: o.optIn, MaxSurge: o.maxSurge, MaxUnavailable: o.maxUnavailable, Records: o.records},
		current, c.update.Name, c.revisions, c.pods, o.now)
	ab := abortingOf(o, c)
	in.Aborted = ab.now(o, c)
	p := &syncPlan{md: o.md, obj: o.obj, now: o.now, selector: o.selector, claims: c, revisions: c.revisions,
		update: c.update, towards: named(c.revisions, in.Target()), aborted: in.Target() != in.UpdateRevision,
		inPlace: inPlace}
	if p.towards == nil {
		p.towards = c.update
	}
	if p.abortCause = ab.cause; !p.aborted {
		p.analysisAfter = ab.after
	}
	if p.inPlace {
		var refused []rollout.InPlaceRefusal
		in.InPlace, refused = rollout.InPlaceRevisions(c.pods, c.revisions, p.towards, memo.Diff)
		for _, x := range refused {
			p.events = append(p.events, planEvent{related: p.towards, eventType: corev1.EventTypeNormal,
				reason: appsv1beta1.EventInPlaceUpdate, action: "Rollout",
				note: fmt.Sprintf("Pods of revision %q are replaced, not updated in place: %v", x.Revision, x.Why)})
		}
	}
	p.Plan = rollout.Compute(in)
	p.annotate(o)
	var stepsErr error
	p.steps, p.inPlaceAfter, stepsErr = rollout.Steps(rollout.StepsInput{Pods: c.pods, Revisions: c.revisions,
		Towards: p.towards, Plan: p.Plan, Template: memo.Template, Diff: memo.Change,
		Pending: c.stepsPending, Now: o.now, Timeout: timeout})
	p.truncate = truncation(o.md, c)
	planned := optin.Planned{Update: c.update.Name, Current: current}
	if cp := p.Canary; cp != nil {
		planned.Step = &optin.PlannedStep{Revision: cp.State.Revision, Index: cp.State.Index, Held: cp.Analyzing}
	}
	for _, r := range c.revisions {
		if !slices.Contains(p.truncate, r) {
			planned.Kept = append(planned.Kept, r.Name)
		}
	}
	p.writes = optin.WritesOf(o.optIn, planned)
	for _, e := range optin.EventsOf(o.optIn, planned) {
		t := corev1.EventTypeNormal
		if e.Warning {
			t = corev1.EventTypeWarning
		}
		p.events = append(p.events, planEvent{related: c.update, eventType: t, reason: e.Reason, action: "Rollout", note: e.Note})
	}
	return p, stepsErr
}

// annotate decides the plan's annotation writes: the revision number and
// the size record (annotations), the abort record (abortRecord), the
// canary step and the wave under way, each in the phase of act it must be
// written in.
func (p *syncPlan) annotate(o *observation) {
	now, afterPods := annotations(o.md, o.records, p.update, p.Plan)
	p.abortRecorded = abortRecord(o.records, p.update, p.claims.newRevision, p.aborted, now)
	if p.RecordFirst || p.abortRecorded {
		// The pods must not move before the record says what they are
		// sized for (rollout.Plan.RecordFirst), or that the rollout is
		// aborted (aborting.now).
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
	if w := p.Waves; w != nil && w.Record {
		// The same for a wave: a sync reading the older record would
		// start the next wave early, or bake again.
		if p.recordFirst == nil {
			p.recordFirst = map[string]string{}
		}
		p.recordFirst[rollout.WaveStateAnnotation] = w.State.String()
	}
}

// annotations are what md's annotations must say after this sync: the
// update revision's number (not while paused) and what the pods are
// sized for when the plan says it must be recorded, or with the revision
// number's write anyway. A size recorded for the pods this plan creates or
// deletes comes in afterPods: written once they are, or the next plan would
// not know the scale is unfinished. A size the plan must record first
// (RecordFirst) comes in now, which the caller then writes before any pod.
func annotations(md *appsv1beta1.MyDeployment, rec optin.Records, update *appsv1.ControllerRevision, p rollout.Plan) (now, afterPods map[string]string) {
	now = map[string]string{}
	if !md.Spec.Paused {
		now[appsv1beta1.RevisionAnnotation] = strconv.FormatInt(update.Revision, 10)
	}
	if recorded := rec.SizedFor; recorded != nil && *recorded == p.SizedFor {
		return now, nil
	}
	switch {
	case p.RecordFirst:
		maps.Copy(now, p.SizedFor.Annotations())
	case p.RecordSize && (len(p.Create) > 0 || p.Removes() > 0):
		afterPods = p.SizedFor.Annotations()
	case p.RecordSize || rec.RevisionText != now[appsv1beta1.RevisionAnnotation]:
		maps.Copy(now, p.SizedFor.Annotations())
	}
	return now, afterPods
}

// truncation is the revisions beyond revisionHistoryLimit, never the
// current, the update, or one a live pod still runs.
func truncation(md *appsv1beta1.MyDeployment, c *claimed) []*appsv1.ControllerRevision {
	podRevisions := make([]string, 0, len(c.pods))
	for _, pod := range c.pods {
		podRevisions = append(podRevisions, pod.Labels[appsv1beta1.RevisionLabel])
	}
	live := revision.Live(c.current, c.update, podRevisions...)
	return revision.TruncateCandidates(c.revisions, live, ptr.Deref(md.Spec.RevisionHistoryLimit, 10))
}

// planEvent is an event a plan asks act to record about the object.
type planEvent struct {
	related                         runtime.Object
	eventType, reason, action, note string
}

// logPlan logs the plan once per sync at V(1), when it acts: what it does,
// and the pods it was computed from (up to maxLoggedPods of them: name,
// revision, ready, gate), so a plan can be checked against its input.
func logPlan(ctx context.Context, p *syncPlan) {
	if p.Removes() == 0 && len(p.Create) == 0 && len(p.UpdateInPlace) == 0 && len(p.steps) == 0 {
		return
	}
	log := logf.FromContext(ctx).V(1)
	if !log.Enabled() {
		return
	}
	refs := func(pods []*corev1.Pod) []klog.ObjectRef {
		out := make([]klog.ObjectRef, 0, len(pods))
		for _, p := range pods {
			out = append(out, klog.KObj(p))
		}
		return out
	}
	pods := p.claims.pods
	observed := make([]string, 0, min(len(pods), maxLoggedPods))
	for _, pod := range pods[:min(len(pods), maxLoggedPods)] {
		desc := pod.Name + ":" + pod.Labels[appsv1beta1.RevisionLabel]
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				desc += ":ready"
			}
		}
		if c := inplace.Condition(pod); c != nil {
			desc += ":gate=" + string(c.Status) + "/" + c.Reason
		}
		if pod.DeletionTimestamp != nil {
			desc += ":terminating"
		}
		observed = append(observed, desc)
	}
	log.Info("plan", "uid", p.md.UID, "step", p.Reason, "create", p.Create, "delete", refs(p.Delete),
		"evict", refs(p.Evict), "updateInPlace", refs(p.UpdateInPlace), "updateRevision", p.update.Name,
		"target", p.towards.Name, "inPlaceSteps", len(p.steps), "pods", observed)
}

const maxLoggedPods = 20

// Abort to stable (on-failure Abort): the controller's part is deciding
// whether the rollout is aborted, and keeping the abort's record. The
// verdict is the status package's own (status.AbortDue: the last status
// said this rollout exceeded its progress deadline, after any retry); the
// record is AbortedRevisionAnnotation, written by the plan before any pod
// moves back (recordFirst), with one Warning event. It lives in metadata,
// not only in the Progressing condition: a status lost or rewritten (a
// restore, a status written by hand) must not resume a rollout known to
// fail, and the annotation survives where the condition may not. No new
// store: the annotation is read from the object as the freshness record
// has it, like the size record. The planner goes back to the current
// revision (rollout.Input.Aborted, rollout/abort.go); status says
// RolloutAborted. A failed canary analysis (a module's verdict, optin.Aborter) takes the same
// path, with or without on-failure Abort.

// aborting is what a sync reads once of the opt-ins that abort a rollout
// to the update revision: on-failure Abort and its retry (the abort
// module), and a module's verdict (optin.Aborter: the canary analysis).
type aborting struct {
	onFailure bool
	retriedAt time.Time
	// verdicts: a module's verdict may abort the rollout; cause is why one
	// aborts it now (zero when none does, or the revision is new this
	// sync), after when the next verdict is due.
	verdicts bool
	cause    optin.Cause
	after    time.Duration
}

// abortingOf is what o's opt-ins say of aborting the rollout to c's
// update revision.
func abortingOf(o *observation, c *claimed) aborting {
	a := abort.Of(o.optIn)
	ab := aborting{onFailure: a.OnFailure, retriedAt: a.RetriedAt}
	ab.verdicts, ab.cause, ab.after = optin.VerdictOf(o.optIn, c.update.Name)
	if c.newRevision {
		ab.cause = optin.Cause{}
	}
	return ab
}

// recorded says o's abort record names the update revision, with
// on-failure Abort or a verdict's module still set (removing the
// annotation resumes the rollout).
func (ab aborting) recorded(o *observation, update *appsv1.ControllerRevision, newRevision bool) bool {
	return (ab.onFailure || ab.verdicts) && update != nil && !newRevision && o.records.Aborted == update.Name
}

// now is the planner's Input.Aborted: the record says so, or a verdict is
// due now, the deadline's or a module's (the record is then written first).
func (ab aborting) now(o *observation, c *claimed) bool {
	return ab.recorded(o, c.update, c.newRevision) || ab.cause.Message != "" ||
		ab.onFailure && !c.newRevision && status.AbortDue(o.md, c.update.Name, ab.retriedAt)
}

// recordedAbort says o's abort record names update, as a sync with update
// as its update revision reads it (the status of a sync that made no plan).
func recordedAbort(o *observation, update *appsv1.ControllerRevision, newRevision bool) bool {
	if update == nil {
		return false
	}
	return abortingOf(o, &claimed{update: update, newRevision: newRevision}).recorded(o, update, newRevision)
}

// abortRecord adds to now the abort record's change (rec is md's records): the update revision
// when an abort takes effect now, a removal when the record names another
// revision (a new template, or one renumbered by going back to it). It
// reports whether it records a new abort (which must be written first).
func abortRecord(rec optin.Records, update *appsv1.ControllerRevision, newRevision, aborted bool, now map[string]string) bool {
	recorded, ok := rec.Aborted, rec.AbortRecorded
	switch {
	case aborted && recorded != update.Name:
		now[appsv1beta1.AbortedRevisionAnnotation] = update.Name
		return true
	case ok && (recorded != update.Name || newRevision):
		now[appsv1beta1.AbortedRevisionAnnotation] = ""
	}
	return false
}
