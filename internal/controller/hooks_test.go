package controller

import (
	"encoding/json"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/hooks"
)

// hookTemplate creates the suspended Job a hook names, as a user would.
func hookTemplate(ns, name string) {
	Expect(k8sClient.Create(ctx, &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"team": "db"}},
		Spec: batchv1.JobSpec{
			Suspend:      ptr.To(true),
			BackoffLimit: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "migrate", Image: "busybox:1.36", Command: []string{"true"}}},
			}},
		},
	})).To(Succeed())
}

// hookJob reads the Job named name of md's namespace; nil while it does
// not exist.
func hookJob(md *appsv1beta1.MyDeployment, name string) func() *batchv1.Job {
	return func() *batchv1.Job {
		job := &batchv1.Job{}
		if err := k8sClient.Get(ctx, types.NamespacedName{Namespace: md.Namespace, Name: name}, job); err != nil {
			return nil
		}
		return job
	}
}

// hookJobs are the names of the Jobs md's namespace holds with the hook
// label.
func hookJobs(md *appsv1beta1.MyDeployment) []string {
	var list batchv1.JobList
	Expect(k8sClient.List(ctx, &list, client.InNamespace(md.Namespace), client.HasLabels{hooks.HookLabel})).To(Succeed())
	var out []string
	for _, j := range list.Items {
		out = append(out, j.Name)
	}
	return out
}

// finishJob plays the Job controller, which envtest lacks: the Job named
// name ends Complete (succeeded) or Failed, with the conditions and times
// the API server requires of a finished Job's status.
func finishJob(md *appsv1beta1.MyDeployment, name string, succeeded bool) {
	Eventually(func() error {
		job := hookJob(md, name)()
		if job == nil {
			return fmt.Errorf("no Job %s", name)
		}
		now := metav1.Now()
		job.Status.StartTime = ptr.To(metav1.NewTime(now.Add(-time.Second)))
		cond := func(t batchv1.JobConditionType, reason string) batchv1.JobCondition {
			return batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: "played by the test",
				LastProbeTime: now, LastTransitionTime: now}
		}
		if succeeded {
			job.Status.Succeeded, job.Status.CompletionTime = 1, &now
			job.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet, "CompletionsReached"),
				cond(batchv1.JobComplete, "CompletionsReached")}
		} else {
			job.Status.Failed = 1
			job.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobFailureTarget, "BackoffLimitExceeded"),
				cond(batchv1.JobFailed, "BackoffLimitExceeded")}
		}
		return k8sClient.Status().Update(ctx, job)
	}, timeout, interval).Should(Succeed())
}

// retryRollout is what `kubectl mydeployment rollout retry` writes: the
// abort record removed and retried-at now; it returns retried-at.
func retryRollout(md *appsv1beta1.MyDeployment) time.Time {
	at := time.Now().UTC().Truncate(time.Second)
	data, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{
		appsv1beta1.AbortedRevisionAnnotation: nil, appsv1beta1.RetriedAtAnnotation: at.Format(time.RFC3339)}}})
	Expect(err).NotTo(HaveOccurred())
	Expect(k8sClient.Patch(ctx, get(md), client.RawPatch(types.MergePatchType, data))).To(Succeed())
	return at
}

