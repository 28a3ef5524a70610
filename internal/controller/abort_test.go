package controller

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/upgrade"
)

// kubeletFor marks md's pods Ready every tick, but only those of revision
// rev: an update whose pods never become Ready.
func kubeletFor(md *appsv1beta1.MyDeployment, rev string, tick time.Duration) (stop func()) {
	return everyTick(tick, func() {
		for _, p := range podsOf(md) {
			if p.Labels[appsv1beta1.RevisionLabel] == rev && !podReady(&p) {
				_ = markReady(&p)
			}
		}
	})
}

// brokenInPlaceKubelet is inPlaceKubelet, except that a container running
// image broken never becomes ready (nor its pod).
func brokenInPlaceKubelet(md *appsv1beta1.MyDeployment, broken string, tick time.Duration) (stop func()) {
	return everyTick(tick, func() {
		for _, p := range podsOf(md) {
			pod := kubeletStatus(&p)
			if pod == nil {
				pod = p.DeepCopy()
			}
			for i := range pod.Status.ContainerStatuses {
				if pod.Status.ContainerStatuses[i].Image == broken {
					pod.Status.ContainerStatuses[i].Ready = false
					if c := podCondition(pod, corev1.PodReady); c != nil && c.Status == corev1.ConditionTrue {
						c.Status, c.LastTransitionTime = corev1.ConditionFalse, metav1.Now()
					}
				}
			}
			if !equality.Semantic.DeepEqual(pod.Status, p.Status) {
				_ = k8sClient.Status().Update(ctx, pod) // a conflict: next tick
			}
		}
	})
}

// retry does what `kubectl mydeployment rollout retry` does.
func retry(md *appsv1beta1.MyDeployment) {
	update(md, func(m *appsv1beta1.MyDeployment) {
		delete(m.Annotations, appsv1beta1.AbortedRevisionAnnotation)
		m.Annotations[appsv1beta1.RetriedAtAnnotation] = time.Now().UTC().Format(time.RFC3339)
	})
}

