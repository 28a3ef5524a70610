package chaos

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/hooks"
)

// Rollout hooks (issue 53) as a random change. kube-controller-manager's
// Job controller runs the hook Jobs, kwok completes their pods (its
// pod-complete stage: a Job's running pod Succeeded). A hook is made slow
// by a scheduling gate on its pod that the change removes after a while,
// failing by the same gate never removed and activeDeadlineSeconds 2 (the
// Job controller fails it: DeadlineExceeded). Whatever the kills and API
// faults, a hook's Job is made once per point, revision and retry, and no
// pod of the new revision (or of the step after a step hook) is older than
// its Job's success.

// hookVariant is what a hooks change does.
type hookVariant int

const (
	// hookPre: a pre hook that succeeds.
	hookPre hookVariant = iota
	// hookStepSlow: canary steps "1, 50%, 100%" and a hook at step 2 whose
	// pod is held for 2 s: step 2 must hold meanwhile.
	hookStepSlow
	// hookPreHeld: a pre hook that fails (onFailure Hold): held with no pod
	// of the new revision, until the template is fixed and the rollout
	// retried (retried-at, as kubectl mydeployment rollout retry writes it).
	hookPreHeld
	// hookPreAbort: a pre hook that fails under onFailure Abort: back to
	// stable, then reverted or fixed forward.
	hookPreAbort
	hookVariants
)

func (v hookVariant) String() string {
	return [...]string{"pre hook succeeds", "slow step hook", "pre hook fails, held and retried", "pre hook fails, aborted"}[v]
}

var (
	// hookTurn picks the variants in turn, so a phase's few hooks changes cover them.
	hookTurn     atomic.Int64
	hookOutcomes [hookVariants]atomic.Int64
)

// hookGate holds a hook Job's pod unscheduled until removed.
const hookGate = "chaos.mydeployment.io/hold"

// hookTemplate is a suspended template Job of d's namespace named name:
// gated (its pod held until the gate is removed), and failing (never
// released: the Job fails after 2 s).
func hookTemplate(ns, name string, gated, failing bool) *batchv1.Job {
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: batchv1.JobSpec{
			Suspend:      ptr.To(true),
			BackoffLimit: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy:                 corev1.RestartPolicyNever,
				TerminationGracePeriodSeconds: ptr.To[int64](0),
				Containers:                    []corev1.Container{{Name: "hook", Image: "registry.chaos.local/hook:v1"}},
			}},
		},
	}
	if gated || failing {
		j.Spec.Template.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: hookGate}}
	}
	if failing {
		j.Spec.ActiveDeadlineSeconds = ptr.To[int64](2)
	}
	return j
}

// putTemplate creates the template Job, replacing one of its name.
func (e *env) putTemplate(ctx context.Context, j *batchv1.Job) error {
	old := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: j.Name, Namespace: j.Namespace}}
	if err := e.c.Delete(ctx, old, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
		return err
	}
	deadline := time.Now().Add(e.changeTimeout)
	for {
		err := e.c.Create(ctx, j.DeepCopy())
		if err == nil || !apierrors.IsAlreadyExists(err) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// hookJobs are the hook Jobs of d's revision rev at point.
func (e *env) hookJobs(ctx context.Context, d *tracked, rev, point string) ([]batchv1.Job, error) {
	var list batchv1.JobList
	hash := rev[strings.LastIndex(rev, "-")+1:]
	err := e.c.List(ctx, &list, client.InNamespace(d.ns),
		client.MatchingLabels{hooks.HookLabel: point, hooks.RevisionHashLabel: hash})
	return list.Items, err
}

// jobDone is the Job's Complete or Failed condition type, "" while it runs.
func jobDone(j *batchv1.Job) batchv1.JobConditionType {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c.Type
		}
	}
	return ""
}

