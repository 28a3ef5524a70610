package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/freshness"
	"github.com/mydeployment-io/mydeployment-operator/internal/podcontrol"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
)

// countingRecorder records every event the reconciler emits, as the API's
// Event objects cannot tell: the event library folds repeats into a
// series it writes back only every few minutes.
type countingRecorder struct {
	events.EventRecorder
	mu    sync.Mutex
	notes map[string][]string // "<namespace>/<name> <reason>" -> notes
}

func (c *countingRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	var key string
	switch o := regarding.(type) {
	case client.Object:
		key = o.GetNamespace() + "/" + o.GetName() + " " + reason
	case *corev1.ObjectReference:
		key = o.Namespace + "/" + o.Name + " " + reason
	}
	if key != "" {
		c.mu.Lock()
		c.notes[key] = append(c.notes[key], fmt.Sprintf(note, args...))
		c.mu.Unlock()
	}
	c.EventRecorder.Eventf(regarding, related, eventtype, reason, action, note, args...)
}

// of returns the notes of md's events with reason, in order.
func (c *countingRecorder) of(md *appsv1beta1.MyDeployment, reason string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.notes[md.Namespace+"/"+md.Name+" "+reason])
}

// annotate sets (or, for "", removes) an annotation on md.
func annotate(md *appsv1beta1.MyDeployment, key, value string) {
	update(md, func(m *appsv1beta1.MyDeployment) {
		if value == "" {
			delete(m.Annotations, key)
			return
		}
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations[key] = value
	})
}

// podNames are the names of md's pods that are not terminating, sorted.
func podNames(md *appsv1beta1.MyDeployment) []string {
	var out []string
	for _, p := range podsOf(md) {
		out = append(out, p.Name)
	}
	slices.Sort(out)
	return out
}

// podsOfRevision counts md's pods (not terminating) of revision rev.
func podsOfRevision(md *appsv1beta1.MyDeployment, rev string) int {
	n := 0
	for _, p := range podsOf(md) {
		if p.Labels[appsv1beta1.RevisionLabel] == rev {
			n++
		}
	}
	return n
}

// progressing returns md's Progressing condition as "<reason>: <message>".
func progressing(md *appsv1beta1.MyDeployment) func() string {
	return func() string {
		if c := condition(get(md), appsv1beta1.ConditionProgressing); c != nil {
			return c.Reason + ": " + c.Message
		}
		return ""
	}
}

// setBudgetStatus plays the disruption controller, which envtest lacks, as
// Kubernetes' own eviction integration tests do: the budget's status, for
// the generation the API server gave it.
func setBudgetStatus(pdb *policyv1.PodDisruptionBudget, allowed, healthy int32) {
	Eventually(func() error {
		cur := &policyv1.PodDisruptionBudget{}
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(pdb), cur); err != nil {
			return err
		}
		cur.Status = policyv1.PodDisruptionBudgetStatus{
			ObservedGeneration: cur.Generation,
			DisruptionsAllowed: allowed,
			CurrentHealthy:     healthy,
			DesiredHealthy:     healthy,
			ExpectedPods:       healthy,
		}
		return k8sClient.Status().Update(ctx, cur)
	}, timeout, interval).Should(Succeed())
}

// newBudget creates a PodDisruptionBudget over md's pods that lets none go.
func newBudget(md *appsv1beta1.MyDeployment, name string) *policyv1.PodDisruptionBudget {
	replicas := ptr.Deref(md.Spec.Replicas, 1)
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: md.Namespace, Name: name},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(replicas)),
			Selector:     md.Spec.Selector,
		},
	}
	Expect(k8sClient.Create(ctx, pdb)).To(Succeed())
	setBudgetStatus(pdb, 0, replicas)
	return pdb
}

// lostEvictions plays an API server whose reply to an eviction is lost:
// the pod is evicted, the caller gets a server timeout.
type lostEvictions struct{ podcontrol.Interface }

func (l lostEvictions) Evict(ctx context.Context, owner *appsv1beta1.MyDeployment, pod *corev1.Pod) error {
	if err := l.Interface.Evict(ctx, owner, pod); err != nil {
		return err
	}
	return apierrors.NewServerTimeout(corev1.Resource("pods"), "evict", 1)
}

