package controller

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/status"
)

var _ = Describe("Status writes during a rollout", func() {
	It("writes progress at most once per batch period, and the settled status without waiting", func() {
		ns := newNamespace()
		md := newMD(ns, "paced", 12, "nginx:1.27")
		Expect(k8sClient.Create(ctx, md)).To(Succeed())
		Eventually(func() []corev1.Pod { return podsOf(md) }, timeout, interval).Should(HaveLen(12))
		// Let the creation's status land before watching the pods turn Ready.
		Eventually(func() int32 { return get(md).Status.Replicas }, timeout, interval).Should(BeEquivalentTo(12))

		wc, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
		w, err := wc.Watch(ctx, &appsv1beta1.MyDeploymentList{}, client.InNamespace(ns))
		Expect(err).NotTo(HaveOccurred())
		defer w.Stop()
		writes := make(chan appsv1beta1.MyDeploymentStatus, 1000)
		go func() {
			for ev := range w.ResultChan() {
				if obj, ok := ev.Object.(*appsv1beta1.MyDeployment); ok {
					writes <- obj.Status
				}
			}
		}()

		// The kubelet's part: one pod Ready every 150ms.
		start := time.Now()
		for _, p := range podsOf(md) {
			Expect(markReady(&p)).To(Succeed())
			time.Sleep(150 * time.Millisecond)
		}
		marked := time.Since(start)
		complete(md)

		// The distinct statuses written, in order (annotation-only updates
		// repeat the status).
		var seen []appsv1beta1.MyDeploymentStatus
	drain:
		for {
			select {
			case st := <-writes:
				if len(seen) == 0 || !statusEqual(seen[len(seen)-1], st) {
					seen = append(seen, st)
				}
			case <-time.After(2 * DefaultStatusBatchPeriod):
				break drain
			}
		}
		Expect(seen).NotTo(BeEmpty())
		last := seen[len(seen)-1]
		Expect(last.ReadyReplicas).To(BeEquivalentTo(12), "the settled status is written")

		intermediate, progressOnly := 0, 0
		for i := 1; i < len(seen); i++ {
			if r := seen[i].ReadyReplicas; r > 0 && r < 12 {
				intermediate++
			}
			if !status.Pressing(seen[i-1], seen[i], 12) {
				progressOnly++
			}
		}
		Expect(intermediate).To(BeNumerically(">", 0), "progress is shown while pods become Ready, not only at the end")
		// 12 pods turned Ready one by one: without pacing, 11 progress-only
		// writes and the settled one. Paced: one when the first pod turns
		// Ready (the last write is older than a period), one per period
		// after it, and the settled status.
		Expect(progressOnly).To(BeNumerically("<=", int(marked/DefaultStatusBatchPeriod)+2),
			"%d progress-only writes while pods turned Ready over %v", progressOnly, marked)
	})
})
