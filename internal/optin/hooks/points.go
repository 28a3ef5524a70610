package hooks

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
	"github.com/mydeployment-io/mydeployment-operator/internal/status"
)

// Owns implements optin.Owner: Jobs with HookLabel, the only ones the
// manager's cache holds (so it reads and writes Jobs only in the
// namespaces where it may create pods).
func (module) Owns() (client.Object, cache.ByObject) {
	req, err := labels.NewRequirement(HookLabel, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant key: never
	}
	return &batchv1.Job{}, cache.ByObject{Label: labels.NewSelector().Add(*req)}
}

// part is the module's long-lived part: the manager's cache, where it
// reads the hook Jobs.
type part struct{ cache client.Reader }

// Build implements optin.Builder: the part is the manager's cache
// (BuildEnv.Reader), read by every object's Read.
func (module) Build(_ context.Context, env optin.BuildEnv) (optin.Part, error) {
	return part{cache: env.Reader}, nil
}

// view is what a sync's Read found: the hook Jobs the object controls (by
// name; a Job of ours whose name is another's is taken), and what the
// object says of its rollout.
type view struct {
	jobs map[string]jobState
	// retried is the last `rollout retry` (optin.RetriedAtOf); aborted the
	// revision the abort record names.
	retried time.Time
	aborted string
	// complete is the revision that is current, with every pod updated
	// and available, as the object's status says ("" when none is);
	// first says it is the object's first revision (number 1): no
	// rollout led to it.
	complete string
	first    bool
	// reported is the hook failure the object's status reports
	// (ReplicaFailure HookFailed): announced already.
	reported string
	// rollback, when set, is the rollout a post hook under onFailure Abort
	// undoes: its Job of the current revision (from) failed, and the
	// pods go back to the revision before it by number (to).
	rollback *rollback
}

// rollback is a post hook's abort: from the revision whose post hook
// failed, to the one before it.
type rollback struct {
	from, to, cause string
}

// Read implements optin.Reader: the hook Jobs in the manager's cache,
// once it has caught up. A reconciler built without the module's part
// reads nothing, and the spec holds nothing back.
func (h *Hooks) Read(ctx context.Context, md *appsv1beta1.MyDeployment, env optin.ReadEnv) (optin.Spec, error) {
	p, ok := env.Parts[Name].(part)
	if !ok || p.cache == nil {
		return h, nil
	}
	var list batchv1.JobList
	if err := p.cache.List(ctx, &list, client.InNamespace(md.Namespace), client.HasLabels{HookLabel}); err != nil {
		return nil, fmt.Errorf("listing the hook Jobs of %s: %w", Annotation, err)
	}
	rec := optin.RecordsOf(md)
	v := &view{jobs: map[string]jobState{}, retried: optin.RetriedAtOf(env.Set), aborted: rec.Aborted,
		first: rec.Revision <= 1}
	for i := range list.Items {
		v.jobs[list.Items[i].Name] = stateOf(&list.Items[i], md.UID)
	}
	if completeOf(md) {
		v.complete = md.Status.CurrentRevision
	}
	for _, c := range md.Status.Conditions {
		if c.Type == appsv1beta1.ConditionReplicaFailure && c.Reason == ReasonHookFailed {
			v.reported = c.Message
		}
	}
	var err error
	if v.rollback, err = h.rollbackOf(ctx, p.cache, md, v); err != nil {
		return nil, err
	}
	out := *h
	out.view = v
	return &out, nil
}