// hooksChange rolls d to a new image with a hook (the variant in turn),
// under the strategy's bounds, and removes the opt-in once converged.
func (e *env) hooksChange(ctx context.Context, d *tracked) error {
	v := hookVariant(hookTurn.Add(1)-1) % hookVariants
	if err := e.hook(ctx, d, v); err != nil {
		return fmt.Errorf("%s: %w", v, err)
	}
	hookOutcomes[v].Add(1)
	return nil
}

func (e *env) hook(ctx context.Context, d *tracked, v hookVariant) error {
	name := fmt.Sprintf("%s-%d", d.name, v)
	next := d.cur
	next.image++
	var value, steps string
	switch v {
	case hookPre:
		value = fmt.Sprintf(`{"pre":{"job":%q}}`, name)
	case hookStepSlow:
		value, steps = fmt.Sprintf(`{"steps":{"2":{"job":%q}}}`, name), "1, 50%, 100%"
	case hookPreHeld:
		value = fmt.Sprintf(`{"pre":{"job":%q}}`, name)
	case hookPreAbort:
		value = fmt.Sprintf(`{"pre":{"job":%q,"onFailure":"Abort"}}`, name)
	}
	if err := e.putTemplate(ctx, hookTemplate(d.ns, name, v == hookStepSlow, v == hookPreHeld || v == hookPreAbort)); err != nil {
		return err
	}
	e.w.setBounds(d.uid, d.inFlight(d.cur, next))
	stepsJSON := "null"
	if steps != "" {
		stepsJSON = fmt.Sprintf("%q", steps)
	}
	if err := e.patch(ctx, d, fmt.Sprintf(`{"metadata":{"annotations":{%q:%q,%q:%s}},"spec":{"template":{"spec":{"containers":%s}}}}`,
		hooks.Annotation, value, appsv1beta1.CanaryStepsAnnotation, stepsJSON, next.containers())); err != nil {
		return err
	}
	update, err := e.waitUpdateRevision(ctx, d)
	if err != nil {
		return err
	}
	point := hooks.Pre
	switch v {
	case hookPre:
		if err := e.preHolds(ctx, d, update); err != nil {
			return err
		}
	case hookStepSlow:
		point = "step2"
		if err := e.slowStep(ctx, d, update); err != nil {
			return err
		}
	case hookPreHeld:
		if err := e.heldByHook(ctx, d, update); err != nil {
			return err
		}
		// Fixed by its user, and retried as the plugin does it.
		if err := e.putTemplate(ctx, hookTemplate(d.ns, name, false, false)); err != nil {
			return err
		}
		if err := e.patch(ctx, d, fmt.Sprintf(`{"metadata":{"annotations":{%q:null,%q:%q}}}`, appsv1beta1.AbortedRevisionAnnotation,
			appsv1beta1.RetriedAtAnnotation, time.Now().UTC().Format(time.RFC3339))); err != nil {
			return err
		}
		if err := e.preHolds(ctx, d, update); err != nil {
			return err
		}
	case hookPreAbort:
		if err := e.waitAborted(ctx, d); err != nil {
			return err
		}
		if err := e.onlyJob(ctx, d, update, point, batchv1.JobFailed); err != nil {
			return err
		}
		next = d.cur // reverted
		if hookTurn.Load()%2 == 0 {
			next.image += 2 // fixed forward
		}
		e.w.setBounds(d.uid, d.inFlight(d.cur, next))
		if err := e.patch(ctx, d, fmt.Sprintf(`{"metadata":{"annotations":{%q:null}},"spec":{"template":{"spec":{"containers":%s}}}}`,
			hooks.Annotation, next.containers())); err != nil {
			return err
		}
	}
	if err := e.waitConverged(ctx, d, next); err != nil {
		return err
	}
	if v != hookPreAbort {
		if err := e.hookRanFirst(ctx, d, update, point, v == hookPreHeld); err != nil {
			return err
		}
	}
	d.cur = next
	e.w.setBounds(d.uid, d.steady(next))
	return e.patch(ctx, d, fmt.Sprintf(`{"metadata":{"annotations":{%q:null,%q:null}}}`, hooks.Annotation, appsv1beta1.CanaryStepsAnnotation))
}