var _ = Describe("Beyond Deployment: rollout hooks", Ordered, Serial, func() {
	var (
		ns  string
		rec *countingRecorder
	)
	withCountingManager(&rec)
	BeforeEach(func() {
		ns = newNamespace()
		hookTemplate(ns, "db-migrate")
		hookTemplate(ns, "notify")
	})
	hooked := func(name, value string) *appsv1beta1.MyDeployment {
		md := rolling(newMD(ns, name, 2, "nginx:1.27"), intstr.FromInt32(1), intstr.FromInt32(0))
		md.Annotations = map[string]string{hooks.Annotation: value}
		return md
	}
	// rollOut changes md's image and returns the stable and the update
	// revisions once the status names the new one.
	rollOut := func(md *appsv1beta1.MyDeployment) (stable, upd string) {
		stable = get(md).Status.CurrentRevision
		update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
		Eventually(func() string { return get(md).Status.UpdateRevision }, timeout, interval).ShouldNot(Equal(stable))
		return stable, get(md).Status.UpdateRevision
	}

	It("runs the pre hook's Job before the first pod of a new revision, and goes on once it succeeded", func() {
		md := hooked("pre", `{"pre":{"job":"db-migrate"}}`)
		createReady(md)
		Expect(hookJobs(md)).To(BeEmpty(), "the first revision is no rollout: no pre hook")
		stop := kubelet(md, 200*time.Millisecond)
		defer stop()
		stable, upd := rollOut(md)
		name := hooks.JobName(md.Name, upd, hooks.Pre, time.Time{})
		Eventually(hookJob(md, name), timeout, interval).ShouldNot(BeNil())
		Eventually(progressing(md), timeout, interval).Should(Equal(
			hooks.ReasonWaitingForHook + ": waiting for Job " + name + " (pre) to succeed"))

		By("the Job: from the template, ours, told the revision, running")
		job := hookJob(md, name)()
		Expect(job.Labels).To(HaveKeyWithValue(hooks.HookLabel, hooks.Pre))
		Expect(job.Labels).To(HaveKeyWithValue("team", "db"))
		Expect(metav1.IsControlledBy(job, get(md))).To(BeTrue())
		Expect(ptr.Deref(job.Spec.Suspend, true)).To(BeFalse())
		Expect(job.Spec.Template.Spec.Containers[0].Env).To(ContainElements(
			corev1.EnvVar{Name: hooks.EnvName, Value: md.Name}, corev1.EnvVar{Name: hooks.EnvRevision, Value: upd},
			corev1.EnvVar{Name: hooks.EnvHook, Value: hooks.Pre}))

		By("held: no pod of the new revision; scaling works on the stable one")
		Consistently(func() int { return podsOfRevision(md, upd) }, 2*time.Second, interval).Should(BeZero())
		update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Replicas = ptr.To[int32](3) })
		Eventually(func() int { return podsOfRevision(md, stable) }, timeout, interval).Should(Equal(3))
		Expect(podsOfRevision(md, upd)).To(BeZero())

		By("a manager restart mid-hook: the running Job is found, not made again, and still holds")
		stopManager()
		startManager(func(r *MyDeploymentReconciler) { rec.EventRecorder, r.Recorder = r.Recorder, rec })
		Consistently(func(g Gomega) {
			g.Expect(hookJobs(md)).To(ConsistOf(name))
			g.Expect(podsOfRevision(md, upd)).To(BeZero())
		}, 2*time.Second, interval).Should(Succeed())

		By("the Job succeeds: the rollout goes on to the end")
		finishJob(md, name, true)
		complete(md)
		Expect(podsOfRevision(md, upd)).To(Equal(3))
		Expect(get(md).Status.CurrentRevision).To(Equal(upd))
		Expect(hookJobs(md)).To(ConsistOf(name), "one Job, made once")
	})

	It("holds a rollout whose pre hook failed, with no pod of the new revision, and a retry runs it again", func() {
		md := hooked("fails", `{"pre":{"job":"db-migrate"}}`)
		createReady(md)
		stop := kubelet(md, 200*time.Millisecond)
		defer stop()
		_, upd := rollOut(md)
		name := hooks.JobName(md.Name, upd, hooks.Pre, time.Time{})
		finishJob(md, name, false)
		Eventually(conditionReason(md, appsv1beta1.ConditionReplicaFailure), timeout, interval).Should(Equal(hooks.ReasonHookFailed))
		Expect(condition(get(md), appsv1beta1.ConditionReplicaFailure).Message).To(Equal(
			"Job " + name + " (pre) failed: BackoffLimitExceeded: played by the test"))
		Expect(progressing(md)()).To(HavePrefix(hooks.ReasonHookFailed + ": Job " + name + " (pre) failed"))
		Consistently(func() int { return podsOfRevision(md, upd) }, 2*time.Second, interval).Should(BeZero())

		By("a manager restart finds the failed Job: none made again, still held")
		stopManager()
		startManager(func(r *MyDeploymentReconciler) { rec.EventRecorder, r.Recorder = r.Recorder, rec })
		Consistently(func() []string { return hookJobs(md) }, 2*time.Second, interval).Should(ConsistOf(name))
		Expect(rec.of(md, hooks.ReasonHookFailed)).To(ConsistOf("Job "+name+" (pre) failed: BackoffLimitExceeded: played by the test"),
			"one event, not one a sync nor one a manager")
		Expect(podsOfRevision(md, upd)).To(BeZero())

		By("rollout retry: the hook runs again under a new name; the failed Job stays for its logs")
		retried := retryRollout(md)
		again := hooks.JobName(md.Name, upd, hooks.Pre, retried)
		Expect(again).NotTo(Equal(name))
		Eventually(hookJobs, timeout, interval).WithArguments(md).Should(ConsistOf(name, again))
		Eventually(progressing(md), timeout, interval).Should(HavePrefix(hooks.ReasonWaitingForHook))
		finishJob(md, again, true)
		complete(md)
		Expect(get(md).Status.CurrentRevision).To(Equal(upd))
		Expect(condition(get(md), appsv1beta1.ConditionReplicaFailure)).To(BeNil())
	})

	It("never takes over a Job of the hook's name that is not the object's: HookFailed, name taken", func() {
		md := hooked("taken", `{"pre":{"job":"db-migrate"}}`)
		createReady(md)
		stop := kubelet(md, 200*time.Millisecond)
		defer stop()
		_, upd := rollOut(md)
		name := hooks.JobName(md.Name, upd, hooks.Pre, time.Time{})
		finishJob(md, name, false)
		Eventually(conditionReason(md, appsv1beta1.ConditionReplicaFailure), timeout, interval).Should(Equal(hooks.ReasonHookFailed))

		By("someone else's Job has the name the retry's Job would have")
		at := time.Now().UTC().Truncate(time.Second).Add(2 * time.Second)
		other := hooks.JobName(md.Name, upd, hooks.Pre, at)
		hookTemplate(ns, other)
		data, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{
			appsv1beta1.RetriedAtAnnotation: at.Format(time.RFC3339)}}})
		Expect(err).NotTo(HaveOccurred())
		Expect(k8sClient.Patch(ctx, get(md), client.RawPatch(types.MergePatchType, data))).To(Succeed())
		Eventually(func() string {
			if c := condition(get(md), appsv1beta1.ConditionReplicaFailure); c != nil {
				return c.Message
			}
			return ""
		}, timeout, interval).Should(Equal(other + ": name taken by an object the MyDeployment does not control"))
		errorsBefore := reconcileErrors()
		Consistently(func(g Gomega) {
			g.Expect(podsOfRevision(md, upd)).To(BeZero())
			g.Expect(reconcileErrors()).To(Equal(errorsBefore), "reported, not retried in a loop")
		}, 2*time.Second, interval).Should(Succeed())
		Expect(metav1.GetControllerOf(hookJob(md, other)())).To(BeNil(), "not adopted")
		Expect(ptr.Deref(hookJob(md, other)().Spec.Suspend, false)).To(BeTrue(), "not touched")
	})

	It("deletes a revision's hook Jobs with the revision (revisionHistoryLimit)", func() {
		md := hooked("history", `{"pre":{"job":"db-migrate"}}`)
		md.Spec.RevisionHistoryLimit = ptr.To[int32](0)
		createReady(md)
		stop := kubelet(md, 200*time.Millisecond)
		defer stop()
		_, second := rollOut(md)
		first := hooks.JobName(md.Name, second, hooks.Pre, time.Time{})
		finishJob(md, first, true)
		complete(md)
		update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Template.Spec.Containers[0].Image = "nginx:1.29" })
		Eventually(func() string { return get(md).Status.UpdateRevision }, timeout, interval).ShouldNot(Equal(second))
		third := get(md).Status.UpdateRevision
		next := hooks.JobName(md.Name, third, hooks.Pre, time.Time{})
		Eventually(hookJobs, timeout, interval).WithArguments(md).Should(ConsistOf(first, next),
			"the Job of a live revision stays")
		finishJob(md, next, true)
		complete(md)
		Eventually(func() int { return len(revisionsOf(md)) }, timeout, interval).Should(Equal(1))
		Eventually(hookJobs, timeout, interval).WithArguments(md).Should(ConsistOf(next))
	})

	It("gates a canary step on its hook, run once the step's pods are available", func() {
		md := rolling(newMD(ns, "step", 4, "nginx:1.27"), intstr.FromInt32(1), intstr.FromInt32(0))
		md.Annotations = map[string]string{appsv1beta1.CanaryStepsAnnotation: "25%, 50%, 100%",
			hooks.Annotation: `{"steps":{"2":{"job":"notify"}}}`}
		createReady(md)
		stop := kubelet(md, 200*time.Millisecond)
		defer stop()
		_, upd := rollOut(md)
		name := hooks.JobName(md.Name, upd, "step2", time.Time{})
		Eventually(hookJob(md, name), timeout, interval).ShouldNot(BeNil())
		Expect(podsOfRevision(md, upd)).To(Equal(2), "made at step 2, 50%: two pods of the new revision")
		Eventually(progressing(md), timeout, interval).Should(HaveSuffix("waiting for Job " + name + " (step2) to succeed"))
		Expect(canaryStep(md).Index).To(Equal(1))
		Consistently(func() int { return podsOfRevision(md, upd) }, 2*time.Second, interval).Should(Equal(2), "the step holds")
		Expect(hookJob(md, name)().Labels).To(HaveKeyWithValue(hooks.HookLabel, "step2"))

		By("the Job succeeds: the step ends, the rollout goes on")
		finishJob(md, name, true)
		complete(md)
		Expect(get(md).Status.CurrentRevision).To(Equal(upd))
		Expect(hookJobs(md)).To(ConsistOf(name))
	})

	It("aborts to stable when a pre hook under onFailure Abort failed", func() {
		md := hooked("aborts", `{"pre":{"job":"db-migrate","onFailure":"Abort"}}`)
		createReady(md)
		stop := kubelet(md, 200*time.Millisecond)
		defer stop()
		stable, upd := rollOut(md)
		name := hooks.JobName(md.Name, upd, hooks.Pre, time.Time{})
		finishJob(md, name, false)
		Eventually(conditionReason(md, appsv1beta1.ConditionProgressing), timeout, interval).Should(Equal(appsv1beta1.ReasonRolloutAborted))
		Expect(get(md).Annotations).To(HaveKeyWithValue(appsv1beta1.AbortedRevisionAnnotation, upd))
		want := fmt.Sprintf("Rollout to revision %q aborted: hook Job %s (pre) failed: BackoffLimitExceeded: played by the test; "+
			"every pod goes back to revision %q", upd, name, stable)
		Expect(progressing(md)()).To(HaveSuffix(want), "the hook named, not an analysis")
		Eventually(func() []string { return rec.of(md, appsv1beta1.EventRolloutAborted) }, timeout, interval).Should(ConsistOf(want))
		Expect(rec.of(md, appsv1beta1.ReasonAnalysisFailed)).To(BeEmpty())
		Expect(podsOfRevision(md, stable)).To(Equal(2))
		Consistently(func() int { return podsOfRevision(md, upd) }, 2*time.Second, interval).Should(BeZero())
		Expect(hookJobs(md)).To(ConsistOf(name), "no Job made while aborted")
	})

	It("runs the post hook once the revision is current and complete, and reports its failure", func() {
		md := hooked("post", `{"post":{"job":"notify"}}`)
		createReady(md)
		Consistently(func() []string { return hookJobs(md) }, time.Second, interval).Should(BeEmpty(),
			"the first revision is no rollout: no post hook")
		stop := kubelet(md, 200*time.Millisecond)
		defer stop()
		_, upd := rollOut(md)
		name := hooks.JobName(md.Name, upd, hooks.Post, time.Time{})
		complete(md)
		Eventually(hookJob(md, name), timeout, interval).ShouldNot(BeNil())
		Expect(get(md).Status.CurrentRevision).To(Equal(upd))
		finishJob(md, name, false)
		Eventually(conditionReason(md, appsv1beta1.ConditionReplicaFailure), timeout, interval).Should(Equal(hooks.ReasonHookFailed))
		Expect(condition(get(md), appsv1beta1.ConditionReplicaFailure).Message).To(HavePrefix("Job " + name + " (post) failed"))
		Expect(podsOfRevision(md, upd)).To(Equal(2), "Report: the pods stay")
		Eventually(func() []string { return rec.of(md, hooks.ReasonHookFailed) }, timeout, interval).Should(
			ConsistOf(HavePrefix("Job " + name + " (post) failed")))
		Expect(hookJobs(md)).To(ConsistOf(name))
	})

	It("rolls back to the revision before when a post hook under onFailure Abort failed", func() {
		md := hooked("post-abort", `{"post":{"job":"notify","onFailure":"Abort"}}`)
		createReady(md)
		stop := kubelet(md, 200*time.Millisecond)
		defer stop()
		stable, upd := rollOut(md)
		name := hooks.JobName(md.Name, upd, hooks.Post, time.Time{})
		complete(md)
		Expect(get(md).Status.CurrentRevision).To(Equal(upd))
		Eventually(hookJob(md, name), timeout, interval).ShouldNot(BeNil())
		finishJob(md, name, false)
		Eventually(conditionReason(md, appsv1beta1.ConditionProgressing), timeout, interval).Should(Equal(appsv1beta1.ReasonRolloutAborted))
		Expect(get(md).Annotations).To(HaveKeyWithValue(appsv1beta1.AbortedRevisionAnnotation, upd))
		Expect(progressing(md)()).To(ContainSubstring("hook Job " + name + " (post) failed"))
		Eventually(func() int { return podsOfRevision(md, stable) }, timeout, interval).Should(Equal(2))
		Eventually(func() int { return podsOfRevision(md, upd) }, timeout, interval).Should(BeZero())
		Eventually(func() string { return get(md).Status.CurrentRevision }, timeout, interval).Should(Equal(stable))
		Expect(get(md).Spec.Template.Spec.Containers[0].Image).To(Equal("nginx:1.28"), "the spec is never written")
		Expect(hookJobs(md)).To(ConsistOf(name))
	})
})
