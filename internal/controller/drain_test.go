package controller

import (
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/drain"
)

// newNode creates a Node named name: envtest has no kubelet, so a node is
// a plain object, which is all the drain reads of it.
func newNode(name string) *corev1.Node {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	Expect(k8sClient.Create(ctx, node)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, node))).To(Succeed()) })
	return node
}

// updateNode changes a node, retrying on conflicts.
func updateNode(node *corev1.Node, change func(*corev1.Node)) {
	Eventually(func() error {
		cur := &corev1.Node{}
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(node), cur); err != nil {
			return err
		}
		change(cur)
		return k8sClient.Update(ctx, cur)
	}, timeout, interval).Should(Succeed())
}

// scheduler plays kube-scheduler and the kubelet for md's pods, every tick
// until stopped: it binds each unbound pod (pods/binding, as the scheduler
// does) to the first of nodes that is neither cordoned nor tainted, then
// marks bound pods Ready.
func scheduler(md *appsv1beta1.MyDeployment, nodes *[]*corev1.Node, mu *sync.Mutex) (stop func()) {
	return everyTick(100*time.Millisecond, func() {
		mu.Lock()
		names := make([]string, 0, len(*nodes))
		for _, n := range *nodes {
			names = append(names, n.Name)
		}
		mu.Unlock()
		for _, p := range podsOf(md) {
			if p.Spec.NodeName == "" {
				if target := schedulable(names); target != "" {
					_ = k8sClient.SubResource("binding").Create(ctx, &p, &corev1.Binding{
						ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
						Target:     corev1.ObjectReference{Kind: "Node", Name: target},
					})
				}
				continue
			}
			if !podReady(&p) {
				_ = markReady(&p)
			}
		}
	})
}

// schedulable is the first of the named nodes a pod may be scheduled on.
func schedulable(names []string) string {
	for _, name := range names {
		node := &corev1.Node{}
		if k8sClient.Get(ctx, client.ObjectKey{Name: name}, node) == nil && !drain.NodeDraining(node) {
			return name
		}
	}
	return ""
}

// podNodes are the nodes of md's pods that are not terminating, sorted.
func podNodes(md *appsv1beta1.MyDeployment) []string {
	var out []string
	for _, p := range podsOf(md) {
		out = append(out, p.Spec.NodeName)
	}
	slices.Sort(out)
	return out
}

