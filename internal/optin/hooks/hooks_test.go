package hooks

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
	"github.com/mydeployment-io/mydeployment-operator/internal/status"
)

func object(strategy appsv1.DeploymentStrategyType, annotations map[string]string) *appsv1beta1.MyDeployment {
	return &appsv1beta1.MyDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-1", Annotations: annotations},
		Spec:       appsv1beta1.MyDeploymentSpec{RolloutSpec: appsv1beta1.RolloutSpec{Strategy: appsv1.DeploymentStrategy{Type: strategy}}},
	}
}

// TestParse: every value that can never work is one error naming the
// annotation and the field; onFailure defaults to Hold (pre) and Report
// (post), or to Abort under the object's on-failure Abort.
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, value, onFailure string
		strategy               appsv1.DeploymentStrategyType
		pre, post              string // "job/onFailure"; "" for none
		err                    string
	}{
		{name: "pre", value: `{"pre":{"job":"db-migrate"}}`, pre: "db-migrate/Hold"},
		{name: "pre abort", value: `{"pre":{"job":"db-migrate","onFailure":"Abort"}}`, pre: "db-migrate/Abort"},
		{name: "post", value: `{"post":{"job":"notify"}}`, post: "notify/Report"},
		{name: "on-failure Abort is the default", value: `{"pre":{"job":"m"},"post":{"job":"n"}}`, onFailure: "Abort",
			pre: "m/Abort", post: "n/Abort"},
		{name: "own onFailure beats the object's", value: `{"pre":{"job":"m","onFailure":"Hold"}}`, onFailure: "Abort", pre: "m/Hold"},
		{name: "pre hold with Recreate", value: `{"pre":{"job":"m"}}`, strategy: appsv1.RecreateDeploymentStrategyType, pre: "m/Hold"},
		{name: "not JSON", value: `pre: m`, err: "must be a JSON object of pre, steps and post"},
		{name: "unknown field", value: `{"pre":{"job":"m"},"preStop":{"job":"x"}}`, err: `unknown field "preStop"`},
		{name: "unknown hook field", value: `{"pre":{"job":"m","timeout":"1m"}}`, err: `unknown field "timeout"`},
		{name: "two objects", value: `{"pre":{"job":"m"}}{}`, err: "must be one JSON object"},
		{name: "no hook", value: `{}`, err: "names no hook"},
		{name: "no job", value: `{"pre":{}}`, err: `pre.job: "" is not the name of a Job`},
		{name: "job not a DNS label", value: `{"post":{"job":"Db_Migrate"}}`, err: `post.job: "Db_Migrate" is not the name of a Job`},
		{name: "pre Report", value: `{"pre":{"job":"m","onFailure":"Report"}}`, err: `pre.onFailure: "Report" is not supported: want Hold or Abort`},
		{name: "post Hold", value: `{"post":{"job":"m","onFailure":"Hold"}}`, err: `post.onFailure: "Hold" is not supported: want Report or Abort`},
		{name: "step not a number", value: `{"steps":{"two":{"job":"s"}}}`, err: `steps: "two" is not a canary step`},
		{name: "step zero", value: `{"steps":{"0":{"job":"s"}}}`, err: `steps: "0" is not a canary step`},
		{name: "step hooks without canary steps", value: `{"steps":{"2":{"job":"smoke"}}}`,
			err: "step hooks need apps.mydeployment.io/canary-steps"},
		{name: "abort with Recreate", value: `{"pre":{"job":"m","onFailure":"Abort"}}`, strategy: appsv1.RecreateDeploymentStrategyType,
			err: "onFailure Abort needs spec.strategy.type RollingUpdate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ann := map[string]string{Annotation: tc.value}
			if tc.onFailure != "" {
				ann[appsv1beta1.OnFailureAnnotation] = tc.onFailure
			}
			spec, errs := Module.Parse(object(tc.strategy, ann))
			if tc.err != "" {
				if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.err) ||
					!strings.Contains(errs[0].Error(), "metadata.annotations["+Annotation+"]") {
					t.Fatalf("want one error naming %s with %q, got %v", Annotation, tc.err, errs)
				}
				return
			}
			if len(errs) > 0 {
				t.Fatalf("want no error, got %v", errs)
			}
			h := spec.(*Hooks)
			if got := hookString(h.Pre); got != tc.pre {
				t.Errorf("pre: want %q, got %q", tc.pre, got)
			}
			if got := hookString(h.Post); got != tc.post {
				t.Errorf("post: want %q, got %q", tc.post, got)
			}
		})
	}
	if spec, errs := Module.Parse(object("", nil)); spec != nil || errs != nil {
		t.Errorf("no annotation: want no spec and no error, got %v, %v", spec, errs)
	}
}