// rollbackOf is the rollback of md's current revision when its post
// hook, under onFailure Abort, failed: to the revision before it by number
// among md's revisions in the cache (read only then); nil otherwise, or
// with no revision before it.
func (h *Hooks) rollbackOf(ctx context.Context, c client.Reader, md *appsv1beta1.MyDeployment, v *view) (*rollback, error) {
	from := md.Status.CurrentRevision
	if h.Post == nil || h.Post.OnFailure != Abort || from == "" {
		return nil, nil
	}
	name := JobName(h.object.Name, from, Post, v.retried)
	st := v.jobs[name]
	if st.phase != failed {
		return nil, nil
	}
	var list appsv1.ControllerRevisionList
	if err := c.List(ctx, &list, client.InNamespace(md.Namespace)); err != nil {
		return nil, fmt.Errorf("listing the revisions a failed post hook of %s goes back to: %w", Annotation, err)
	}
	var to *appsv1.ControllerRevision
	for i := range list.Items {
		r := &list.Items[i]
		if ref := metav1.GetControllerOfNoCopy(r); ref == nil || ref.UID != md.UID || r.Name == from {
			continue
		}
		if to == nil || r.Revision > to.Revision {
			to = r
		}
	}
	if to == nil {
		return nil, nil
	}
	return &rollback{from: from, to: to.Name, cause: failure(name, Post, st)}, nil
}

// rollsBack says the post hook's abort undoes the rollout to update, which
// is current.
func (h *Hooks) rollsBack(update, current string) bool {
	return h.view != nil && h.view.rollback != nil && h.view.rollback.from == update && current == update
}

// completeOf says md's status has its current revision rolled out: the
// generation observed, every pod of it and available.
func completeOf(md *appsv1beta1.MyDeployment) bool {
	s, want := md.Status, ptr.Deref(md.Spec.Replicas, 1)
	return s.CurrentRevision != "" && s.CurrentRevision == s.UpdateRevision && s.ObservedGeneration >= md.Generation &&
		s.Replicas == want && s.UpdatedReplicas == want && s.AvailableReplicas == want
}

// pre is the pre hook's Job of the rollout from current to update: its
// name and state; ok is false when none runs (no pre hook, a spec not
// read, no rollout: the object's first revision, or update current).
func (h *Hooks) pre(update, current string) (name string, st jobState, ok bool) {
	if h.Pre == nil || h.view == nil || current == "" || update == "" || current == update {
		return "", jobState{}, false
	}
	name = JobName(h.object.Name, update, Pre, h.view.retried)
	return name, h.view.jobs[name], true
}

// post is the post hook's Job of revision update once it is current and
// complete; ok is false when none runs.
func (h *Hooks) post(update string) (name string, st jobState, ok bool) {
	if h.Post == nil || h.view == nil || h.view.first || update == "" || h.view.complete != update {
		return "", jobState{}, false
	}
	name = JobName(h.object.Name, update, Post, h.view.retried)
	return name, h.view.jobs[name], true
}

// holds says the pre hook holds the rollout to update: its Job has not
// succeeded, and no abort sends the pods back (a failure under Abort, or
// an abort recorded, is the abort path's: it moves pods, not holds them).
func (h *Hooks) holds(update, current string) bool {
	_, st, ok := h.pre(update, current)
	switch {
	case !ok || st.phase == succeeded || h.view.aborted == update:
		return false
	case st.phase == failed && h.Pre.OnFailure == Abort:
		return false
	}
	return true
}

// stepPoint is the point of canary step index (from 0): "step<n>", n from 1.
func stepPoint(index int) string { return "step" + strconv.Itoa(index+1) }

// step is the hook of canary step index (from 0) of the rollout to
// update, its Job's name and state; ok is false without one (or a spec
// not read).
func (h *Hooks) step(update string, index int) (k Hook, name string, st jobState, ok bool) {
	if k, ok = h.Steps[index+1]; !ok || h.view == nil || update == "" {
		return Hook{}, "", jobState{}, false
	}
	name = JobName(h.object.Name, update, stepPoint(index), h.view.retried)
	return k, name, h.view.jobs[name], true
}

// stepEnds says canary step index of the rollout to update may end as far
// as hooks go: it has no hook, or its hook's Job succeeded.
func (h *Hooks) stepEnds(update string, index int) bool {
	_, _, st, ok := h.step(update, index)
	return !ok || st.phase == succeeded
}

