package controller

import (
	"fmt"
	"slices"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/waves"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
	"github.com/mydeployment-io/mydeployment-operator/internal/status"
)

// zoneKey is the node label the waves specs roll by.
const zoneKey = "topology.kubernetes.io/zone"

// zoneNodes creates one Node per zone, named and labelled after it.
func zoneNodes(zones ...string) {
	for _, z := range zones {
		node := newNode(z)
		updateNode(node, func(n *corev1.Node) { n.Labels = map[string]string{zoneKey: z} })
	}
}

// zonePlayer plays kube-scheduler and the kubelet for md's pods: a pod
// pinned to a zone (the affinity the controller adds, and its wave
// annotation) is bound to that zone's node, any other to the zones in
// turn; bound pods are marked Ready, except new pods (not of oldRev) in a
// zone set broken.
type zonePlayer struct {
	md     *appsv1beta1.MyDeployment
	zones  []string
	oldRev string
	// bare is the node without the label that pods pinned to no domain go to.
	bare   string
	mu     sync.Mutex
	next   int
	broken map[string]bool
}

func (z *zonePlayer) setBroken(zone string, broken bool) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.broken[zone] = broken
}

func (z *zonePlayer) play() {
	z.mu.Lock()
	defer z.mu.Unlock()
	var all corev1.PodList
	_ = k8sClient.List(ctx, &all, client.InNamespace(z.md.Namespace), client.MatchingLabels(z.md.Spec.Selector.MatchLabels))
	for _, p := range all.Items {
		if p.DeletionTimestamp != nil { // the kubelet confirms a bound pod's deletion
			_ = k8sClient.Delete(ctx, &p, client.GracePeriodSeconds(0))
		}
	}
	for _, p := range podsOf(z.md) {
		switch {
		case p.Spec.NodeName == "":
			zone, pinned := p.Annotations[rollout.WavePodAnnotation]
			switch {
			case !pinned:
				zone = z.zones[z.next%len(z.zones)]
				z.next++
			case zone == rollout.NoDomain:
				zone = z.bare
			}
			_ = k8sClient.SubResource("binding").Create(ctx, &p, &corev1.Binding{
				ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
				Target:     corev1.ObjectReference{Kind: "Node", Name: zone}})
		case !podReady(&p) && !(z.broken[p.Spec.NodeName] && p.Labels[appsv1beta1.RevisionLabel] != z.oldRev):
			_ = markReady(&p)
		}
	}
}

// zoneView is md's pods by zone (their node's name is their zone): each
// zone's pods as "name revision ready", sorted.
func zoneView(md *appsv1beta1.MyDeployment) map[string][]string {
	out := map[string][]string{}
	for _, p := range podsOf(md) {
		out[p.Spec.NodeName] = append(out[p.Spec.NodeName], fmt.Sprintf("%s %s %v", p.Name, p.Labels[appsv1beta1.RevisionLabel], podReady(&p)))
	}
	for _, pods := range out {
		slices.Sort(pods)
	}
	return out
}

// waveLog watches md's zones every tick: when each zone first changed
// (a pod of it gone or added) and when each was first seen done (every
// pod of the update revision and ready), and any tick at which a zone
// changed before every zone before it was done.
type waveLog struct {
	mu         sync.Mutex
	zones      []string
	before     map[string][]string
	changed    map[string]time.Time
	done       map[string]time.Time
	violations []string
	stop       func()
}

func watchWaves(md *appsv1beta1.MyDeployment, zones []string, oldRev string) *waveLog {
	l := &waveLog{zones: zones, before: zoneView(md), changed: map[string]time.Time{}, done: map[string]time.Time{}}
	l.stop = everyTick(50*time.Millisecond, func() { l.look(md, oldRev) })
	return l
}

func (l *waveLog) look(md *appsv1beta1.MyDeployment, oldRev string) {
	view, now := zoneView(md), time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, z := range l.zones {
		if _, ok := l.changed[z]; !ok && !slices.Equal(view[z], l.before[z]) {
			l.changed[z] = now
			for _, earlier := range l.zones[:i] {
				if _, done := l.done[earlier]; !done {
					l.violations = append(l.violations, fmt.Sprintf("zone %s changed before zone %s was done: %v", z, earlier, view))
				}
			}
		}
		if _, ok := l.done[z]; !ok && len(view[z]) == len(l.before[z]) && zoneDone(view[z], oldRev) {
			l.done[z] = now
		}
	}
}

// zoneDone says every pod of a zone's view is of another revision than
// oldRev and ready.
func zoneDone(pods []string, oldRev string) bool {
	for _, p := range pods {
		var name, rev string
		var ready bool
		_, _ = fmt.Sscanf(p, "%s %s %t", &name, &rev, &ready)
		if rev == oldRev || !ready {
			return false
		}
	}
	return len(pods) > 0
}

func (l *waveLog) times(z string) (changed, done time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed[z], l.done[z]
}

func (l *waveLog) result() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.violations)
}