var _ = Describe("Beyond Deployment: partition, specified delete, PDB-aware rollouts", Ordered, ContinueOnFailure, Serial, func() {
	var (
		ns  string
		rec *countingRecorder
	)
	withCountingManager(&rec)
	BeforeEach(func() { ns = newNamespace() })

	It("holds a partition canary, moves pods back when the partition is raised, and completes once promoted", func() {
		md := rolling(newMD(ns, "canary", 10, "nginx:1.27"), intstr.FromInt32(3), intstr.FromInt32(2))
		md.Spec.ProgressDeadlineSeconds = ptr.To[int32](3)
		createReady(md)
		oldRev := get(md).Status.CurrentRevision
		w := watchPods(md, 13, 8)
		defer w.stop()
		Eventually(func() int { _, n := w.result(); return n }, timeout, interval).Should(Equal(10), "the watch lists the ready pods")
		w.armAvailability()
		stop := kubelet(md, 200*time.Millisecond)
		defer stop()

		By("partition 8 and a new template: exactly 2 pods updated, then held")
		update(md, func(m *appsv1beta1.MyDeployment) {
			m.Annotations = map[string]string{appsv1beta1.PartitionAnnotation: "8"}
			m.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
		})
		Eventually(progressing(md), timeout, interval).Should(Equal(
			appsv1beta1.ReasonPartitionAvailable + ": 2 of 10 pods updated, 8 held by partition"))
		cur := get(md)
		Expect(cur.Status.UpdatedReplicas).To(BeEquivalentTo(2))
		Expect(cur.Status.CurrentRevision).To(Equal(oldRev), "the old revision stays current while partitioned")
		Expect(podsOfRevision(md, oldRev)).To(Equal(8))

		By("held: no pod moves, and no ProgressDeadlineExceeded well past the 3s deadline")
		held := podNames(md)
		Consistently(func(g Gomega) {
			g.Expect(podNames(md)).To(Equal(held))
			g.Expect(progressing(md)()).To(HavePrefix(appsv1beta1.ReasonPartitionAvailable + ":"))
		}, 6*time.Second, 250*time.Millisecond).Should(Succeed())
		Expect(rec.of(md, appsv1beta1.EventPartitionHeld)).To(HaveLen(1), "one event when the hold is reached")
		Expect(rec.of(md, appsv1beta1.ReasonProgressDeadlineExceeded)).To(BeEmpty())

		By("partition raised to 10: the updated pods move back to the current revision")
		annotate(md, appsv1beta1.PartitionAnnotation, "10")
		Eventually(progressing(md), timeout, interval).Should(Equal(
			appsv1beta1.ReasonPartitionAvailable + ": 0 of 10 pods updated, 10 held by partition"))
		Expect(podsOfRevision(md, oldRev)).To(Equal(10))
		Expect(podsOf(md)).To(HaveLen(10))

		By("promoted (the annotation removed): the rollout completes")
		annotate(md, appsv1beta1.PartitionAnnotation, "")
		complete(md)
		Eventually(func() string { return get(md).Status.CurrentRevision }, timeout, interval).Should(Equal(get(md).Status.UpdateRevision))
		Eventually(conditionReason(md, appsv1beta1.ConditionProgressing), timeout, interval).Should(Equal(appsv1beta1.ReasonNewRevisionAvailable))
		violations, _ := w.result()
		Expect(violations).To(BeEmpty())
	})

	It("holds a percent partition, rounded up", func() {
		md := newMD(ns, "percent", 4, "nginx:1.27")
		createReady(md)
		stop := kubelet(md, 200*time.Millisecond)
		defer stop()
		update(md, func(m *appsv1beta1.MyDeployment) {
			m.Annotations = map[string]string{appsv1beta1.PartitionAnnotation: "60%"} // 2.4 of 4: 3 held
			m.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
		})
		Eventually(progressing(md), timeout, interval).Should(Equal(
			appsv1beta1.ReasonPartitionAvailable + ": 1 of 4 pods updated, 3 held by partition"))
	})

	It("replaces a pod labelled specified-delete, new pod first, and deletes it first on a scale-down", func() {
		md := rolling(newMD(ns, "chosen", 3, "nginx:1.27"), intstr.FromInt32(1), intstr.FromInt32(0))
		createReady(md)
		pods := podsOf(md)
		marked := pods[1]
		label := func(p *corev1.Pod) { p.Labels[appsv1beta1.SpecifiedDeleteLabel] = "true" }
		updatePod(&marked, label)

		By("its replacement first, while it stays (maxUnavailable 0)")
		Eventually(func() []corev1.Pod { return podsOf(md) }, timeout, interval).Should(HaveLen(4))
		Consistently(func() []string { return podNames(md) }, 2*time.Second, 250*time.Millisecond).Should(ContainElement(marked.Name))
		By("then it goes, once the replacement is available")
		markAllReady(md)
		Eventually(func() []string { return podNames(md) }, timeout, interval).ShouldNot(ContainElement(marked.Name))
		complete(md)
		Expect(podsOf(md)).To(HaveLen(3))

		By("on a scale-down, the labelled pod is the one deleted")
		stopManager()
		before := podNames(md)
		chosen := podsOf(md)[2]
		updatePod(&chosen, label)
		update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Replicas = ptr.To[int32](2) })
		startManager(func(r *MyDeploymentReconciler) { r.Recorder = rec })
		Eventually(func() []string { return podNames(md) }, timeout, interval).Should(
			Equal(slices.DeleteFunc(before, func(n string) bool { return n == chosen.Name })))
		complete(md)
	})

	It("evicts under respect-pdb: a budget that allows nothing holds the rollout, with one event naming it, and it completes once allowed", func() {
		md := rolling(newMD(ns, "budget", 3, "nginx:1.27"), intstr.FromInt32(1), intstr.FromInt32(0))
		md.Annotations = map[string]string{appsv1beta1.RespectPDBAnnotation: "true"}
		md.Spec.ProgressDeadlineSeconds = ptr.To[int32](4)
		createReady(md)
		oldRev := get(md).Status.CurrentRevision
		pdb := newBudget(md, "web-budget")
		stop := kubelet(md, 200*time.Millisecond)
		defer stop()
		errorsBefore := reconcileErrors()

		update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
		By("no old pod goes; one EvictionRefused event names the budget")
		Eventually(func() []string { return rec.of(md, appsv1beta1.EventEvictionRefused) }, timeout, interval).Should(
			ConsistOf(ContainSubstring("web-budget")))
		Consistently(func(g Gomega) {
			g.Expect(podsOfRevision(md, oldRev)).To(Equal(3))
			g.Expect(rec.of(md, appsv1beta1.EventEvictionRefused)).To(HaveLen(1), "one event per spell, not one per retry")
		}, 5*time.Second, 250*time.Millisecond).Should(Succeed())
		By("the wait counts toward the progress deadline; it is no ReplicaFailure and no error loop")
		Eventually(conditionReason(md, appsv1beta1.ConditionProgressing), timeout, interval).Should(Equal(appsv1beta1.ReasonProgressDeadlineExceeded))
		Expect(condition(get(md), appsv1beta1.ConditionReplicaFailure)).To(BeNil())
		Expect(reconcileErrors()).To(Equal(errorsBefore))

		By("the budget allows one disruption at a time: the rollout goes on and completes")
		allow, done := context.WithCancel(ctx)
		go func() {
			defer GinkgoRecover()
			for allow.Err() == nil {
				setBudgetStatus(pdb, 1, 3)
				time.Sleep(300 * time.Millisecond)
			}
		}()
		defer done()
		complete(md)
		Expect(rec.of(md, appsv1beta1.EventEvicted)).NotTo(BeEmpty())
		Expect(podsOfRevision(md, oldRev)).To(BeZero())
	})

	It("deletes on a scale-down under respect-pdb, whatever the budget says", func() {
		md := newMD(ns, "shrink", 3, "nginx:1.27")
		md.Annotations = map[string]string{appsv1beta1.RespectPDBAnnotation: "true"}
		createReady(md)
		newBudget(md, "shrink-budget")
		update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Replicas = ptr.To[int32](1) })
		complete(md)
		Expect(rec.of(md, appsv1beta1.EventEvictionRefused)).To(BeEmpty())
	})

	It("reports an invalid annotation as ReplicaFailure InvalidAnnotation with one event, writing no pod", func() {
		md := newMD(ns, "badopt", 2, "nginx:1.27")
		md.Annotations = map[string]string{appsv1beta1.PartitionAnnotation: "-1"}
		errorsBefore := reconcileErrors()
		Expect(k8sClient.Create(ctx, md)).To(Succeed())
		Eventually(func() string {
			if c := condition(get(md), appsv1beta1.ConditionReplicaFailure); c != nil && c.Status == corev1.ConditionTrue {
				return c.Reason + ": " + c.Message
			}
			return ""
		}, timeout, interval).Should(And(HavePrefix(appsv1beta1.ReasonInvalidAnnotation+": "), ContainSubstring(appsv1beta1.PartitionAnnotation)))
		Consistently(func(g Gomega) {
			g.Expect(podsOf(md)).To(BeEmpty())
			g.Expect(reconcileErrors()).To(Equal(errorsBefore))
		}, 2*time.Second, 250*time.Millisecond).Should(Succeed())
		Expect(rec.of(md, appsv1beta1.ReasonInvalidAnnotation)).To(HaveLen(1))

		By("a valid value clears it")
		annotate(md, appsv1beta1.PartitionAnnotation, "1")
		Eventually(func() []corev1.Pod { return podsOf(md) }, timeout, interval).Should(HaveLen(2))
		Eventually(func() any { return condition(get(md), appsv1beta1.ConditionReplicaFailure) }, timeout, interval).Should(BeNil())
	})

	It("waits for the cache after an eviction whose reply was lost", func() {
		md := newMD(ns, "lostevict", 1, "nginx:1.27")
		createReady(md)
		stopManager()
		defer startManager(func(r *MyDeploymentReconciler) { r.Recorder = rec })
		md = get(md)
		sel, err := selectorOf(md)
		Expect(err).NotTo(HaveOccurred())
		r := &MyDeploymentReconciler{
			APIReader: k8sClient,
			Pods:      lostEvictions{&podcontrol.Real{Client: k8sClient}},
		}
		pods := podsOf(md)
		p := &syncPlan{Plan: rollout.Plan{Evict: []*corev1.Pod{&pods[0]}}, md: md, obj: &object{Record: freshness.NewRecord(0)},
			now: time.Now(), selector: sel}
		out := &outcome{}
		Expect(r.actor().evict(ctx, p, out)).To(MatchError(ContainSubstring("could not be completed at this time")))
		Expect(p.obj.Observe([]*corev1.Pod{&pods[0]}, time.Now()).Satisfied).To(BeFalse(),
			"a cache still listing the evicted pod must not plan another removal")
		Expect(strings.Contains(out.failure.Message, "evict")).To(BeTrue())
	})
})