// gate sets the planner's canary gate (rollout.AnalysisGate, shared with
// the analysis module, whose pass of a step it keeps only when hooks let
// the step end too): the step the canary record stands at ends only once
// its hook succeeded. A step without a hook is passed when recorded: the
// gate names one step, so each step without one costs the rollout one sync.
func (h *Hooks) gate(in *rollout.Input) {
	if len(h.Steps) == 0 || h.view == nil || in.Canary == nil {
		return
	}
	rec := in.Canary.State
	ends := rec.Revision == in.UpdateRevision && h.stepEnds(rec.Revision, rec.Index)
	switch {
	case !ends:
		in.Analysis = &rollout.AnalysisGate{}
	case in.Analysis == nil:
		in.Analysis = &rollout.AnalysisGate{Passed: rollout.CanaryState{Revision: rec.Revision, Index: rec.Index}}
	}
}

// PlanInput implements rollout.Planner: while the pre hook holds the
// rollout, the planner plans as for a paused object: no pod of the update
// revision is created, none updated in place, none of the old removed for
// the rollout, and scaling still works on the revisions the pods run
// (under either strategy and with canary steps, which a partition of
// every pod would not hold). A step hook gates its canary step (gate).
//
// A post hook under onFailure Abort whose Job failed rolls the current
// revision back: the planner's current revision is the one before it,
// which the abort (AbortCause) sends every pod back to.
func (h *Hooks) PlanInput(in *rollout.Input) {
	if h.holds(in.UpdateRevision, in.CurrentRevision) {
		in.Paused = true
	}
	h.gate(in)
	if h.rollsBack(in.UpdateRevision, in.CurrentRevision) {
		in.CurrentRevision = h.view.rollback.to
	}
}

// Writes implements optin.Writer: the Job of the pre hook of the rollout
// under way, of the hook of the canary step the plan holds once the
// step's pods are available (as an analysis holds it), and of the post
// hook of a revision current and complete,
// when the cache shows none of its name (nor an abort of the revision);
// and the deletes of the Jobs of revisions gone (cleanup).
// The Job is made from the hook's template Job, which act reads around
// the cache (it carries no label of ours).
func (h *Hooks) Writes(p optin.Planned) []optin.Write {
	var out []optin.Write
	if name, st, ok := h.pre(p.Update, p.Current); ok && st.phase == missing && h.view.aborted != p.Update {
		out = append(out, h.create(h.Pre, Pre, p.Update, name))
	}
	if name, st, ok := h.post(p.Update); ok && st.phase == missing && h.view.aborted != p.Update {
		out = append(out, h.create(h.Post, Post, p.Update, name))
	}
	if s := p.Step; s != nil && s.Held && s.Revision == p.Update && h.view != nil && h.view.aborted != p.Update {
		if k, name, st, ok := h.step(s.Revision, s.Index); ok && st.phase == missing {
			out = append(out, h.create(&k, stepPoint(s.Index), s.Revision, name))
		}
	}
	return append(out, h.cleanup(p)...)
}

// cleanup deletes the object's hook Jobs of revisions the plan does not
// keep (revisionHistoryLimit): the Jobs go with their revision, a failed
// one kept until then for its logs. Never those of the update or current
// revision, nor any while the plan names no revision kept.
func (h *Hooks) cleanup(p optin.Planned) []optin.Write {
	if h.view == nil || len(p.Kept) == 0 {
		return nil
	}
	kept := map[string]bool{revisionHash(p.Update): true, revisionHash(p.Current): true}
	for _, r := range p.Kept {
		kept[revisionHash(r)] = true
	}
	var out []optin.Write
	for _, name := range slices.Sorted(maps.Keys(h.view.jobs)) {
		if st := h.view.jobs[name]; st.phase != taken && st.revision != "" && !kept[st.revision] {
			job := &batchv1.Job{}
			job.Name, job.Namespace = name, h.object.Namespace
			out = append(out, optin.Write{Delete: job, Reason: ReasonHookFailed})
		}
	}
	return out
}