// wavesMD is a 6-replica app rolling by zoneKey in zones' order with bake,
// 2 pods per zone once zonePlayer placed them.
func wavesMD(ns, name, bake string, zones []string) *appsv1beta1.MyDeployment {
	md := rolling(newMD(ns, name, 6, "nginx:1.27"), intstr.FromInt32(1), intstr.FromInt32(0))
	md.Annotations = map[string]string{waves.Annotation: fmt.Sprintf(`{"key":%q,"order":[%q,%q,%q],"bake":%q}`,
		zoneKey, zones[0], zones[1], zones[2], bake)}
	return md
}

// waveRecord is the wave record md's controller wrote.
func waveRecord(md *appsv1beta1.MyDeployment) rollout.WaveState {
	st, _ := waves.Recorded(get(md))
	return st
}

var _ = Describe("Beyond Deployment: zone-by-zone waves", Ordered, ContinueOnFailure, Serial, func() {
	var (
		ns  string
		rec *countingRecorder
	)
	withCountingManager(&rec)
	BeforeEach(func() { ns = newNamespace() })

	// start creates md on zones (2 pods each, ready; the zone bare, if
	// given, a node without the label) and plays the scheduler and
	// kubelet until the spec ends.
	start := func(md *appsv1beta1.MyDeployment, zones []string, bare ...string) *zonePlayer {
		for _, zone := range zones {
			if slices.Contains(bare, zone) {
				newNode(zone)
			} else {
				zoneNodes(zone)
			}
		}
		Expect(k8sClient.Create(ctx, md)).To(Succeed())
		z := &zonePlayer{md: md, zones: zones, broken: map[string]bool{}}
		if len(bare) > 0 {
			z.bare = bare[0]
		}
		DeferCleanup(everyTick(100*time.Millisecond, z.play))
		complete(md)
		view := zoneView(md)
		for _, zone := range zones {
			Expect(view[zone]).To(HaveLen(2), "two pods per zone: %v", view)
		}
		z.mu.Lock()
		z.oldRev = get(md).Status.CurrentRevision
		z.mu.Unlock()
		return z
	}

	It("rolls three zones one at a time, each after the bake of the one before", func() {
		zones := []string{ns + "-z3", ns + "-z1", ns + "-z2"} // the order, not the names' order
		md := wavesMD(ns, "web", "3s", zones)
		z := start(md, zones)
		l := watchWaves(md, zones, z.oldRev)
		defer l.stop()

		update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
		Eventually(progressing(md), timeout, interval).Should(HavePrefix(
			status.ReasonWaveBaking + ": wave 1 of 3: " + zones[0] + ", baking until "))
		Eventually(progressing(md), timeout, interval).Should(ContainSubstring("wave 2 of 3: " + zones[1]))
		complete(md)
		Eventually(func() string { return get(md).Status.CurrentRevision }, timeout, interval).Should(Equal(get(md).Status.UpdateRevision))

		Expect(l.result()).To(BeEmpty(), "no zone moved before the zones before it were done")
		for i := 1; i < len(zones); i++ {
			_, done := l.times(zones[i-1])
			changed, _ := l.times(zones[i])
			Expect(changed.Sub(done)).To(BeNumerically(">=", 3*time.Second-100*time.Millisecond),
				"zone %s started %s after zone %s was done: the bake is 3s", zones[i], changed.Sub(done), zones[i-1])
		}
		for _, p := range podsOf(md) {
			Expect(p.Annotations[rollout.WavePodAnnotation]).To(Equal(p.Spec.NodeName), "pinned to its zone: %s", p.Name)
			terms := p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
			Expect(terms).To(HaveLen(1))
			Expect(terms[0].MatchExpressions).To(ContainElement(corev1.NodeSelectorRequirement{
				Key: zoneKey, Operator: corev1.NodeSelectorOpIn, Values: []string{p.Spec.NodeName}}))
		}
		Expect(rec.of(md, appsv1beta1.ReasonProgressDeadlineExceeded)).To(BeEmpty())
	})

	It("rolls the pods on nodes without the label last, pinned to such nodes", func() {
		zones := []string{ns + "-z1", ns + "-z2", ns + "-bare"} // the waves: by name, the unlabelled node last
		md := rolling(newMD(ns, "bare", 6, "nginx:1.27"), intstr.FromInt32(1), intstr.FromInt32(0))
		md.Annotations = map[string]string{waves.Annotation: zoneKey}
		z := start(md, []string{zones[2], zones[1], zones[0]}, zones[2]) // placed in another order than they roll
		l := watchWaves(md, zones, z.oldRev)
		defer l.stop()

		update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
		Eventually(progressing(md), timeout, interval).Should(ContainSubstring("wave 3 of 3: nodes without the label"))
		complete(md)
		Expect(l.result()).To(BeEmpty(), "no zone moved before the zones before it were done")
		for _, p := range podsOf(md) {
			if p.Spec.NodeName != zones[2] {
				continue
			}
			Expect(p.Annotations).To(HaveKeyWithValue(rollout.WavePodAnnotation, ""))
			terms := p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
			Expect(terms[0].MatchExpressions).To(ContainElement(corev1.NodeSelectorRequirement{
				Key: zoneKey, Operator: corev1.NodeSelectorOpDoesNotExist}))
		}
	})

	It("holds zone 3 untouched while a pod of zone 2 does not become ready", func() {
		zones := []string{ns + "-z1", ns + "-z2", ns + "-z3"}
		md := wavesMD(ns, "held", "0s", zones)
		z := start(md, zones)
		z.setBroken(zones[1], true)
		l := watchWaves(md, zones, z.oldRev)
		defer l.stop()
		third := zoneView(md)[zones[2]]

		update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
		Eventually(func() time.Time { c, _ := l.times(zones[1]); return c }, timeout, interval).ShouldNot(BeZero())
		Eventually(progressing(md), timeout, interval).Should(ContainSubstring("wave 2 of 3: " + zones[1]))
		Consistently(func() []string { return zoneView(md)[zones[2]] }, 4*time.Second, 200*time.Millisecond).Should(Equal(third),
			"zone 3 untouched while zone 2 is not ready")
		Expect(waveRecord(md).Domain).To(Equal(zones[1]))

		By("zone 2's pods become ready: zone 3 rolls, and the rollout completes")
		z.setBroken(zones[1], false)
		complete(md)
		Expect(l.result()).To(BeEmpty())
	})

	It("does not start the next wave early, nor bake again, after a restart mid-bake", func() {
		zones := []string{ns + "-z1", ns + "-z2", ns + "-z3"}
		md := wavesMD(ns, "restart", "8s", zones)
		z := start(md, zones)
		l := watchWaves(md, zones, z.oldRev)
		defer l.stop()

		update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
		Eventually(func() time.Time { return waveRecord(md).BakeStarted }, timeout, interval).ShouldNot(BeZero())
		baked := waveRecord(md)
		Expect(baked.Domain).To(Equal(zones[0]))

		By("the manager restarts 4s into zone 1's 8s bake")
		time.Sleep(time.Until(baked.BakeStarted.Add(4 * time.Second)))
		stopManager()
		startManager(func(r *MyDeploymentReconciler) {
			rec = &countingRecorder{EventRecorder: r.Recorder, notes: map[string][]string{}}
			r.Recorder = rec
		})
		Eventually(func() time.Time { c, _ := l.times(zones[1]); return c }, timeout, interval).ShouldNot(BeZero())
		changed, _ := l.times(zones[1])
		Expect(changed).To(BeTemporally(">=", baked.BakeStarted.Add(8*time.Second)), "zone 2 began before the recorded bake ended")
		Expect(changed).To(BeTemporally("<", baked.BakeStarted.Add(11*time.Second)),
			"the bake ran again from the restart (it would end 12s after it began)")
		complete(md)
		Expect(l.result()).To(BeEmpty())
	})

	It("reports waves it cannot read as ReplicaFailure InvalidAnnotation, writing no pod", func() {
		md := newMD(ns, "badwaves", 2, "nginx:1.27")
		md.Annotations = map[string]string{waves.Annotation: `{"key":"zone","bake":"soon"}`}
		Expect(k8sClient.Create(ctx, md)).To(Succeed())
		Eventually(func() string {
			if c := condition(get(md), appsv1beta1.ConditionReplicaFailure); c != nil && c.Status == corev1.ConditionTrue {
				return c.Reason + ": " + c.Message
			}
			return ""
		}, timeout, interval).Should(And(HavePrefix(appsv1beta1.ReasonInvalidAnnotation+": "),
			ContainSubstring(waves.Annotation), ContainSubstring(`bake "soon"`)))
		Consistently(func() []corev1.Pod { return podsOf(md) }, 2*time.Second, 250*time.Millisecond).Should(BeEmpty())
	})
})

var _ = Describe("Waves without access to Nodes", Ordered, Serial, func() {
	const serviceAccount = "mydeployment-manager-no-nodes-waves" // its own binding: the drain's spec makes one too
	BeforeAll(func() {
		stopManager()
		bindClusterRole(ctx, clusterRole("role.yaml").Name, serviceAccount) // the markers' rules only
		startManagerWith(impersonating(managerCfg, serviceAccount), nil)
	})
	AfterAll(func() {
		stopManager()
		startManager()
	})

	It("holds the rollout with ReplicaFailure WavesAccessDenied", func() {
		ns := newNamespace()
		md := rolling(newMD(ns, "blind", 2, "nginx:1.27"), intstr.FromInt32(1), intstr.FromInt32(0))
		md.Annotations = map[string]string{waves.Annotation: zoneKey}
		createReady(md)
		before := podNames(md)
		update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
		Eventually(conditionReason(md, appsv1beta1.ConditionReplicaFailure), timeout, interval).Should(Equal(waves.ReasonWavesAccessDenied))
		Consistently(func() []string { return podNames(md) }, 3*time.Second, 250*time.Millisecond).Should(Equal(before),
			"no pod replaced without the zones")
	})
})