var _ = Describe("Beyond Deployment: abort to stable (on-failure Abort)", Ordered, ContinueOnFailure, Serial, func() {
	var (
		ns  string
		rec *countingRecorder
	)
	withCountingManager(&rec)
	BeforeEach(func() { ns = newNamespace() })

	// started creates a 4-pod MyDeployment (maxSurge 1, maxUnavailable 1,
	// progressDeadlineSeconds 2) with annotations, ready, and a watch of
	// its bounds; it returns the stable revision.
	started := func(name string, annotations map[string]string) (*appsv1beta1.MyDeployment, string, *watcher) {
		md := rolling(newMD(ns, name, 4, "nginx:1.27"), intstr.FromInt32(1), intstr.FromInt32(1))
		md.Spec.ProgressDeadlineSeconds = ptr.To[int32](2)
		md.Annotations = annotations
		createReady(md)
		w := watchPods(md, 5, 3)
		Eventually(func() int { _, n := w.result(); return n }, timeout, interval).Should(Equal(4), "the watch lists the ready pods")
		w.armAvailability()
		return md, get(md).Status.CurrentRevision, w
	}
	newTemplate := func(md *appsv1beta1.MyDeployment, image string) string {
		before := get(md).Status.UpdateRevision
		update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Template.Spec.Containers[0].Image = image })
		var rev string
		Eventually(func() string { rev = get(md).Status.UpdateRevision; return rev }, timeout, interval).ShouldNot(Equal(before))
		return rev
	}

	It("moves every pod back to the stable revision when the rollout misses its deadline, and stays there until retried", func() {
		md, stable, w := started("abort", map[string]string{appsv1beta1.OnFailureAnnotation: appsv1beta1.OnFailureAbort})
		defer w.stop()
		stop := kubeletFor(md, stable, 100*time.Millisecond)
		defer stop()

		By("a new template whose pods never become Ready")
		bad := newTemplate(md, "nginx:broken")
		Eventually(func() int { return podsOfRevision(md, bad) }, timeout, interval).Should(BeNumerically(">", 0))

		By("past the deadline: RolloutAborted, one warning event naming the revision, every pod back")
		Eventually(conditionReason(md, appsv1beta1.ConditionProgressing), timeout, interval).Should(Equal(appsv1beta1.ReasonRolloutAborted))
		Expect(progressing(md)()).To(ContainSubstring(bad))
		Eventually(func(g Gomega) {
			g.Expect(podsOfRevision(md, stable)).To(Equal(4))
			g.Expect(podsOf(md)).To(HaveLen(4))
			cur := get(md)
			g.Expect(cur.Status.UpdatedReplicas).To(BeZero())
			g.Expect(cur.Status.AvailableReplicas).To(BeEquivalentTo(4))
			g.Expect(cur.Status.CurrentRevision).To(Equal(stable))
		}, timeout, interval).Should(Succeed())
		cur := get(md)
		Expect(upgrade.Rolling(cur)).To(BeFalse(), "back on its stable pods, an aborted rollout does not hold an operator upgrade")
		Expect(cur.Spec.Template.Spec.Containers[0].Image).To(Equal("nginx:broken"), "the spec is not rewritten")
		Expect(cur.Annotations).To(HaveKeyWithValue(appsv1beta1.AbortedRevisionAnnotation, bad))
		Expect(cur.Status.UpdateRevision).To(Equal(bad))
		Expect(conditionReason(md, appsv1beta1.ConditionAvailable)()).To(Equal(appsv1beta1.ReasonMinimumReplicasAvailable))
		Expect(rec.of(md, appsv1beta1.EventRolloutAborted)).To(ConsistOf(ContainSubstring(bad)))

		By("aborted: nothing moves forward on its own, well past the deadline")
		Consistently(func(g Gomega) {
			g.Expect(podsOfRevision(md, stable)).To(Equal(4))
			g.Expect(conditionReason(md, appsv1beta1.ConditionProgressing)()).To(Equal(appsv1beta1.ReasonRolloutAborted))
		}, 4*time.Second, 200*time.Millisecond).Should(Succeed())
		Expect(rec.of(md, appsv1beta1.EventRolloutAborted)).To(HaveLen(1), "one event per abort")

		By("retried: the same rollout starts over, and is aborted again")
		retry(md)
		Eventually(func() int { return podsOfRevision(md, bad) }, timeout, interval).Should(BeNumerically(">", 0))
		Eventually(func() []string { return rec.of(md, appsv1beta1.EventRolloutAborted) }, timeout, interval).Should(HaveLen(2))
		Eventually(func() int { return podsOfRevision(md, stable) }, timeout, interval).Should(Equal(4))

		By("a new template that works: it rolls out as usual, the abort record removed")
		stop()
		stopAll := kubelet(md, 100*time.Millisecond)
		defer stopAll()
		good := newTemplate(md, "nginx:1.28")
		complete(md)
		Eventually(func() string { return get(md).Status.CurrentRevision }, timeout, interval).Should(Equal(good))
		Expect(get(md).Annotations).NotTo(HaveKey(appsv1beta1.AbortedRevisionAnnotation))
		Eventually(conditionReason(md, appsv1beta1.ConditionProgressing), timeout, interval).Should(Equal(appsv1beta1.ReasonNewRevisionAvailable))
		violations, _ := w.result()
		Expect(violations).To(BeEmpty())
	})

	It("moves the updated pods back in place under update-mode InPlaceIfPossible: the same pods, none created", func() {
		md := rolling(newMD(ns, "inplace", 4, "nginx:1.27"), intstr.FromInt32(1), intstr.FromInt32(1))
		md.Spec.ProgressDeadlineSeconds = ptr.To[int32](2)
		md.Annotations = map[string]string{appsv1beta1.OnFailureAnnotation: appsv1beta1.OnFailureAbort,
			appsv1beta1.UpdateModeAnnotation: appsv1beta1.UpdateModeInPlaceIfPossible}
		Expect(k8sClient.Create(ctx, md)).To(Succeed())
		stop := brokenInPlaceKubelet(md, "nginx:broken", 100*time.Millisecond)
		defer stop()
		complete(md)
		stable := get(md).Status.CurrentRevision
		w := watchPods(md, 4, 3)
		defer w.stop()
		Eventually(func() int { _, n := w.result(); return n }, timeout, interval).Should(Equal(4))
		w.armAvailability()
		before := uids(md)

		update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Template.Spec.Containers[0].Image = "nginx:broken" })
		Eventually(conditionReason(md, appsv1beta1.ConditionProgressing), timeout, interval).Should(Equal(appsv1beta1.ReasonRolloutAborted))
		Eventually(func(g Gomega) {
			g.Expect(podsOfRevision(md, stable)).To(Equal(4))
			g.Expect(imagesOf(md)).To(Equal([]string{"nginx:1.27"}))
			g.Expect(get(md).Status.AvailableReplicas).To(BeEquivalentTo(4))
		}, timeout, interval).Should(Succeed())
		Expect(uids(md)).To(Equal(before), "no pod was replaced")
		violations, created := w.result()
		Expect(violations).To(BeEmpty())
		Expect(created).To(Equal(4), "no pod created")
		Expect(get(md).Spec.Template.Spec.Containers[0].Image).To(Equal("nginx:broken"))
	})

	It("reports an on-failure value that can never work as ReplicaFailure InvalidAnnotation, writing no pod", func() {
		md := newMD(ns, "badfailure", 2, "nginx:1.27")
		md.Annotations = map[string]string{appsv1beta1.OnFailureAnnotation: "Rollback"}
		Expect(k8sClient.Create(ctx, md)).To(Succeed())
		Eventually(func() string {
			if c := condition(get(md), appsv1beta1.ConditionReplicaFailure); c != nil && c.Status == corev1.ConditionTrue {
				return c.Reason + ": " + c.Message
			}
			return ""
		}, timeout, interval).Should(And(HavePrefix(appsv1beta1.ReasonInvalidAnnotation+": "), ContainSubstring(appsv1beta1.OnFailureAnnotation)))
		Consistently(func() []corev1.Pod { return podsOf(md) }, time.Second, 250*time.Millisecond).Should(BeEmpty())
		Expect(rec.of(md, appsv1beta1.ReasonInvalidAnnotation)).To(HaveLen(1))
		annotate(md, appsv1beta1.OnFailureAnnotation, appsv1beta1.OnFailureAbort)
		Eventually(func() []corev1.Pod { return podsOf(md) }, timeout, interval).Should(HaveLen(2))
	})

	It("without on-failure Abort behaves as a Deployment: ProgressDeadlineExceeded, and the rollout stays where it stands", func() {
		md, stable, w := started("continue", nil)
		defer w.stop()
		stop := kubeletFor(md, stable, 100*time.Millisecond)
		defer stop()
		bad := newTemplate(md, "nginx:broken")
		Eventually(conditionReason(md, appsv1beta1.ConditionProgressing), timeout, interval).Should(Equal(appsv1beta1.ReasonProgressDeadlineExceeded))
		Consistently(func(g Gomega) {
			g.Expect(podsOfRevision(md, bad)).To(BeNumerically(">", 0))
			g.Expect(conditionReason(md, appsv1beta1.ConditionProgressing)()).To(Equal(appsv1beta1.ReasonProgressDeadlineExceeded))
		}, 3*time.Second, 200*time.Millisecond).Should(Succeed())
		Expect(get(md).Annotations).NotTo(HaveKey(appsv1beta1.AbortedRevisionAnnotation))
		Expect(rec.of(md, appsv1beta1.EventRolloutAborted)).To(BeEmpty())
		violations, _ := w.result()
		Expect(violations).To(BeEmpty())
	})
})