// create is the write that makes the Job name of hook k at point of
// revision from k's template Job.
func (h *Hooks) create(k *Hook, point, revision, name string) optin.Write {
	tmpl := &batchv1.Job{}
	tmpl.Name, tmpl.Namespace = k.Job, h.object.Namespace
	return optin.Write{
		From: tmpl,
		Create: func(from client.Object) (client.Object, error) {
			t, ok := from.(*batchv1.Job)
			if !ok {
				return nil, fmt.Errorf("the %s hook's template %q is not a Job", point, k.Job)
			}
			return NewJob(t, h.object, revision, point, name)
		},
		Reason: ReasonHookFailed,
	}
}

// ReportInput implements status.Reporter: a pre hook's Job running (or
// about to be made) is Progressing WaitingForHook, one that failed, or
// whose name is taken, Progressing False HookFailed while it holds the
// rollout (the abort path reports an abort); every hook failure is
// ReplicaFailure HookFailed naming the Job (failure), unless a pod write
// failed this sync. A post hook's abort makes the revision before the
// current one current again.
func (h *Hooks) ReportInput(in *status.Input) {
	if name, st, ok := h.pre(in.UpdateRevision, in.CurrentRevision); ok && in.Aborted == "" && h.view.aborted != in.UpdateRevision {
		switch {
		case st.phase == missing || st.phase == running:
			in.Waiting = &status.Waiting{Status: corev1.ConditionTrue, Reason: ReasonWaitingForHook,
				Message: fmt.Sprintf("waiting for Job %s (%s) to succeed", name, Pre)}
		case st.phase == taken || st.phase == failed && h.Pre.OnFailure == Hold:
			in.Waiting = &status.Waiting{Status: corev1.ConditionFalse, Reason: ReasonHookFailed,
				Message: failure(name, Pre, st) + "; `kubectl mydeployment rollout retry` runs it again"}
		}
	}
	h.reportStep(in)
	if msg := h.failure(in.UpdateRevision, in.CurrentRevision); msg != "" && in.Failure == nil {
		in.Failure = &status.Failure{Reason: ReasonHookFailed, Message: msg, Current: true}
	}
	if h.rollsBack(in.UpdateRevision, in.CurrentRevision) {
		// The revision rolled back is no longer current: the one before
		// it is, and the next syncs abort towards it as the record says.
		in.CurrentRevision = h.view.rollback.to
	}
}

// reportStep says what the hook of the canary step the plan holds is
// doing (Progressing WaitingForHook, or HookFailed under Hold); without a
// plan (in.Planned nil) the update revision does not become current while
// a step hook of it has not succeeded, as for an analysis.
func (h *Hooks) reportStep(in *status.Input) {
	if len(h.Steps) == 0 || h.view == nil || in.Aborted != "" || in.CurrentRevision == in.UpdateRevision {
		return
	}
	if in.Planned == nil {
		for n := range h.Steps {
			in.AnalysisHolds = in.AnalysisHolds || !h.stepEnds(in.UpdateRevision, n-1)
		}
		return
	}
	c := in.Canary
	if c == nil || !c.Analyzing || c.State.Revision != in.UpdateRevision {
		return
	}
	k, name, st, ok := h.step(c.State.Revision, c.State.Index)
	point := stepPoint(c.State.Index)
	switch {
	case !ok:
	case st.phase == missing || st.phase == running:
		in.Waiting = &status.Waiting{Status: corev1.ConditionTrue, Reason: ReasonWaitingForHook,
			Message: fmt.Sprintf("%s: waiting for Job %s (%s) to succeed", c.Message, name, point)}
	case st.phase == taken || st.phase == failed && k.OnFailure == Hold:
		in.Waiting = &status.Waiting{Status: corev1.ConditionFalse, Reason: ReasonHookFailed,
			Message: failure(name, point, st) + "; `kubectl mydeployment rollout retry` runs it again"}
	}
}

