package hooks

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
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
	out := *h
	out.view = v
	return &out, nil
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

// PlanInput implements rollout.Planner: while the pre hook holds the
// rollout, the planner plans as for a paused object: no pod of the update
// revision is created, none updated in place, none of the old removed for
// the rollout, and scaling still works on the revisions the pods run
// (under either strategy and with canary steps, which a partition of
// every pod would not hold).
func (h *Hooks) PlanInput(in *rollout.Input) {
	if h.holds(in.UpdateRevision, in.CurrentRevision) {
		in.Paused = true
	}
}

// Writes implements optin.Writer: the Job of the pre hook of the rollout
// under way, and of the post hook of a revision current and complete,
// when the cache shows none of its name (nor an abort of the revision).
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
// whose name is taken, is ReplicaFailure HookFailed naming it, and under
// Hold Progressing False HookFailed too (the abort path reports an
// abort); a post hook's failure is ReplicaFailure HookFailed. A failure
// of a pod write this sync is reported first.
func (h *Hooks) ReportInput(in *status.Input) {
	if name, st, ok := h.pre(in.UpdateRevision, in.CurrentRevision); ok && in.Aborted == "" && h.view.aborted != in.UpdateRevision {
		switch st.phase {
		case missing, running:
			in.Waiting = &status.Waiting{Status: corev1.ConditionTrue, Reason: ReasonWaitingForHook,
				Message: fmt.Sprintf("waiting for Job %s (%s) to succeed", name, Pre)}
		case failed, taken:
			msg := failure(name, Pre, st)
			if h.Pre.OnFailure == Hold || st.phase == taken {
				in.Waiting = &status.Waiting{Status: corev1.ConditionFalse, Reason: ReasonHookFailed,
					Message: msg + "; `kubectl mydeployment rollout retry` runs it again"}
			}
			report(in, msg)
		}
	}
	if name, st, ok := h.post(in.UpdateRevision); ok && (st.phase == failed || st.phase == taken) {
		report(in, failure(name, Post, st))
	}
}

// report sets in's failure to HookFailed with msg, unless a pod write
// failed this sync.
func report(in *status.Input, msg string) {
	if in.Failure == nil {
		in.Failure = &status.Failure{Reason: ReasonHookFailed, Message: msg}
	}
}

// failure says why the hook at point whose Job is name failed.
func failure(name, point string, st jobState) string {
	if st.phase == taken {
		return fmt.Sprintf("Job %s (%s): name taken by a Job the MyDeployment does not control", name, point)
	}
	return fmt.Sprintf("Job %s (%s) failed: %s", name, point, st.why)
}

// AbortCause implements optin.Aborter: under onFailure Abort, the pre
// hook of the rollout to revision whose Job failed.
func (h *Hooks) AbortCause(revision string) string {
	if h.Pre == nil || h.Pre.OnFailure != Abort || h.view == nil {
		return ""
	}
	name := JobName(h.object.Name, revision, Pre, h.view.retried)
	if st := h.view.jobs[name]; st.phase == failed {
		return "hook " + failure(name, Pre, st)
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
	_ optin.Aborter   = (*Hooks)(nil)
	_ rollout.Planner = (*Hooks)(nil)
	_ status.Reporter = (*Hooks)(nil)
)