func hookString(h *Hook) string {
	if h == nil {
		return ""
	}
	return h.Job + "/" + h.OnFailure
}

// TestJobName: the object, the revision's hash, the point and the retry;
// at most 63 characters, a valid name, the same for the same inputs.
func TestJobName(t *testing.T) {
	retried := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if got := JobName("web", "web-7f9c", Pre, time.Time{}); got != "web-7f9c-pre" {
		t.Errorf("want web-7f9c-pre, got %s", got)
	}
	again := JobName("web", "web-7f9c", Pre, retried)
	if !strings.HasPrefix(again, "web-7f9c-pre-r") || again != JobName("web", "web-7f9c", Pre, retried) {
		t.Errorf("a retry: want a stable name with -r<hash>, got %s", again)
	}
	if other := JobName("web", "web-7f9c", Pre, retried.Add(time.Second)); other == again {
		t.Errorf("two retries share the name %s", other)
	}
	long := strings.Repeat("a", 61) + "." + strings.Repeat("b", 100)
	for _, name := range []string{JobName(long, long[:52]+"-5d8b9c6f4d", Post, retried), JobName(long, "x-5d8b9c6f4d", Pre, time.Time{})} {
		if len(name) > 63 || len(validation.IsDNS1123Subdomain(name)) > 0 || len(validation.IsValidLabelValue(name)) > 0 {
			t.Errorf("%s (%d characters) is not a valid Job name and label value", name, len(name))
		}
	}
}

func template() *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "db-migrate", Namespace: "ns", UID: "tmpl-uid",
			Labels: map[string]string{"team": "db", "job-name": "db-migrate"}},
		Spec: batchv1.JobSpec{
			Suspend: ptr.To(true), TTLSecondsAfterFinished: ptr.To[int32](60), BackoffLimit: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{batchv1.ControllerUidLabel: "tmpl-uid"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "migrate", batchv1.ControllerUidLabel: "tmpl-uid",
					batchv1.JobNameLabel: "db-migrate", "controller-uid": "tmpl-uid"}},
				Spec: corev1.PodSpec{
					InitContainers: []corev1.Container{{Name: "wait", Env: []corev1.EnvVar{{Name: EnvHook, Value: "stale"}}}},
					Containers:     []corev1.Container{{Name: "migrate", Env: []corev1.EnvVar{{Name: "DB", Value: "main"}}}},
				},
			},
		},
	}
}

// TestNewJob: the template's spec, unsuspended, without its selector,
// the Job controller's labels or a time to live; our labels, owner and env.
func TestNewJob(t *testing.T) {
	o := objectRef{Name: "web", Namespace: "ns", UID: "uid-1"}
	job, err := NewJob(template(), o, "web-7f9c", Pre, "web-7f9c-pre")
	if err != nil {
		t.Fatal(err)
	}
	s := job.Spec
	switch {
	case job.Name != "web-7f9c-pre" || job.Namespace != "ns":
		t.Errorf("name: got %s/%s", job.Namespace, job.Name)
	case job.Labels[HookLabel] != Pre || job.Labels[RevisionHashLabel] != "7f9c" || job.Labels["team"] != "db" || job.Labels["job-name"] != "":
		t.Errorf("labels: got %v", job.Labels)
	case len(job.OwnerReferences) != 1 || job.OwnerReferences[0].UID != "uid-1" || !ptr.Deref(job.OwnerReferences[0].Controller, false) ||
		job.OwnerReferences[0].Kind != "MyDeployment":
		t.Errorf("owner: got %v", job.OwnerReferences)
	case ptr.Deref(s.Suspend, true) || s.Selector != nil || s.TTLSecondsAfterFinished != nil || ptr.Deref(s.BackoffLimit, 0) != 2:
		t.Errorf("spec: want unsuspended, no selector, no TTL, backoffLimit kept; got %+v", s)
	case len(s.Template.Labels) != 1 || s.Template.Labels["app"] != "migrate":
		t.Errorf("template labels: want only app, got %v", s.Template.Labels)
	}
	want := map[string]string{EnvName: "web", EnvRevision: "web-7f9c", EnvHook: Pre}
	for _, c := range append(s.Template.Spec.InitContainers, s.Template.Spec.Containers...) {
		got := map[string]string{}
		for _, e := range c.Env {
			if _, dup := got[e.Name]; dup {
				t.Errorf("container %s: %s twice", c.Name, e.Name)
			}
			got[e.Name] = e.Value
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("container %s: %s = %q, want %q", c.Name, k, got[k], v)
			}
		}
	}
	if tmpl := template(); tmpl.Spec.Selector == nil || !ptr.Deref(tmpl.Spec.Suspend, false) {
		t.Error("the template was modified")
	}
	running := template()
	running.Spec.Suspend = nil
	if _, err := NewJob(running, o, "web-7f9c", Pre, "web-7f9c-pre"); err == nil || !strings.Contains(err.Error(), "not suspended") {
		t.Errorf("a template that is not suspended: want refused, got %v", err)
	}
}

