package controller

import (
	"fmt"
	"slices"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/podreplacement"
)

// stopping is the finalizer every pod of these tests is born with (from
// the template): it stands for a kubelet still stopping the pod's
// containers, so a deleted pod stays terminating until the test lets it go.
const stopping = "test.mydeployment.io/stopping"

var _ = Describe("pod-replacement TerminationComplete", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	// newHeld is a RollingUpdate of 3 (maxSurge 1, maxUnavailable 0) whose
	// pods carry the stopping finalizer, opted in or not.
	newHeld := func(name string, optIn bool) *appsv1beta1.MyDeployment {
		md := rolling(newMD(ns, name, 3, "nginx:1.27"), intstr.FromInt32(1), intstr.FromInt32(0))
		md.Spec.Template.Finalizers = []string{stopping}
		if optIn {
			md.Annotations = map[string]string{podreplacement.Annotation: podreplacement.TerminationComplete}
		}
		return md
	}

	It("replaces a deleted pod only once it is gone; without the opt-in, while it terminates", func() {
		for _, optIn := range []bool{true, false} {
			By(fmt.Sprintf("opted in: %v", optIn))
			md := newHeld(fmt.Sprintf("deleted-%v", optIn), optIn)
			createReady(md)
			counted := mostPods(md)
			victim := podsOf(md)[0]
			Expect(k8sClient.Delete(ctx, &victim)).To(Succeed())
			Eventually(func() *int32 { return get(md).Status.TerminatingReplicas }, timeout, interval).Should(HaveValue(Equal(int32(1))),
				"Deployment's terminatingReplicas")
			if optIn {
				Consistently(func() []corev1.Pod { return podsOf(md) }, 3*time.Second, interval).Should(HaveLen(2),
					"no replacement while its pod terminates")
			} else {
				Eventually(func() []corev1.Pod { return podsOf(md) }, timeout, interval).Should(HaveLen(3),
					"replaced while it terminates, as a Deployment's pod is")
				Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(&victim), &corev1.Pod{})).To(Succeed(), "still terminating")
			}
			letGo(&victim)
			markAllReadyEventually(md)
			complete(md)
			Eventually(func() *int32 { return get(md).Status.TerminatingReplicas }, timeout, interval).Should(HaveValue(BeZero()))
			most := counted()
			if optIn {
				Expect(most).To(Equal(3), "pods counting the terminating one, at any watch event")
			} else {
				Expect(most).To(Equal(4))
			}
			letAllGo(md)
		}
	})

	It("rolls out with maxSurge 1 never beyond replicas+1 pods, terminating ones counted; without the opt-in, beyond", func() {
		for _, optIn := range []bool{true, false} {
			By(fmt.Sprintf("opted in: %v", optIn))
			md := newHeld(fmt.Sprintf("rolling-%v", optIn), optIn)
			createReady(md)
			counted := mostPods(md)
			stop := everyTick(100*time.Millisecond, func() {
				markAllReady(md)
				releaseTerminating(md, 2*time.Second)
			})
			update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
			complete(md)
			Eventually(func() *int32 { return get(md).Status.TerminatingReplicas }, timeout, interval).Should(HaveValue(BeZero()))
			stop()
			most := counted()
			if optIn {
				Expect(most).To(Equal(4), "replicas+maxSurge, terminating pods counted, at any watch event")
			} else {
				Expect(most).To(BeNumerically(">", 4), "a Deployment's new pod does not wait for the old one to go")
			}
			letAllGo(md)
		}
	})
})

// mostPods watches md's pods and returns a function that stops and says
// how many existed at once at most, terminating ones counted, after any
// watch event.
func mostPods(md *appsv1beta1.MyDeployment) (stop func() int) {
	var (
		mu   sync.Mutex
		pods = map[string]bool{}
		most int
	)
	stopWatch := watchEach(&corev1.PodList{}, func(ev watch.Event) {
		pod, ok := ev.Object.(*corev1.Pod)
		if !ok {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if ev.Type == watch.Deleted {
			delete(pods, pod.Name)
		} else {
			pods[pod.Name] = true
		}
		most = max(most, len(pods))
	}, client.InNamespace(md.Namespace), client.MatchingLabels(md.Spec.Selector.MatchLabels))
	return func() int {
		stopWatch()
		mu.Lock()
		defer mu.Unlock()
		return most
	}
}

// allPodsOf lists every pod md's selector matches, terminating ones too.
func allPodsOf(md *appsv1beta1.MyDeployment) []corev1.Pod {
	var list corev1.PodList
	Expect(k8sClient.List(ctx, &list, client.InNamespace(md.Namespace),
		client.MatchingLabels(md.Spec.Selector.MatchLabels))).To(Succeed())
	return list.Items
}

// releaseTerminating plays the kubelet once: a pod of md terminating for
// grace (the deletion timestamp's second precision aside) loses the
// stopping finalizer, and goes.
func releaseTerminating(md *appsv1beta1.MyDeployment, grace time.Duration) {
	for _, p := range allPodsOf(md) {
		if p.DeletionTimestamp != nil && time.Since(p.DeletionTimestamp.Time) >= grace && slices.Contains(p.Finalizers, stopping) {
			letGo(&p)
		}
	}
}

// letGo removes the stopping finalizer from pod, gone or not.
func letGo(pod *corev1.Pod) {
	Eventually(func() error {
		cur := &corev1.Pod{}
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(pod), cur); apierrors.IsNotFound(err) {
			return nil
		} else if err != nil {
			return err
		}
		cur.Finalizers = slices.DeleteFunc(cur.Finalizers, func(f string) bool { return f == stopping })
		return client.IgnoreNotFound(k8sClient.Update(ctx, cur))
	}, timeout, interval).Should(Succeed())
}

// letAllGo deletes md and lets every pod of it go.
func letAllGo(md *appsv1beta1.MyDeployment) {
	Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, md))).To(Succeed())
	for _, p := range allPodsOf(md) {
		letGo(&p)
	}
}

// markAllReadyEventually marks md's pods Ready until it has its replicas, all Ready.
func markAllReadyEventually(md *appsv1beta1.MyDeployment) {
	Eventually(func(g Gomega) {
		markAllReady(md)
		pods := podsOf(md)
		g.Expect(pods).To(HaveLen(int(ptr.Deref(md.Spec.Replicas, 1))))
		for _, p := range pods {
			g.Expect(podReady(&p)).To(BeTrue())
		}
	}, timeout, interval).Should(Succeed())
}
