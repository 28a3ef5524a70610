package controller

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

var _ = Describe("Scaling", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	// Deployment's arithmetic: replicas 10 with 25%/25% is maxSurge 3,
	// maxUnavailable 2, so a template whose pods never become Ready stops at
	// 8 old/5 new (13 = 10+3). Scaled to 30 (maxSurge 8: 38 allowed), the 25
	// new places go by share of 13: old round(8*38/13) = 23, new
	// round(5*38/13) = 15. The rollout then waits: 23 old are exactly
	// replicas-maxUnavailable = 30-7.
	It("spreads a scale mid-rollout over the revisions: 8 old/5 new, 10 -> 30, ends 23 old/15 new", func() {
		md := newMD(ns, "spread", 10, "nginx:1.27")
		createReady(md)
		update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Template.Spec.Containers[0].Image = "broken:1" })
		Eventually(func() string { return byImage(podsOf(md)) }, timeout, interval).
			Should(Equal("nginx:1.27=8 broken:1=5"))

		update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Replicas = ptr.To[int32](30) })
		Eventually(func() string { return byImage(podsOf(md)) }, timeout, interval).
			Should(Equal("nginx:1.27=23 broken:1=15"))
		Consistently(func() string { return byImage(podsOf(md)) }, 2*time.Second, 200*time.Millisecond).
			Should(Equal("nginx:1.27=23 broken:1=15"), "the rollout must wait for the new pods")
		Expect(get(md).Annotations).To(And(
			HaveKeyWithValue(appsv1beta1.DesiredReplicasAnnotation, "30"),
			HaveKeyWithValue(appsv1beta1.MaxReplicasAnnotation, "38")))

		// Back to 10: the same shares the other way, 8 old/5 new.
		update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Replicas = ptr.To[int32](10) })
		Eventually(func() string { return byImage(podsOf(md)) }, timeout, interval).
			Should(Equal("nginx:1.27=8 broken:1=5"))
	})

	// The reported runaway: replicas 1000000000 created pods for as long as
	// it ran, ignored replicas: 3 and never wrote status. One sync now
	// creates at most rollout.DefaultMaxBurst pods, so the spec is read
	// again between batches. (envtest: QPS 1000, see suite_test.go; no
	// kubelet, so a pod without a node is gone as soon as it is deleted.)
	It("stops a runaway scale and serves other MyDeployments meanwhile", func() {
		a := newMD(ns, "runaway", 1_000_000_000, "nginx:1.27")
		Expect(k8sClient.Create(ctx, a)).To(Succeed())
		Eventually(func() int { return countPods(a) }, timeout, 500*time.Millisecond).Should(BeNumerically(">=", 300))
		Eventually(func() int32 { return get(a).Status.Replicas }, 15*time.Second, 200*time.Millisecond).
			Should(BeNumerically(">", 0), "status is written while the scale goes on")

		b := newMD(newNamespace(), "bystander", 3, "nginx:1.27")
		start := time.Now()
		Expect(k8sClient.Create(ctx, b)).To(Succeed())
		Eventually(func() []corev1.Pod { return podsOf(b) }, 15*time.Second, 100*time.Millisecond).Should(HaveLen(3))
		GinkgoWriter.Printf("bystander had its 3 pods after %v, with %d runaway pods\n", time.Since(start), countPods(a))

		before, start := countPods(a), time.Now()
		update(a, func(m *appsv1beta1.MyDeployment) { m.Spec.Replicas = ptr.To[int32](3) })
		Eventually(func() int { return countPods(a) }, 40*time.Second, 500*time.Millisecond).Should(BeNumerically("<=", 3))
		GinkgoWriter.Printf("runaway down from %d pods to 3 in %v\n", before, time.Since(start))
		Consistently(func() int { return countPods(a) }, 2*time.Second, 250*time.Millisecond).Should(Equal(3),
			"creation must have stopped")
		Eventually(func() int32 { return get(a).Status.Replicas }, timeout, interval).Should(BeEquivalentTo(3))
	})
})

// byImage summarizes active pods as "nginx:1.27=N broken:1=M", leaving out
// an image without pods.
func byImage(pods []corev1.Pod) string {
	counts := map[string]int{}
	for _, p := range pods {
		counts[p.Spec.Containers[0].Image]++
	}
	var parts []string
	for _, img := range []string{"nginx:1.27", "broken:1"} {
		if counts[img] > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", img, counts[img]))
		}
	}
	return strings.Join(parts, " ")
}

// countPods counts md's pods, terminating ones too, from the API server.
func countPods(md *appsv1beta1.MyDeployment) int {
	var list corev1.PodList
	Expect(k8sClient.List(ctx, &list, client.InNamespace(md.Namespace),
		client.MatchingLabels(md.Spec.Selector.MatchLabels))).To(Succeed())
	return len(list.Items)
}