// failedStep is the first step hook of the rollout to update whose Job
// failed (or whose name is taken): its message and hook; "" for none.
func (h *Hooks) failedStep(update string) (string, Hook) {
	for _, n := range slices.Sorted(maps.Keys(h.Steps)) {
		if k, name, st, ok := h.step(update, n-1); ok && (st.phase == failed || st.phase == taken) {
			return failure(name, stepPoint(n-1), st), k
		}
	}
	return "", Hook{}
}

// failure is the failure of the hook of the rollout from current to
// update that the status reports: its pre hook's, or the post hook's of
// update once current; "" when none failed.
func (h *Hooks) failure(update, current string) string {
	if name, st, ok := h.pre(update, current); ok && (st.phase == failed || st.phase == taken) {
		return failure(name, Pre, st)
	}
	if msg, _ := h.failedStep(update); msg != "" && current != update {
		return msg
	}
	if name, st, ok := h.post(update); ok && (st.phase == failed || st.phase == taken) {
		return failure(name, Post, st)
	}
	if h.rollsBack(update, current) {
		return h.view.rollback.cause
	}
	return ""
}

// Events implements optin.Announcer: a hook's failure, once (the status
// the last sync wrote does not report it yet).
func (h *Hooks) Events(p optin.Planned) []optin.Event {
	if msg := h.failure(p.Update, p.Current); msg != "" && msg != h.view.reported {
		return []optin.Event{{Warning: true, Reason: ReasonHookFailed, Note: msg}}
	}
	return nil
}

// failure says why the hook at point whose Job is name failed.
func failure(name, point string, st jobState) string {
	if st.phase == taken {
		return fmt.Sprintf("Job %s (%s): name taken by a Job the MyDeployment does not control", name, point)
	}
	return fmt.Sprintf("Job %s (%s) failed: %s", name, point, st.why)
}

// AbortCause implements optin.Aborter: under onFailure Abort, the pre
// hook or a step hook of the rollout to revision whose Job failed, or the
// post hook of revision, current, whose Job failed. Its event is
// RolloutAborted (the failure has its own HookFailed event).
func (h *Hooks) AbortCause(revision string) optin.Cause {
	if msg := h.abortCause(revision); msg != "" {
		return optin.Cause{Reason: appsv1beta1.EventRolloutAborted, Message: "hook " + msg}
	}
	return optin.Cause{}
}

// abortCause is AbortCause's failure, "" for none.
func (h *Hooks) abortCause(revision string) string {
	if h.view != nil && h.view.rollback != nil && h.view.rollback.from == revision {
		return h.view.rollback.cause
	}
	if h.view == nil {
		return ""
	}
	if msg, k := h.failedStep(revision); msg != "" && k.OnFailure == Abort {
		return msg
	}
	if h.Pre == nil || h.Pre.OnFailure != Abort {
		return ""
	}
	name := JobName(h.object.Name, revision, Pre, h.view.retried)
	if st := h.view.jobs[name]; st.phase == failed {
		return failure(name, Pre, st)
	}
	return ""
}

// After implements optin.Aborter: a Job's events sync the object again,
// no clock does.
func (*Hooks) After() time.Duration { return 0 }

var (
	_ optin.Owner     = module{}
	_ optin.Reader    = (*Hooks)(nil)
	_ optin.Writer    = (*Hooks)(nil)
	_ optin.Announcer = (*Hooks)(nil)
	_ optin.Aborter   = (*Hooks)(nil)
	_ rollout.Planner = (*Hooks)(nil)
	_ status.Reporter = (*Hooks)(nil)
)
