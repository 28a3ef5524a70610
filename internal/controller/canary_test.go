package controller

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/canary"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
	"github.com/mydeployment-io/mydeployment-operator/internal/upgrade"
)

// canaryStep reads the step md's controller recorded.
func canaryStep(md *appsv1beta1.MyDeployment) rollout.CanaryState {
	st, err := canary.ParseState(get(md).Annotations[appsv1beta1.CanaryStepAnnotation])
	Expect(err).NotTo(HaveOccurred())
	return st
}

var _ = Describe("Beyond Deployment: canary steps", Ordered, ContinueOnFailure, Serial, func() {
	var (
		ns  string
		rec *countingRecorder
	)
	withCountingManager(&rec)
	BeforeEach(func() { ns = newNamespace() })

	It("advances its steps, resumes after a timed pause, holds at a bare pause until promoted, within the bounds", func() {
		md := rolling(newMD(ns, "steps", 10, "nginx:1.27"), intstr.FromInt32(2), intstr.FromInt32(1))
		md.Spec.ProgressDeadlineSeconds = ptr.To[int32](3)
		md.Annotations = map[string]string{appsv1beta1.CanaryStepsAnnotation: "1, pause 3s, 50%, pause, 100%"}
		createReady(md)
		oldRev := get(md).Status.CurrentRevision
		w := watchPods(md, 12, 9)
		defer w.stop()
		Eventually(func() int { _, n := w.result(); return n }, timeout, interval).Should(Equal(10), "the watch lists the ready pods")
		w.armAvailability()
		stop := kubelet(md, 200*time.Millisecond)
		defer stop()

		By("a new template: step 1 moves one pod, then the 3s pause")
		update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
		Eventually(progressing(md), timeout, interval).Should(HavePrefix(
			appsv1beta1.ReasonCanaryPaused + ": step 2 of 5: paused 3s, until "))
		Expect(get(md).Status.UpdatedReplicas).To(BeEquivalentTo(1))

		By("the pause ends by itself: step 3 moves half, then step 4 waits for a promote")
		Eventually(progressing(md), timeout, interval).Should(Equal(
			appsv1beta1.ReasonCanaryPaused + ": step 4 of 5: paused until promote"))
		updateRev := get(md).Status.UpdateRevision
		Expect(canaryStep(md)).To(Equal(rollout.CanaryState{Revision: updateRev, Index: 3}))
		Expect(get(md).Status.CurrentRevision).To(Equal(oldRev))
		Expect(podsOfRevision(md, oldRev)).To(Equal(5))

		By("held: no pod moves, and no ProgressDeadlineExceeded well past the 3s deadline")
		held := podNames(md)
		Consistently(func(g Gomega) {
			g.Expect(podNames(md)).To(Equal(held))
			g.Expect(progressing(md)()).To(HavePrefix(appsv1beta1.ReasonCanaryPaused + ":"))
		}, 5*time.Second, 250*time.Millisecond).Should(Succeed())
		Expect(rec.of(md, appsv1beta1.ReasonProgressDeadlineExceeded)).To(BeEmpty())
		Expect(upgrade.Rolling(get(md))).To(BeFalse(), "a canary waiting for a promote does not hold an operator upgrade")

		By("a stale promote (step 2) ends nothing")
		annotate(md, appsv1beta1.CanaryPromoteAnnotation, updateRev+"/2")
		Consistently(func() []string { return podNames(md) }, 2*time.Second, 250*time.Millisecond).Should(Equal(held))

		By("promoted: step 5 moves the rest and the rollout completes")
		annotate(md, appsv1beta1.CanaryPromoteAnnotation, updateRev+"/4")
		complete(md)
		Eventually(conditionReason(md, appsv1beta1.ConditionProgressing), timeout, interval).Should(Equal(appsv1beta1.ReasonNewRevisionAvailable))
		Eventually(func() int { return canaryStep(md).Index }, timeout, interval).Should(Equal(5), "the record says every step is done")
		Expect(rec.of(md, appsv1beta1.EventCanaryStep)).To(Equal([]string{
			`Canary of revision "` + updateRev + `" at step 1 of 5: 1`,
			`Canary of revision "` + updateRev + `" at step 2 of 5: paused 3s, until ` + canaryPauseEnd(rec.of(md, appsv1beta1.EventCanaryStep)),
			`Canary of revision "` + updateRev + `" at step 3 of 5: 50%`,
			`Canary of revision "` + updateRev + `" at step 4 of 5: paused until promote`,
			`Canary of revision "` + updateRev + `" at step 5 of 5: 100%`,
			`Canary of revision "` + updateRev + `" at all 5 steps done`,
		}), "one event per step")
		violations, _ := w.result()
		Expect(violations).To(BeEmpty())
	})

	It("completes at once on promote --full, and starts a new template at the first step", func() {
		md := rolling(newMD(ns, "full", 4, "nginx:1.27"), intstr.FromInt32(1), intstr.FromInt32(0))
		md.Annotations = map[string]string{appsv1beta1.CanaryStepsAnnotation: "pause, 50%, pause, 100%"}
		createReady(md)
		oldRev := get(md).Status.CurrentRevision
		w := watchPods(md, 5, 4)
		defer w.stop()
		Eventually(func() int { _, n := w.result(); return n }, timeout, interval).Should(Equal(4))
		w.armAvailability()
		stop := kubelet(md, 200*time.Millisecond)
		defer stop()

		update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
		Eventually(progressing(md), timeout, interval).Should(Equal(
			appsv1beta1.ReasonCanaryPaused + ": step 1 of 4: paused until promote"))
		Expect(podsOfRevision(md, oldRev)).To(Equal(4), "a pause first holds every pod")

		By("a promote of step 1, then a newer template: back to step 1")
		annotate(md, appsv1beta1.CanaryPromoteAnnotation, get(md).Status.UpdateRevision+"/1")
		Eventually(progressing(md), timeout, interval).Should(Equal(
			appsv1beta1.ReasonCanaryPaused + ": step 3 of 4: paused until promote"))
		update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Template.Spec.Containers[0].Image = "nginx:1.29" })
		Eventually(progressing(md), timeout, interval).Should(Equal(
			appsv1beta1.ReasonCanaryPaused + ": step 1 of 4: paused until promote"))

		By("promote --full: every remaining step ends")
		annotate(md, appsv1beta1.CanaryPromoteAnnotation, get(md).Status.UpdateRevision+"/full")
		complete(md)
		Eventually(func() string { return get(md).Status.CurrentRevision }, timeout, interval).Should(Equal(get(md).Status.UpdateRevision))
		violations, _ := w.result()
		Expect(violations).To(BeEmpty())
	})

	It("reports canary steps it cannot read as ReplicaFailure InvalidAnnotation, writing no pod", func() {
		md := newMD(ns, "badsteps", 2, "nginx:1.27")
		md.Annotations = map[string]string{appsv1beta1.CanaryStepsAnnotation: "1, pause soon"}
		Expect(k8sClient.Create(ctx, md)).To(Succeed())
		Eventually(func() string {
			if c := condition(get(md), appsv1beta1.ConditionReplicaFailure); c != nil && c.Status == corev1.ConditionTrue {
				return c.Reason + ": " + c.Message
			}
			return ""
		}, timeout, interval).Should(And(HavePrefix(appsv1beta1.ReasonInvalidAnnotation+": "),
			ContainSubstring(appsv1beta1.CanaryStepsAnnotation), ContainSubstring("a pause's duration must be positive")))
		Consistently(func() []corev1.Pod { return podsOf(md) }, 2*time.Second, 250*time.Millisecond).Should(BeEmpty())
	})
})

// canaryPauseEnd is the end time the step 2 event of notes names (it
// depends on when the pause began).
func canaryPauseEnd(notes []string) string {
	const marker = "paused 3s, until "
	for _, n := range notes {
		if i := strings.Index(n, marker); i >= 0 {
			return n[i+len(marker):]
		}
	}
	return "(no step 2 event)"
}