var _ = Describe("Beyond Deployment: make-before-break drains", Ordered, ContinueOnFailure, Serial, func() {
	var (
		ns  string
		rec *countingRecorder
	)
	withCountingManager(&rec)
	BeforeEach(func() { ns = newNamespace() })

	It("replaces a one-replica app's pod on a cordoned, then a tainted, node surge first, never without an available pod", func() {
		var mu sync.Mutex
		a := newNode(ns + "-a")
		nodes := []*corev1.Node{a}
		md := rolling(newMD(ns, "web", 1, "nginx:1.27"), intstr.FromInt32(0), intstr.FromInt32(1))
		md.Annotations = map[string]string{appsv1beta1.DrainAnnotation: appsv1beta1.DrainSurgeFirst}
		Expect(k8sClient.Create(ctx, md)).To(Succeed())
		stop := scheduler(md, &nodes, &mu)
		defer stop()
		complete(md)
		Expect(podNodes(md)).To(Equal([]string{a.Name}))
		first := podNames(md)

		w := watchPods(md, 2, 1) // replicas+max(maxSurge 0, 1); never fewer than 1 available
		defer w.stop()
		Eventually(func() int { _, n := w.result(); return n }, timeout, interval).Should(Equal(1))
		w.armAvailability()

		By("node a cordoned: a new pod on node b first, the old one removed once it is available")
		b := newNode(ns + "-b")
		mu.Lock()
		nodes = append(nodes, b)
		mu.Unlock()
		updateNode(a, func(n *corev1.Node) { n.Spec.Unschedulable = true })
		Eventually(func() []string { return podNodes(md) }, timeout, interval).Should(Equal([]string{b.Name}))
		complete(md)
		Eventually(func() []string { return rec.of(md, appsv1beta1.EventDrainReplaced) }, timeout, interval).Should(
			ConsistOf(ContainSubstring("Replaced pod " + first[0] + " on draining node " + a.Name)))

		By("node b tainted by Karpenter for removal: the pod moves on to node c")
		c := newNode(ns + "-c")
		mu.Lock()
		nodes = append(nodes, c)
		mu.Unlock()
		updateNode(b, func(n *corev1.Node) {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: appsv1beta1.TaintKarpenterDisrupted, Effect: corev1.TaintEffectNoSchedule})
		})
		Eventually(func() []string { return podNodes(md) }, timeout, interval).Should(Equal([]string{c.Name}))
		complete(md)
		Eventually(func() []string { return rec.of(md, appsv1beta1.EventDrainReplaced) }, timeout, interval).Should(HaveLen(2))

		violations, created := w.result()
		Expect(violations).To(BeEmpty(), "the bounds on every watch event")
		Expect(created).To(Equal(3), "one replacement per drain, no more")
	})

	It("does nothing on a cordon without the annotation, as a Deployment", func() {
		var mu sync.Mutex
		a := newNode(ns + "-a")
		nodes := []*corev1.Node{a, newNode(ns + "-b")}
		md := newMD(ns, "plain", 2, "nginx:1.27")
		Expect(k8sClient.Create(ctx, md)).To(Succeed())
		stop := scheduler(md, &nodes, &mu)
		defer stop()
		complete(md)
		before := podNames(md)
		updateNode(a, func(n *corev1.Node) { n.Spec.Unschedulable = true })
		Consistently(func() []string { return podNames(md) }, 3*time.Second, 200*time.Millisecond).Should(Equal(before))
		Expect(rec.of(md, appsv1beta1.EventDrainReplaced)).To(BeEmpty())
	})

	It("reports a drain value admission would refuse as InvalidAnnotation, writing no pod", func() {
		md := newMD(ns, "baddrain", 1, "nginx:1.27")
		md.Annotations = map[string]string{appsv1beta1.DrainAnnotation: "Evict"}
		Expect(k8sClient.Create(ctx, md)).To(Succeed())
		Eventually(func() string {
			if c := condition(get(md), appsv1beta1.ConditionReplicaFailure); c != nil {
				return c.Reason + ": " + c.Message
			}
			return ""
		}, timeout, interval).Should(And(HavePrefix(appsv1beta1.ReasonInvalidAnnotation+": "), ContainSubstring(appsv1beta1.DrainAnnotation)))
		Expect(podsOf(md)).To(BeEmpty())
		annotate(md, appsv1beta1.DrainAnnotation, appsv1beta1.DrainSurgeFirst)
		Eventually(func() []corev1.Pod { return podsOf(md) }, timeout, interval).Should(HaveLen(1))
	})
})

var _ = Describe("Drains without access to Nodes", Ordered, Serial, func() {
	const serviceAccount = "mydeployment-manager-no-nodes"
	BeforeAll(func() {
		stopManager()
		bindClusterRole(ctx, clusterRole("role.yaml").Name, serviceAccount) // the markers' rules only
		startManagerWith(impersonating(managerCfg, serviceAccount), nil)
	})
	AfterAll(func() {
		stopManager()
		startManager()
	})

	It("reports DrainAccessDenied on the opted-in object, and every MyDeployment still works", func() {
		ns := newNamespace()
		opted := newMD(ns, "opted", 2, "nginx:1.27")
		opted.Annotations = map[string]string{appsv1beta1.DrainAnnotation: appsv1beta1.DrainSurgeFirst}
		plain := newMD(ns, "plain", 2, "nginx:1.27")
		createReady(plain)
		Expect(k8sClient.Create(ctx, opted)).To(Succeed())
		Eventually(func() []corev1.Pod { return podsOf(opted) }, timeout, interval).Should(HaveLen(2))
		Eventually(conditionReason(opted, appsv1beta1.ConditionReplicaFailure), timeout, interval).Should(
			Equal(appsv1beta1.ReasonDrainAccessDenied))
		Expect(strings.Contains(condition(get(opted), appsv1beta1.ConditionReplicaFailure).Message, "list and watch Nodes")).To(BeTrue())
		Expect(condition(get(plain), appsv1beta1.ConditionReplicaFailure)).To(BeNil())

		By("a scale of the plain one still goes through")
		update(plain, func(m *appsv1beta1.MyDeployment) { m.Spec.Replicas = ptr.To[int32](3) })
		Eventually(func() []corev1.Pod { return podsOf(plain) }, timeout, interval).Should(HaveLen(3))
	})
})
