package controller

import (
	"context"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/podcontrol"
	"github.com/mydeployment-io/mydeployment-operator/internal/shard"
)

// creates counts one replica's pod creations by namespace.
type creates struct {
	podcontrol.Interface
	mu   sync.Mutex
	byNS map[string]int
}

func (c *creates) Create(ctx context.Context, owner *appsv1beta1.MyDeployment, t *corev1.PodTemplateSpec, rev *appsv1.ControllerRevision) (*corev1.Pod, error) {
	pod, err := c.Interface.Create(ctx, owner, t, rev)
	if err == nil {
		c.mu.Lock()
		c.byNS[owner.Namespace]++
		c.mu.Unlock()
	}
	return pod, err
}

func (c *creates) in(ns string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byNS[ns]
}

// shardReplica is one manager of two sharing the namespaces.
type shardReplica struct {
	r       *MyDeploymentReconciler
	m       *shard.Membership
	creates *creates
	stop    func()
}

func startShardReplica(operatorNS, identity string, slotCaches bool) *shardReplica {
	m := shard.New(shard.Config{Client: k8sClient, Namespace: operatorNS, Identity: identity,
		LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond,
		Log: GinkgoLogr.WithName(identity)})
	s := &shardReplica{m: m}
	s.r, s.stop = runManager(managerOpts{restCfg: managerCfg, shards: m, slotCaches: slotCaches}, func(r *MyDeploymentReconciler) {
		s.creates = &creates{Interface: r.Pods, byNS: map[string]int{}}
		r.Pods = s.creates
	})
	return s
}

// cachedOutside counts the pods r's cache holds in namespaces of slots it
// does not hold.
func (s *shardReplica) cachedOutside() int {
	var pods corev1.PodList
	Expect(s.r.List(ctx, &pods)).To(Succeed())
	held, n := s.m.Gate().Held(), 0
	for _, p := range pods.Items {
		if !held.HasNamespace(p.Namespace) {
			n++
		}
	}
	return n
}

// The shards' controller side (issue 56) on a real API server: two
// replicas, each syncing only the namespaces of the slots it holds; one
// leaves gracefully and the other takes its namespaces without a pod
// created twice. Twice: with one cache of every namespace per replica (an
// API server that does not filter by shard: the gate alone keeps the
// replicas apart), and with a cache per slot held (shardcache; the
// suite's API server filters by shard), where a replica caches no pod of
// another's namespaces.
var _ = Describe("Shards: two replicas of the manager", Ordered, func() {
	BeforeAll(func() { stopManager() })
	AfterAll(func() { startManager() })

	for _, slotCaches := range []bool{false, true} {
		caches := "one cache of every namespace each"
		if slotCaches {
			caches = "a cache per slot held"
		}
		It("syncs each namespace on one replica, and a leaving replica's on the other ("+caches+")", func() {
			twoReplicas(slotCaches)
		})
	}
})

func twoReplicas(slotCaches bool) {
	operatorNS := newNamespace()
	r0, r1 := startShardReplica(operatorNS, "r0", slotCaches), startShardReplica(operatorNS, "r1", slotCaches)
	DeferCleanup(func() {
		for _, r := range []*shardReplica{r0, r1} {
			if r.stop != nil {
				r.stop()
			}
		}
	})
	Eventually(func() bool {
		a, b := r0.m.Gate().Acting(), r1.m.Gate().Acting()
		return a|b == shard.All && a&b == 0 && a != 0 && b != 0
	}, timeout, interval).Should(BeTrue(), "the two replicas share the 64 slots")

	By("namespaces until each replica holds two")
	var held [2][]string
	for len(held[0]) < 2 || len(held[1]) < 2 {
		ns := newNamespace()
		i := 1
		if r0.m.Gate().Acts(ns) {
			i = 0
		}
		if len(held[i]) < 2 {
			held[i] = append(held[i], ns)
		}
	}
	var mds []*appsv1beta1.MyDeployment
	for _, ns := range append(held[0], held[1]...) {
		md := newMD(ns, "web", 3, "nginx:1")
		Expect(k8sClient.Create(ctx, md)).To(Succeed())
		mds = append(mds, md)
	}
	completeAll := func(want int32) {
		for _, md := range mds {
			Eventually(func() []corev1.Pod { return podsOf(md) }, timeout, interval).Should(HaveLen(int(want)))
			markAllReady(md)
			complete(md)
		}
	}
	completeAll(3)
	for i, r := range []*shardReplica{r0, r1} {
		other := []*shardReplica{r1, r0}[i]
		for _, ns := range held[i] {
			Expect(r.creates.in(ns)).To(Equal(3), "the holder of %s created its pods", ns)
			Expect(other.creates.in(ns)).To(BeZero(), "the other replica created none in %s", ns)
		}
	}

	By("what each replica caches: its slots' pods only, with a cache per slot")
	for _, r := range []*shardReplica{r0, r1} {
		if slotCaches {
			Expect(r.cachedOutside()).To(BeZero(), "a replica caches no pod of the other's namespaces")
		} else {
			Expect(r.cachedOutside()).To(BeNumerically(">=", 6), "one cache holds the other's pods too")
		}
	}

	By("the shard series: the two replicas' slots and objects add up to all")
	allMDs := func() int {
		var list appsv1beta1.MyDeploymentList
		Expect(k8sClient.List(ctx, &list)).To(Succeed())
		return len(list.Items)
	}
	Eventually(func(g Gomega) {
		a, b := r0.r.ShardCounts(ctx), r1.r.ShardCounts(ctx)
		g.Expect(a.Slots + b.Slots).To(Equal(shard.Count))
		g.Expect(a.Objects + b.Objects).To(Equal(allMDs()))
		g.Expect(a.Pods).To(BeNumerically(">=", 6), "r0 caches the 3 pods of each of its 2 namespaces")
		g.Expect(b.Pods).To(BeNumerically(">=", 6))
	}, timeout, interval).Should(Succeed())

	By("r1 leaves: r0 takes its slots and syncs its namespaces")
	r1.stop()
	r1.stop = nil
	Eventually(func() shard.Slots { return r0.m.Gate().Acting() }, timeout, interval).Should(Equal(shard.All))
	for _, md := range mds {
		update(md, func(md *appsv1beta1.MyDeployment) { md.Spec.Replicas = ptr.To(int32(5)) })
	}
	completeAll(5)
	for _, ns := range held[1] {
		Expect(r0.creates.in(ns)).To(Equal(2), "r0 made the 2 new pods of %s, none again", ns)
		Expect(r1.creates.in(ns)).To(Equal(3))
	}
	for _, ns := range held[0] {
		Expect(r0.creates.in(ns)).To(Equal(5))
	}
	a := r0.r.ShardCounts(ctx)
	Expect(a.Slots).To(Equal(shard.Count))
	Expect(a.Objects).To(Equal(allMDs()))
	Expect(a.Pods).To(BeNumerically(">=", 5*len(mds)))
	Consistently(func() int {
		n := 0
		for _, md := range mds {
			n += len(podsOf(md))
		}
		return n
	}, 2*time.Second, interval).Should(Equal(5*len(mds)), "no pod created twice")
}
