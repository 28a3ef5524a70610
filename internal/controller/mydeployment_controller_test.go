package controller

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

var _ = Describe("MyDeployment controller", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("creates its pods from a ControllerRevision and reports them available", func() {
		md := newMD(ns, "web", 3, "nginx:1.27")
		Expect(k8sClient.Create(ctx, md)).To(Succeed())

		Eventually(func() []corev1.Pod { return podsOf(md) }, timeout, interval).Should(HaveLen(3))
		revs := revisionsOf(md)
		Expect(revs).To(HaveLen(1))
		rev := revs[0]
		Expect(rev.Name).To(HavePrefix("web-"))
		Expect(rev.Revision).To(BeEquivalentTo(1))
		Expect(metav1.IsControlledBy(&rev, get(md))).To(BeTrue())
		for _, p := range podsOf(md) {
			Expect(p.GenerateName).To(Equal("web-"))
			Expect(p.Labels).To(HaveKeyWithValue(appsv1beta1.RevisionLabel, rev.Name))
			Expect(p.Labels).To(HaveKeyWithValue(appsv1beta1.PodTemplateHashLabel, rev.Labels["controller.kubernetes.io/hash"]))
			Expect(p.Labels).To(HaveKeyWithValue("app", "web"))
			ref := metav1.GetControllerOf(&p)
			Expect(ref).NotTo(BeNil())
			Expect(ref.UID).To(Equal(get(md).UID))
			Expect(ptr.Deref(ref.BlockOwnerDeletion, false)).To(BeTrue(), "deleting the MyDeployment must cascade")
		}
		Expect(get(md).Annotations).To(HaveKeyWithValue(appsv1beta1.RevisionAnnotation, "1"))
		Eventually(conditionReason(md, appsv1beta1.ConditionAvailable), timeout, interval).
			Should(Equal(appsv1beta1.ReasonMinimumReplicasUnavailable))

		markAllReady(md)
		complete(md)
		cur := get(md)
		Expect(cur.Status.ReadyReplicas).To(BeEquivalentTo(3))
		Expect(cur.Status.CurrentRevision).To(Equal(rev.Name))
		Expect(cur.Status.UpdateRevision).To(Equal(rev.Name))
		Expect(cur.Status.LabelSelector).To(Equal("app=web"))
		Eventually(conditionReason(md, appsv1beta1.ConditionAvailable), timeout, interval).
			Should(Equal(appsv1beta1.ReasonMinimumReplicasAvailable))
		Eventually(conditionReason(md, appsv1beta1.ConditionProgressing), timeout, interval).
			Should(Equal(appsv1beta1.ReasonNewRevisionAvailable))
	})

	It("writes nothing when at rest", func() {
		md := newMD(ns, "quiet", 2, "nginx:1.27")
		createReady(md)
		Eventually(conditionReason(md, appsv1beta1.ConditionProgressing), timeout, interval).
			Should(Equal(appsv1beta1.ReasonNewRevisionAvailable))
		rv := get(md).ResourceVersion
		Consistently(func() string { return get(md).ResourceVersion }, 3*time.Second, 200*time.Millisecond).
			Should(Equal(rv), "a settled MyDeployment must not be written again")
	})

	It("scales up and down, deleting not-ready pods first", func() {
		md := newMD(ns, "scale", 2, "nginx:1.27")
		createReady(md)

		update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Replicas = ptr.To[int32](5) })
		Eventually(func() []corev1.Pod { return podsOf(md) }, timeout, interval).Should(HaveLen(5))
		// The three new pods stay not ready; scaling down to 2 must remove them
		// and keep the two ready ones.
		var ready []string
		for _, p := range podsOf(md) {
			if podReady(&p) {
				ready = append(ready, p.Name)
			}
		}
		Expect(ready).To(HaveLen(2))
		update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Replicas = ptr.To[int32](2) })
		Eventually(func() []string {
			var names []string
			for _, p := range podsOf(md) {
				names = append(names, p.Name)
			}
			return names
		}, timeout, interval).Should(ConsistOf(ready))
		complete(md)
	})

	DescribeTable("rolls out a new template within maxSurge and maxUnavailable",
		func(replicas int32, surge, unavailable intstr.IntOrString, maxActive, minAvailable int) {
			md := rolling(newMD(ns, "roll", replicas, "nginx:1.27"), surge, unavailable)
			createReady(md)
			oldRev := get(md).Status.UpdateRevision

			w := watchPods(md, maxActive, minAvailable)
			defer w.stop()
			Eventually(func() int { w.mu.Lock(); defer w.mu.Unlock(); return len(w.pods) }, timeout, interval).
				Should(BeNumerically(">=", int(replicas)))
			w.armAvailability()
			stop := kubelet(md, 300*time.Millisecond)
			update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
			complete(md)
			stop()

			cur := get(md)
			Expect(cur.Status.UpdateRevision).NotTo(Equal(oldRev))
			Expect(cur.Status.CurrentRevision).To(Equal(cur.Status.UpdateRevision))
			Expect(cur.Annotations).To(HaveKeyWithValue(appsv1beta1.RevisionAnnotation, "2"))
			for _, p := range podsOf(md) {
				Expect(p.Spec.Containers[0].Image).To(Equal("nginx:1.28"))
				Expect(p.Labels[appsv1beta1.RevisionLabel]).To(Equal(cur.Status.UpdateRevision))
			}
			Expect(revisionsOf(md)).To(HaveLen(2))
			violations, _ := w.result()
			Expect(violations).To(BeEmpty())
		},
		Entry("25%/25% of 4", int32(4), intstr.FromString("25%"), intstr.FromString("25%"), 5, 3),
		Entry("maxSurge=1 maxUnavailable=0", int32(3), intstr.FromInt32(1), intstr.FromInt32(0), 4, 3),
		Entry("maxSurge=0 maxUnavailable=1", int32(3), intstr.FromInt32(0), intstr.FromInt32(1), 3, 2),
	)

	It("Recreate removes every old pod before creating a new one", func() {
		md := newMD(ns, "recreate", 3, "nginx:1.27")
		md.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
		createReady(md)
		oldRev := get(md).Status.UpdateRevision

		var mixed []string
		w := watchPods(md, 3, -1)
		defer w.stop()
		stop := kubelet(md, 200*time.Millisecond)
		update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
		complete(md)
		stop()
		w.mu.Lock()
		for name, p := range w.pods {
			if p.Labels[appsv1beta1.RevisionLabel] == oldRev {
				mixed = append(mixed, name)
			}
		}
		w.mu.Unlock()
		Expect(mixed).To(BeEmpty())
		violations, created := w.result()
		Expect(violations).To(BeEmpty())
		Expect(created).To(Equal(6), "3 old pods seen, then exactly 3 new ones")
	})

	It("does not roll a paused MyDeployment but still scales it, and rolls on resume", func() {
		md := newMD(ns, "paused", 2, "nginx:1.27")
		createReady(md)
		rev := get(md).Status.UpdateRevision

		update(md, func(m *appsv1beta1.MyDeployment) {
			m.Spec.Paused = true
			m.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
			m.Spec.Replicas = ptr.To[int32](3)
		})
		Eventually(conditionReason(md, appsv1beta1.ConditionProgressing), timeout, interval).Should(Equal(appsv1beta1.ReasonPaused))
		Eventually(func() []corev1.Pod { return podsOf(md) }, timeout, interval).Should(HaveLen(3))
		Consistently(func() []appsv1.ControllerRevision { return revisionsOf(md) }, 2*time.Second, interval).Should(HaveLen(1))
		for _, p := range podsOf(md) {
			Expect(p.Spec.Containers[0].Image).To(Equal("nginx:1.27"), "paused: new pods keep the old template")
			Expect(p.Labels[appsv1beta1.RevisionLabel]).To(Equal(rev))
		}

		stop := kubelet(md, 200*time.Millisecond)
		defer stop()
		update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Paused = false })
		complete(md)
		for _, p := range podsOf(md) {
			Expect(p.Spec.Containers[0].Image).To(Equal("nginx:1.28"))
		}
		Expect(revisionsOf(md)).To(HaveLen(2))
	})

	It("reports ProgressDeadlineExceeded when a rollout stalls, and recovers on progress", func() {
		md := newMD(ns, "stuck", 2, "nginx:1.27")
		md.Spec.ProgressDeadlineSeconds = ptr.To[int32](2)
		Expect(k8sClient.Create(ctx, md)).To(Succeed())
		// Nobody marks the pods ready: no progress after they were created.
		Eventually(conditionReason(md, appsv1beta1.ConditionProgressing), timeout, interval).
			Should(Equal(appsv1beta1.ReasonProgressDeadlineExceeded))
		Expect(condition(get(md), appsv1beta1.ConditionProgressing).Status).To(Equal(corev1.ConditionFalse))
		Eventually(func() []string { return eventReasons(md) }, timeout, interval).
			Should(ContainElement(appsv1beta1.ReasonProgressDeadlineExceeded))

		markAllReady(md)
		Eventually(conditionReason(md, appsv1beta1.ConditionProgressing), timeout, interval).
			Should(Equal(appsv1beta1.ReasonNewRevisionAvailable))
	})

	It("rolls back to an earlier template by re-numbering its revision", func() {
		md := newMD(ns, "undo", 2, "nginx:1.27")
		Expect(k8sClient.Create(ctx, md)).To(Succeed())
		stop := kubelet(md, 200*time.Millisecond)
		defer stop()
		complete(md)
		first := get(md).Status.UpdateRevision

		update(md, func(m *appsv1beta1.MyDeployment) {
			m.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
			m.Annotations = map[string]string{appsv1beta1.ChangeCauseAnnotation: "upgrade to 1.28"}
		})
		complete(md)
		second := get(md).Status.UpdateRevision
		for _, r := range revisionsOf(md) {
			if r.Name == second {
				Expect(r.Annotations).To(HaveKeyWithValue(appsv1beta1.ChangeCauseAnnotation, "upgrade to 1.28"),
					"the change cause is recorded on the revision it caused")
			}
		}
		update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Template.Spec.Containers[0].Image = "nginx:1.27" })
		complete(md)

		cur := get(md)
		Expect(cur.Status.UpdateRevision).To(Equal(first), "the old revision is reused, not copied")
		Expect(cur.Annotations).To(HaveKeyWithValue(appsv1beta1.RevisionAnnotation, "3"))
		revs := revisionsOf(md)
		Expect(revs).To(HaveLen(2))
		for _, r := range revs {
			if r.Name == first {
				Expect(r.Revision).To(BeEquivalentTo(3))
			}
		}
	})

	It("truncates history to revisionHistoryLimit, keeping live revisions", func() {
		md := newMD(ns, "history", 1, "nginx:1.0")
		md.Spec.RevisionHistoryLimit = ptr.To[int32](1)
		Expect(k8sClient.Create(ctx, md)).To(Succeed())
		stop := kubelet(md, 200*time.Millisecond)
		defer stop()
		complete(md)
		for _, image := range []string{"nginx:1.1", "nginx:1.2", "nginx:1.3"} {
			update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Template.Spec.Containers[0].Image = image })
			complete(md)
		}
		Eventually(func() []appsv1.ControllerRevision { return revisionsOf(md) }, timeout, interval).
			Should(HaveLen(2), "the update revision plus one of history")
		var numbers []int64
		for _, r := range revisionsOf(md) {
			numbers = append(numbers, r.Revision)
		}
		Expect(numbers).To(ConsistOf(int64(3), int64(4)))
	})

	It("adopts matching orphans, releases pods it no longer selects, and leaves other owners' pods alone", func() {
		md := newMD(ns, "claim", 2, "nginx:1.27")
		createReady(md)
		owner := get(md)

		By("orphaning a pod: the controller adopts it back instead of creating another")
		victim := podsOf(md)[0]
		updatePod(&victim, func(p *corev1.Pod) { p.OwnerReferences = nil })
		Eventually(func() bool {
			p := &corev1.Pod{}
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(&victim), p)).To(Succeed())
			return metav1.IsControlledBy(p, owner)
		}, timeout, interval).Should(BeTrue())
		Expect(podsOf(md)).To(HaveLen(2))

		By("relabelling a pod: it is released and replaced")
		released := podsOf(md)[0]
		updatePod(&released, func(p *corev1.Pod) { p.Labels["app"] = "elsewhere" })
		Eventually(func() bool {
			p := &corev1.Pod{}
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(&released), p)).To(Succeed())
			return metav1.GetControllerOf(p) == nil
		}, timeout, interval).Should(BeTrue())
		Eventually(func() []corev1.Pod { return podsOf(md) }, timeout, interval).Should(HaveLen(2))

		By("a pod of another owner with matching labels is never touched")
		other := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "foreign", Labels: map[string]string{
				"app": "claim", appsv1beta1.RevisionLabel: owner.Status.UpdateRevision,
				appsv1beta1.PodTemplateHashLabel: podsOf(md)[0].Labels[appsv1beta1.PodTemplateHashLabel],
			}, OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: "1234", Controller: ptr.To(true)}}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}},
		}
		Expect(k8sClient.Create(ctx, other)).To(Succeed())
		Consistently(func() string {
			p := &corev1.Pod{}
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(other), p)).To(Succeed())
			return string(metav1.GetControllerOf(p).UID)
		}, 2*time.Second, interval).Should(Equal("1234"))
		Expect(get(md).Status.Replicas).To(BeEquivalentTo(2))
	})

	It("counts a pod available only after minReadySeconds, by requeueing rather than waiting for an event", func() {
		md := newMD(ns, "minready", 2, "nginx:1.27")
		md.Spec.MinReadySeconds = 3
		Expect(k8sClient.Create(ctx, md)).To(Succeed())
		Eventually(func() []corev1.Pod { return podsOf(md) }, timeout, interval).Should(HaveLen(2))
		markAllReady(md)
		Eventually(func() int32 { return get(md).Status.ReadyReplicas }, timeout, interval).Should(BeEquivalentTo(2))
		Expect(get(md).Status.AvailableReplicas).To(BeZero(), "ready for less than minReadySeconds")
		// Nothing changes from here on: only the controller's requeue can see the time pass.
		Eventually(func() int32 { return get(md).Status.AvailableReplicas }, 10*time.Second, interval).Should(BeEquivalentTo(2))
	})

	It("reports a refused pod create as ReplicaFailure with the API server's error, and an event", func() {
		By("an admission policy refusing this MyDeployment's pods")
		policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "refuse-" + ns},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
					},
				}}},
				Validations: []admissionregistrationv1.Validation{{
					Expression: "!has(object.metadata.labels) || !('app' in object.metadata.labels) || object.metadata.labels['app'] != 'refused'",
					Message:    "pods of app=refused are not allowed here",
				}},
			},
		}
		binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "refuse-" + ns},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
				PolicyName:        policy.Name,
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
				MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
					MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}},
			},
		}
		Expect(k8sClient.Create(ctx, policy)).To(Succeed())
		DeferCleanup(func() { Expect(k8sClient.Delete(ctx, policy)).To(Succeed()) })
		Expect(k8sClient.Create(ctx, binding)).To(Succeed())
		probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "probe-", Labels: map[string]string{"app": "refused"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
		Eventually(func() error { return k8sClient.Create(ctx, probe.DeepCopy(), client.DryRunAll) }, timeout, interval).
			Should(MatchError(ContainSubstring("not allowed here")), "the policy is enforced")

		md := newMD(ns, "refused", 3, "nginx:1.27")
		Expect(k8sClient.Create(ctx, md)).To(Succeed())
		Eventually(func() string {
			if c := condition(get(md), appsv1beta1.ConditionReplicaFailure); c != nil && c.Status == corev1.ConditionTrue {
				return c.Reason + ": " + c.Message
			}
			return ""
		}, timeout, interval).Should(And(HavePrefix(appsv1beta1.ReasonFailedCreate+": "), ContainSubstring("not allowed here")))
		Eventually(func() []string { return eventReasons(md) }, timeout, interval).Should(ContainElement("FailedCreate"))
		Expect(podsOf(md)).To(BeEmpty())

		By("the failure clears once pods can be created")
		Expect(k8sClient.Delete(ctx, binding)).To(Succeed())
		Eventually(func() []corev1.Pod { return podsOf(md) }, 2*timeout, interval).Should(HaveLen(3))
		Eventually(func() *appsv1.DeploymentCondition { return condition(get(md), appsv1beta1.ConditionReplicaFailure) },
			timeout, interval).Should(BeNil())
	})

	It("creates no duplicate pod when the manager restarts in the middle of a scale-up", func() {
		md := newMD(ns, "restart", 40, "nginx:1.27")
		w := watchPods(md, 40, -1)
		defer w.stop()
		Expect(k8sClient.Create(ctx, md)).To(Succeed())
		Eventually(func() int { return len(podsOf(md)) }, timeout, 10*time.Millisecond).Should(BeNumerically(">", 0))
		stopManager()
		startManager()
		Eventually(func() []corev1.Pod { return podsOf(md) }, timeout, interval).Should(HaveLen(40))
		Consistently(func() []corev1.Pod { return podsOf(md) }, 2*time.Second, interval).Should(HaveLen(40))
		violations, created := w.result()
		Expect(violations).To(BeEmpty())
		Expect(created).To(Equal(40), "every pod ever created is one of the 40")
	})
})

// eventReasons lists the reasons of events about md.
func eventReasons(md *appsv1beta1.MyDeployment) []string {
	var list corev1.EventList
	Expect(k8sClient.List(ctx, &list, client.InNamespace(md.Namespace))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Name == md.Name && e.InvolvedObject.Kind == "MyDeployment" {
			out = append(out, e.Reason)
		}
	}
	return out
}