// waitUpdateRevision waits until d's status names a new update revision
// of its generation, and returns it.
func (e *env) waitUpdateRevision(ctx context.Context, d *tracked) (string, error) {
	deadline := time.Now().Add(e.changeTimeout)
	for time.Now().Before(deadline) {
		if md, err := e.get(ctx, d); err == nil && md.Status.ObservedGeneration == md.Generation &&
			md.Status.UpdateRevision != "" && md.Status.UpdateRevision != md.Status.CurrentRevision {
			return md.Status.UpdateRevision, nil
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return "", fmt.Errorf("%s/%s: no new update revision within %v", d.ns, d.name, e.changeTimeout)
}

// heldByHook waits until d reports its pre hook failed (Progressing False
// HookFailed), and fails if a pod of update is seen meanwhile or for 1 s
// after.
func (e *env) heldByHook(ctx context.Context, d *tracked, update string) error {
	deadline := time.Now().Add(e.changeTimeout)
	var held time.Time
	for time.Now().Before(deadline) {
		if n := e.w.view(d.uid).perRevision[update]; n > 0 {
			return fmt.Errorf("%d pods of %s while its pre hook had not succeeded", n, update)
		}
		if md, err := e.get(ctx, d); err == nil && held.IsZero() {
			if c := progressing(md); c != nil && c.Status == corev1.ConditionFalse && c.Reason == hooks.ReasonHookFailed {
				held = time.Now()
			}
		}
		if !held.IsZero() && time.Since(held) > time.Second {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s/%s: not held by its failed pre hook within %v", d.ns, d.name, e.changeTimeout)
}

// preHolds watches d until a pre hook Job of update has succeeded: a pod
// of update seen before that (on the watcher's view, read before the
// Jobs) is a failure. It counts pods updated in place, which keep their
// creation time, as pods created.
func (e *env) preHolds(ctx context.Context, d *tracked, update string) error {
	deadline := time.Now().Add(e.changeTimeout)
	for time.Now().Before(deadline) {
		n := e.w.view(d.uid).perRevision[update]
		jobs, err := e.hookJobs(ctx, d, update, hooks.Pre)
		if err != nil {
			continue // an API fault: look again
		}
		if slices.ContainsFunc(jobs, func(j batchv1.Job) bool { return jobDone(&j) == batchv1.JobComplete }) {
			return nil
		}
		if n > 0 {
			return fmt.Errorf("%d pods of %s while its pre hook had not succeeded: %s", n, update, jobStates(jobs))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s/%s: the pre hook of %s did not succeed within %v", d.ns, d.name, update, e.changeTimeout)
}

// slowStep waits for the Job of the step-2 hook of update, checks for 2 s
// that no more pods of update come while it is held, then releases its pod.
func (e *env) slowStep(ctx context.Context, d *tracked, update string) error {
	deadline := time.Now().Add(e.changeTimeout)
	var jobs []batchv1.Job
	for len(jobs) == 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s/%s: no step 2 hook Job within %v", d.ns, d.name, e.changeTimeout)
		}
		time.Sleep(100 * time.Millisecond)
		var err error
		if jobs, err = e.hookJobs(ctx, d, update, "step2"); err != nil {
			jobs = nil // an API fault: look again
		}
	}
	at := e.w.view(d.uid).perRevision[update]
	for until := time.Now().Add(2 * time.Second); time.Now().Before(until); time.Sleep(100 * time.Millisecond) {
		if n := e.w.view(d.uid).perRevision[update]; n > at {
			return fmt.Errorf("step 2 held by its hook: %d pods of %s, then %d", at, update, n)
		}
	}
	return e.release(ctx, d, jobs[0].Name)
}

// release removes the scheduling gate from the pod of the Job named job.
func (e *env) release(ctx context.Context, d *tracked, job string) error {
	deadline := time.Now().Add(e.changeTimeout)
	for time.Now().Before(deadline) {
		var pods corev1.PodList
		if err := e.c.List(ctx, &pods, client.InNamespace(d.ns), client.MatchingLabels{batchv1.JobNameLabel: job}); err == nil {
			released := len(pods.Items) > 0
			for i := range pods.Items {
				p := &pods.Items[i]
				if len(p.Spec.SchedulingGates) == 0 {
					continue
				}
				if err := e.c.Patch(ctx, p, client.RawPatch(types.JSONPatchType, []byte(`[{"op":"remove","path":"/spec/schedulingGates"}]`))); err != nil {
					released = false
				}
			}
			if released {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("the pod of Job %s/%s not released within %v", d.ns, job, e.changeTimeout)
}

// onlyJob checks that point of update has one Job, ended as want.
func (e *env) onlyJob(ctx context.Context, d *tracked, update, point string, want batchv1.JobConditionType) error {
	jobs, err := e.hookJobs(ctx, d, update, point)
	if err != nil {
		return err
	}
	if len(jobs) != 1 || jobDone(&jobs[0]) != want {
		return fmt.Errorf("%s hook of %s: want one Job %s, got %s", point, update, want, jobStates(jobs))
	}
	return nil
}

func jobStates(jobs []batchv1.Job) string {
	var out []string
	for i := range jobs {
		out = append(out, fmt.Sprintf("%s %q", jobs[i].Name, jobDone(&jobs[i])))
	}
	return "[" + strings.Join(out, ", ") + "]"
}

// hookRanFirst checks, once d has converged on update, that point's hook
// ran once (twice, the first failed, when retried) and that no pod of
// update the hook gates is older than its Job's success: for pre every
// pod of update, for step 2 those beyond the step's. Not for pods updated
// in place, whose creation times are older than any rollout (preHolds
// and slowStep watch those as the rollout goes).
func (e *env) hookRanFirst(ctx context.Context, d *tracked, update, point string, retried bool) error {
	jobs, err := e.hookJobs(ctx, d, update, point)
	if err != nil {
		return err
	}
	slices.SortFunc(jobs, func(a, b batchv1.Job) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
	want := []batchv1.JobConditionType{batchv1.JobComplete}
	if retried {
		want = []batchv1.JobConditionType{batchv1.JobFailed, batchv1.JobComplete}
	}
	var got []batchv1.JobConditionType
	for i := range jobs {
		got = append(got, jobDone(&jobs[i]))
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("%s hook of %s: Jobs %s, want %v", point, update, jobStates(jobs), want)
	}
	done := jobs[len(jobs)-1].Status.CompletionTime
	if d.inPlace {
		return nil
	}
	if done == nil {
		return fmt.Errorf("%s hook of %s: Job %s complete without a completion time", point, update, jobs[len(jobs)-1].Name)
	}
	var pods corev1.PodList
	if err := e.c.List(ctx, &pods, client.InNamespace(d.ns),
		client.MatchingLabels{"app": d.name, appsv1beta1.RevisionLabel: update}); err != nil {
		return err
	}
	var early []string
	for _, p := range pods.Items {
		if p.CreationTimestamp.Before(done) {
			early = append(early, p.Name)
		}
	}
	// Step 2 of "1, 50%, 100%" may have made its pods before: at most the step's.
	allowed := 0
	if point != hooks.Pre {
		allowed = (d.cur.replicas + 1) / 2
	}
	if len(early) > allowed {
		return fmt.Errorf("%s hook of %s succeeded at %s, but %d pods of it are older: %v", point, update, done, len(early), early)
	}
	return nil
}

// noteHooks adds the hooks changes' outcomes to the figures.
func noteHooks() {
	var parts []string
	for v := range hookVariants {
		if n := hookOutcomes[v].Load(); n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", v, n))
		}
	}
	if len(parts) > 0 {
		figures.note("rollout hooks (Jobs run by kube-controller-manager, their pods completed by kwok): %s", strings.Join(parts, ", "))
	}
}