// read is h as Read leaves it with jobs in the cache.
func read(h *Hooks, v *view) *Hooks {
	out := *h
	out.view = v
	return &out
}

func parsed(t *testing.T, value string) *Hooks {
	t.Helper()
	spec, errs := Module.Parse(object("", map[string]string{Annotation: value}))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return spec.(*Hooks)
}

// TestPreHook: the pre hook of a rollout holds it (as paused) until its
// Job succeeded, is written once the cache shows no Job of its name, and
// says so in the status; a failure holds (Hold) or aborts (Abort).
func TestPreHook(t *testing.T) {
	const cur, upd, job = "web-1111", "web-2222", "web-2222-pre"
	for _, tc := range []struct {
		name      string
		value     string
		jobs      map[string]jobState
		aborted   string
		current   string
		hold      bool
		write     bool
		waiting   string // Progressing reason; "" for none
		failure   bool
		abortedBy bool
	}{
		{name: "no Job yet", value: `{"pre":{"job":"m"}}`, hold: true, write: true, waiting: ReasonWaitingForHook},
		{name: "running", value: `{"pre":{"job":"m"}}`, jobs: map[string]jobState{job: {phase: running}}, hold: true, waiting: ReasonWaitingForHook},
		{name: "succeeded", value: `{"pre":{"job":"m"}}`, jobs: map[string]jobState{job: {phase: succeeded}}},
		{name: "failed, Hold", value: `{"pre":{"job":"m"}}`, jobs: map[string]jobState{job: {phase: failed, why: "BackoffLimitExceeded"}},
			hold: true, waiting: ReasonHookFailed, failure: true},
		{name: "name taken", value: `{"pre":{"job":"m","onFailure":"Abort"}}`, jobs: map[string]jobState{job: {phase: taken}},
			hold: true, waiting: ReasonHookFailed, failure: true},
		{name: "failed, Abort", value: `{"pre":{"job":"m","onFailure":"Abort"}}`, jobs: map[string]jobState{job: {phase: failed}},
			failure: true, abortedBy: true},
		{name: "aborted: no new Job", value: `{"pre":{"job":"m","onFailure":"Abort"}}`, aborted: upd},
		{name: "the first revision: no rollout", value: `{"pre":{"job":"m"}}`, current: upd},
		{name: "post only", value: `{"post":{"job":"n"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			current := cur
			if tc.current != "" {
				current = tc.current
			}
			h := read(parsed(t, tc.value), &view{jobs: tc.jobs, aborted: tc.aborted})
			in := rollout.Input{UpdateRevision: upd, CurrentRevision: current}
			h.PlanInput(&in)
			if in.Paused != tc.hold {
				t.Errorf("hold: want %v, got %v", tc.hold, in.Paused)
			}
			writes := h.Writes(optin.Planned{Update: upd, Current: current})
			if (len(writes) == 1) != tc.write || len(writes) > 1 {
				t.Fatalf("writes: want one %v, got %d", tc.write, len(writes))
			}
			if tc.write {
				made, err := writes[0].Create(template())
				if err != nil || made.GetName() != job || writes[0].From.GetName() != "m" || writes[0].Reason != ReasonHookFailed {
					t.Errorf("want Job %s from template m, got %v, %v", job, made, err)
				}
			}
			st := status.Input{UpdateRevision: upd, CurrentRevision: current}
			h.ReportInput(&st)
			switch {
			case tc.waiting == "" && st.Waiting != nil, tc.waiting != "" && (st.Waiting == nil || st.Waiting.Reason != tc.waiting):
				t.Errorf("waiting: want %q, got %+v", tc.waiting, st.Waiting)
			case tc.waiting != "" && !strings.Contains(st.Waiting.Message, job):
				t.Errorf("waiting: want the Job named, got %q", st.Waiting.Message)
			case tc.failure != (st.Failure != nil && st.Failure.Reason == ReasonHookFailed && strings.Contains(st.Failure.Message, job)):
				t.Errorf("failure: want %v naming %s, got %+v", tc.failure, job, st.Failure)
			}
			if cause := h.AbortCause(upd); (cause.Message != "") != tc.abortedBy {
				t.Errorf("abort cause: want %v, got %q", tc.abortedBy, cause)
			}
		})
	}
}

// TestPostHook: made once the revision is current and complete, not for
// the object's first revision; its failure is reported.
func TestPostHook(t *testing.T) {
	const upd, job = "web-2222", "web-2222-post"
	h := parsed(t, `{"post":{"job":"n"}}`)
	if w := read(h, &view{complete: upd}).Writes(optin.Planned{Update: upd, Current: upd}); len(w) != 1 {
		t.Fatalf("complete: want the post Job written, got %d writes", len(w))
	}
	if w := read(h, &view{complete: upd, first: true}).Writes(optin.Planned{Update: upd, Current: upd}); len(w) != 0 {
		t.Errorf("the first revision: want no post hook, got %d writes", len(w))
	}
	if w := read(h, &view{}).Writes(optin.Planned{Update: upd, Current: upd}); len(w) != 0 {
		t.Errorf("not complete: want no post hook, got %d writes", len(w))
	}
	st := status.Input{UpdateRevision: upd, CurrentRevision: upd}
	read(h, &view{complete: upd, jobs: map[string]jobState{job: {phase: failed, why: "DeadlineExceeded"}}}).ReportInput(&st)
	if st.Failure == nil || !strings.Contains(st.Failure.Message, job+" (post) failed: DeadlineExceeded") || st.Waiting != nil {
		t.Errorf("want the post Job's failure reported and nothing waiting, got %+v, %+v", st.Failure, st.Waiting)
	}
}

// TestStateOf: the Job's conditions, and a Job of another owner is taken.
func TestStateOf(t *testing.T) {
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{UID: "uid-1", Controller: ptr.To(true)}}}}
	if got := stateOf(job, "uid-1"); got.phase != running {
		t.Errorf("no condition: want running, got %v", got)
	}
	if got := stateOf(job, "uid-2"); got.phase != taken {
		t.Errorf("another's: want taken, got %v", got)
	}
	job.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit"}}
	if got := stateOf(job, "uid-1"); got.phase != failed || got.why != "BackoffLimitExceeded: Job has reached the specified backoff limit" {
		t.Errorf("failed: got %+v", got)
	}
	job.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
	if got := stateOf(job, "uid-1"); got.phase != succeeded {
		t.Errorf("complete: got %+v", got)
	}
}

// TestReadAndRollback: Read takes the object's hook Jobs from the cache;
// a post hook under onFailure Abort whose Job failed rolls the current
// revision back to the one before it by number, through the abort.
func TestReadAndRollback(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	md := object("", map[string]string{Annotation: `{"post":{"job":"n","onFailure":"Abort"}}`, appsv1beta1.RevisionAnnotation: "3"})
	md.Spec.Replicas = ptr.To[int32](2)
	md.Status = appsv1beta1.MyDeploymentStatus{CurrentRevision: "web-3333", UpdateRevision: "web-3333",
		Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2}
	owned := []metav1.OwnerReference{{UID: md.UID, Controller: ptr.To(true)}}
	rev := func(name string, n int64, owners []metav1.OwnerReference) *appsv1.ControllerRevision {
		return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, OwnerReferences: owners}, Revision: n}
	}
	failedJob := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-3333-post", Labels: map[string]string{HookLabel: Post}, OwnerReferences: owned},
		Status:     batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "DeadlineExceeded"}}},
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(failedJob,
		rev("web-1111", 1, owned), rev("web-2222", 2, owned), rev("web-3333", 3, owned), rev("other-9999", 9, nil)).Build()
	spec, errs := Module.Parse(md)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	got, err := spec.(*Hooks).Read(context.Background(), md, optin.ReadEnv{Parts: map[string]optin.Part{Name: part{cache: c}}})
	if err != nil {
		t.Fatal(err)
	}
	h := got.(*Hooks)
	in := rollout.Input{UpdateRevision: "web-3333", CurrentRevision: "web-3333", Revisions: []string{"web-1111", "web-2222"}}
	h.PlanInput(&in)
	if in.CurrentRevision != "web-2222" || in.Paused {
		t.Errorf("plan: want the current revision the one before (web-2222), not paused; got %q, %v", in.CurrentRevision, in.Paused)
	}
	if cause := h.AbortCause("web-3333"); !strings.Contains(cause.Message, "Job web-3333-post (post) failed: DeadlineExceeded") ||
		cause.Reason != appsv1beta1.EventRolloutAborted {
		t.Errorf("abort cause: got %q", cause)
	}
	st := status.Input{UpdateRevision: "web-3333", CurrentRevision: "web-3333", Aborted: "web-3333"}
	h.ReportInput(&st)
	if st.CurrentRevision != "web-2222" || st.Failure == nil || st.Failure.Reason != ReasonHookFailed {
		t.Errorf("status: want web-2222 current and HookFailed, got %q, %+v", st.CurrentRevision, st.Failure)
	}
	if w := h.Writes(optin.Planned{Update: "web-3333", Current: "web-3333"}); len(w) != 0 {
		t.Errorf("the post Job exists: want no write, got %d", len(w))
	}
	if cause := spec.(*Hooks).AbortCause("web-3333"); cause != (optin.Cause{}) {
		t.Errorf("a spec not read: want no abort, got %q", cause)
	}
}

// TestEvents: a hook's failure is announced once: not when the status the
// last sync wrote reports it already.
func TestEvents(t *testing.T) {
	const cur, upd, job = "web-1111", "web-2222", "web-2222-pre"
	h := parsed(t, `{"pre":{"job":"m"}}`)
	jobs := map[string]jobState{job: {phase: failed, why: "BackoffLimitExceeded"}}
	p := optin.Planned{Update: upd, Current: cur}
	ev := read(h, &view{jobs: jobs}).Events(p)
	if len(ev) != 1 || !ev[0].Warning || ev[0].Reason != ReasonHookFailed || ev[0].Note != "Job "+job+" (pre) failed: BackoffLimitExceeded" {
		t.Fatalf("want one HookFailed warning naming the Job, got %+v", ev)
	}
	if ev := read(h, &view{jobs: jobs, reported: ev[0].Note}).Events(p); len(ev) != 0 {
		t.Errorf("reported already: want no event, got %+v", ev)
	}
	if ev := read(h, &view{jobs: map[string]jobState{job: {phase: running}}}).Events(p); len(ev) != 0 {
		t.Errorf("running: want no event, got %+v", ev)
	}
}

// TestCleanup: the Jobs of revisions the plan does not keep are deleted,
// never those of the update or current revision, another's, or any while
// no revision is named kept.
func TestCleanup(t *testing.T) {
	h := read(parsed(t, `{"pre":{"job":"m"}}`), &view{jobs: map[string]jobState{
		"web-0000-pre": {phase: failed, revision: "0000"}, "web-0000-pre-rx": {phase: succeeded, revision: "0000"},
		"web-1111-pre": {phase: succeeded, revision: "1111"}, "web-2222-pre": {phase: running, revision: "2222"},
		"web-3333-pre": {phase: succeeded, revision: "3333"}, "web-9999-pre": {phase: taken},
	}})
	var deleted []string
	for _, w := range h.Writes(optin.Planned{Update: "web-2222", Current: "web-1111", Kept: []string{"web-3333"}}) {
		if w.Delete != nil {
			deleted = append(deleted, w.Delete.GetName())
			if w.Delete.GetNamespace() != "ns" {
				t.Errorf("%s: namespace %q", w.Delete.GetName(), w.Delete.GetNamespace())
			}
		}
	}
	if want := []string{"web-0000-pre", "web-0000-pre-rx"}; !slices.Equal(deleted, want) {
		t.Errorf("want %v deleted, got %v", want, deleted)
	}
	if w := h.Writes(optin.Planned{Update: "web-2222", Current: "web-1111"}); len(w) != 0 {
		t.Errorf("no revision named kept: want no delete, got %d writes", len(w))
	}
}

// TestStepHook: the canary step the record stands at ends only once its
// hook's Job succeeded (a step without a hook at once), beside an
// analysis' pass; the Job is made once the plan holds the step (its pods
// available), and the status says what it waits for.
func TestStepHook(t *testing.T) {
	const cur, upd, job = "web-1111", "web-2222", "web-2222-step2"
	spec, errs := Module.Parse(object("", map[string]string{Annotation: `{"steps":{"2":{"job":"smoke","onFailure":"Abort"}}}`,
		appsv1beta1.CanaryStepsAnnotation: "50%, 100%"}))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	h := spec.(*Hooks)
	at := func(index int, analysis *rollout.AnalysisGate) rollout.Input {
		return rollout.Input{UpdateRevision: upd, CurrentRevision: cur, Analysis: analysis,
			Canary: &rollout.Canary{State: rollout.CanaryState{Revision: upd, Index: index}}}
	}
	passed := func(i int) *rollout.AnalysisGate {
		return &rollout.AnalysisGate{Passed: rollout.CanaryState{Revision: upd, Index: i}}
	}
	for _, tc := range []struct {
		name     string
		jobs     map[string]jobState
		index    int
		analysis *rollout.AnalysisGate
		want     *rollout.AnalysisGate
	}{
		{name: "a step without a hook ends", index: 0, want: passed(0)},
		{name: "the hook's step holds", index: 1, want: &rollout.AnalysisGate{}},
		{name: "the hook's Job running holds", index: 1, jobs: map[string]jobState{job: {phase: running}}, want: &rollout.AnalysisGate{}},
		{name: "the hook's Job succeeded ends it", index: 1, jobs: map[string]jobState{job: {phase: succeeded}}, want: passed(1)},
		{name: "an analysis passed but the hook did not", index: 1, analysis: passed(1), want: &rollout.AnalysisGate{}},
		{name: "both passed", index: 1, analysis: passed(1), jobs: map[string]jobState{job: {phase: succeeded}}, want: passed(1)},
		{name: "the analysis' own gate kept", index: 0, analysis: &rollout.AnalysisGate{}, want: &rollout.AnalysisGate{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := at(tc.index, tc.analysis)
			read(h, &view{jobs: tc.jobs}).PlanInput(&in)
			if in.Analysis == nil || *in.Analysis != *tc.want || in.Paused {
				t.Errorf("gate: want %+v, got %+v (paused %v)", tc.want, in.Analysis, in.Paused)
			}
		})
	}
	r := read(h, &view{})
	if w := r.Writes(optin.Planned{Update: upd, Current: cur, Step: &optin.PlannedStep{Revision: upd, Index: 1}}); len(w) != 0 {
		t.Errorf("the step's pods not yet available: want no Job, got %d writes", len(w))
	}
	w := r.Writes(optin.Planned{Update: upd, Current: cur, Step: &optin.PlannedStep{Revision: upd, Index: 1, Held: true}})
	if len(w) != 1 {
		t.Fatalf("the step held: want its Job, got %d writes", len(w))
	}
	if made, err := w[0].Create(template()); err != nil || made.GetName() != job || made.GetLabels()[HookLabel] != "step2" {
		t.Errorf("want Job %s labelled step2, got %v, %v", job, made, err)
	}
	st := status.Input{UpdateRevision: upd, CurrentRevision: cur, Planned: ptr.To[int32](2),
		Canary: &rollout.CanaryProgress{State: rollout.CanaryState{Revision: upd, Index: 1}, Analyzing: true, Message: "step 2 of 2: 100%"}}
	r.ReportInput(&st)
	if st.Waiting == nil || st.Waiting.Message != "step 2 of 2: 100%: waiting for Job "+job+" (step2) to succeed" {
		t.Errorf("status: got %+v", st.Waiting)
	}
	st = status.Input{UpdateRevision: upd, CurrentRevision: cur}
	r.ReportInput(&st)
	if !st.AnalysisHolds {
		t.Error("no plan: want the update revision held from becoming current")
	}
	failedView := read(h, &view{jobs: map[string]jobState{job: {phase: failed, why: "BackoffLimitExceeded"}}})
	if cause := failedView.AbortCause(upd); cause.Message != "hook Job "+job+" (step2) failed: BackoffLimitExceeded" {
		t.Errorf("abort: got %q", cause)
	}
}
