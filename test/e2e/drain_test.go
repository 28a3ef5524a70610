package e2e

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/mydeployment-io/mydeployment-operator/test/utils"
)

// availabilityWatch follows one app's pods from the API server's watch and
// keeps the fewest available (Ready, not terminating) it saw at any event.
type availabilityWatch struct {
	mu     sync.Mutex
	ready  map[string]bool
	fewest int
	events int
	stop   context.CancelFunc
	done   chan struct{}
}

// watchAvailability lists then watches the pods of app in ns.
func watchAvailability(ns, app string) *availabilityWatch {
	GinkgoHelper()
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	Expect(err).NotTo(HaveOccurred())
	cs, err := kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	wctx, cancel := context.WithCancel(context.Background())
	opts := metav1.ListOptions{LabelSelector: "app=" + app}
	list, err := cs.CoreV1().Pods(ns).List(wctx, opts)
	Expect(err).NotTo(HaveOccurred())
	w := &availabilityWatch{ready: map[string]bool{}, stop: cancel, done: make(chan struct{})}
	for i := range list.Items {
		w.ready[list.Items[i].Name] = available(&list.Items[i])
	}
	w.fewest = w.available()
	opts.ResourceVersion = list.ResourceVersion
	wi, err := cs.CoreV1().Pods(ns).Watch(wctx, opts)
	Expect(err).NotTo(HaveOccurred())
	go func() {
		defer close(w.done)
		for ev := range wi.ResultChan() {
			if pod, ok := ev.Object.(*corev1.Pod); ok {
				w.observe(ev.Type, pod)
			}
		}
	}()
	return w
}

func available(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (w *availabilityWatch) observe(t watch.EventType, pod *corev1.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if t == watch.Deleted {
		delete(w.ready, pod.Name)
	} else {
		w.ready[pod.Name] = available(pod)
	}
	w.events++
	w.fewest = min(w.fewest, w.available())
}

func (w *availabilityWatch) available() int {
	n := 0
	for _, ok := range w.ready {
		if ok {
			n++
		}
	}
	return n
}

// result stops the watch and says the fewest available pods it saw, over
// how many events.
func (w *availabilityWatch) result() (fewest, events int) {
	w.stop()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fewest, w.events
}

// Make-before-break drains (issue 32): `kubectl drain` of the node of a
// one-replica app whose PodDisruptionBudget allows no disruption, with a
// MyDeployment that opts into drain SurgeFirst, and with a Deployment.
var _ = Describe("make-before-break drains on a local cluster", Ordered, func() {
	const ns = "e2e-drain"
	BeforeAll(func() {
		utils.MustKubectl("create", "namespace", ns)
	})
	AfterAll(func() {
		_, _ = utils.Kubectl("delete", "namespace", ns, "--wait=false")
	})

	// guard puts a budget of minAvailable 1 over app and waits until the
	// disruption controller counts its one healthy pod.
	guard := func(app string) {
		GinkgoHelper()
		utils.MustApply(fmt.Sprintf(`apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: %[1]s}}
`, app, ns))
		Eventually(utils.JSONPath("{.status.currentHealthy}/{.status.disruptionsAllowed}", "-n", ns, "pdb", app),
			time.Minute, time.Second).Should(Equal("1/0"))
	}
	nodeOf := func(app string) string {
		GinkgoHelper()
		node := utils.MustKubectl("-n", ns, "get", "pods", "-l", "app="+app, "-o", "jsonpath={.items[0].spec.nodeName}")
		Expect(node).NotTo(BeEmpty())
		return node
	}
	drain := func(node, timeout string) (string, time.Duration, error) {
		start := time.Now()
		out, err := utils.Kubectl("drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout="+timeout)
		return out, time.Since(start), err
	}

	It("drains the node of a one-replica MyDeployment with a budget of minAvailable 1 within a minute, never without an available pod", func() {
		utils.MustApply(fmt.Sprintf(`apiVersion: apps.mydeployment.io/v1beta1
kind: MyDeployment
metadata:
  name: single
  namespace: %s
  annotations: {apps.mydeployment.io/drain: SurgeFirst}
spec:
  replicas: 1
  selector: {matchLabels: {app: single}}
  template:
    metadata: {labels: {app: single}}
    spec:
      containers: [{name: web, image: "nginx:1.27"}]
`, ns))
		Eventually(utils.JSONPath("{.status.availableReplicas}", "-n", ns, "md", "single"), 2*time.Minute, time.Second).Should(Equal("1"))
		guard("single")
		node := nodeOf("single")
		DeferCleanup(func() { _, _ = utils.Kubectl("uncordon", node) })

		w := watchAvailability(ns, "single")
		out, took, err := drain(node, "60s")
		fewest, events := w.result()
		_, _ = fmt.Fprintf(GinkgoWriter, "MyDeployment with drain SurgeFirst: kubectl drain %s took %s, err=%v, fewest available %d over %d pod events:\n%s\n",
			node, took.Round(time.Second), err, fewest, events, out)
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(took).To(BeNumerically("<", time.Minute))
		Expect(fewest).To(Equal(1), "at least one available pod at every moment")
		Expect(nodeOf("single")).NotTo(Equal(node))
		Eventually(utils.JSONPath("{.status.availableReplicas}", "-n", ns, "md", "single"), time.Minute, time.Second).Should(Equal("1"))
		Expect(utils.MustKubectl("-n", ns, "get", "events", "--field-selector", "involvedObject.name=single",
			"-o", `jsonpath={range .items[*]}{.reason}{"\n"}{end}`)).To(ContainSubstring("DrainReplaced"))
		utils.MustKubectl("-n", ns, "delete", "md,pdb", "single")
		Eventually(utils.JSONPath("{.items[*].metadata.name}", "-n", ns, "pods", "-l", "app=single"), time.Minute, time.Second).Should(BeEmpty())
	})

	It("times out draining the node of a one-replica Deployment with the same budget (the comparison)", func() {
		utils.MustApply(fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: plain, namespace: %s}
spec:
  replicas: 1
  selector: {matchLabels: {app: plain}}
  template:
    metadata: {labels: {app: plain}}
    spec:
      containers: [{name: web, image: "nginx:1.27"}]
`, ns))
		Eventually(utils.JSONPath("{.status.availableReplicas}", "-n", ns, "deployment", "plain"), 2*time.Minute, time.Second).Should(Equal("1"))
		guard("plain")
		node := nodeOf("plain")
		DeferCleanup(func() { _, _ = utils.Kubectl("uncordon", node) })

		out, took, err := drain(node, "30s")
		_, _ = fmt.Fprintf(GinkgoWriter, "Deployment (no controller help): kubectl drain %s gave up after %s, err=%v:\n%s\n",
			node, took.Round(time.Second), err, out)
		Expect(err).To(HaveOccurred(), "the budget holds the eviction and nothing moves the pod")
		Expect(out).To(ContainSubstring("Cannot evict pod as it would violate the pod's disruption budget"))
	})
})
