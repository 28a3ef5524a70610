package e2e

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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/mydeployment-io/mydeployment-operator/test/utils"
)

// Replacement after termination (issue 54): a pod whose grace period is
// 20 s (a preStop hook that lasts it: the local cluster's kwok stage
// pod-delete-after-grace keeps such a pod terminating until its deletion
// timestamp) is replaced only once it is gone, seen at every watch event;
// without the opt-in, while it terminates.
var _ = Describe("pod-replacement TerminationComplete on a local cluster", Ordered, func() {
	const ns = "e2e-podreplacement"
	BeforeAll(func() {
		_, err := utils.Kubectl("create", "namespace", ns)
		Expect(err).NotTo(HaveOccurred())
	})
	AfterAll(func() {
		_, _ = utils.Kubectl("delete", "namespace", ns, "--wait=false")
	})

	apply := func(name, annotations string) {
		GinkgoHelper()
		_, err := utils.KubectlStdin(fmt.Sprintf(`apiVersion: apps.mydeployment.io/v1beta1
kind: MyDeployment
metadata:
  name: %[1]s
  annotations: {%[2]s}
spec:
  replicas: 3
  selector: {matchLabels: {app: %[1]s}}
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      terminationGracePeriodSeconds: 20
      containers:
      - name: web
        image: "nginx:1.27"
        lifecycle: {preStop: {exec: {command: ["sleep", "20"]}}}
`, name, annotations), "-n", ns, "apply", "-f", "-")
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() string {
			out, _ := utils.Kubectl("-n", ns, "get", "md", name, "-o", "jsonpath={.status.availableReplicas}")
			return out
		}, 2*time.Minute, time.Second).Should(Equal("3"))
	}

	// deleteOne deletes one pod of app as a user would (its own grace
	// period) and returns what the watch saw until app has 3 pods again and
	// the deleted one is gone, with how long it took to go.
	deleteOne := func(app string) (seen *podEvents, victim string, took time.Duration) {
		GinkgoHelper()
		cs := clientset()
		seen = watchEvery(cs, ns, app)
		pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
		Expect(err).NotTo(HaveOccurred())
		Expect(pods.Items).To(HaveLen(3))
		victim = pods.Items[0].Name
		start := time.Now()
		Expect(cs.CoreV1().Pods(ns).Delete(context.Background(), victim, metav1.DeleteOptions{})).To(Succeed())
		Eventually(func() bool {
			_, err := cs.CoreV1().Pods(ns).Get(context.Background(), victim, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}, time.Minute, 200*time.Millisecond).Should(BeTrue())
		took = time.Since(start)
		Eventually(func() string {
			out, _ := utils.Kubectl("-n", ns, "get", "md", app, "-o",
				"jsonpath={.status.availableReplicas}/{.status.terminatingReplicas}")
			return out
		}, 2*time.Minute, time.Second).Should(MatchRegexp("^3/0?$"))
		seen.stop()
		return seen, victim, took
	}

	It("replaces a pod whose grace period is 20 s only once it is gone, at every watch event", func() {
		apply("held", `"apps.mydeployment.io/pod-replacement": "TerminationComplete"`)
		seen, victim, took := deleteOne("held")
		Expect(took).To(BeNumerically(">=", 15*time.Second), "the pod terminated for its grace period")
		Expect(seen.most()).To(Equal(3), "pods, the terminating one counted, at any watch event: %v", seen.log())
		Expect(seen.addedBefore(victim)).To(BeEmpty(), "no pod created before %s was gone: %v", victim, seen.log())
		Expect(seen.added()).To(HaveLen(1), "one replacement: %v", seen.log())
	})

	It("without the opt-in, replaces it while it terminates, as a Deployment does", func() {
		apply("plain", "")
		seen, victim, took := deleteOne("plain")
		Expect(took).To(BeNumerically(">=", 15*time.Second), "the pod terminated for its grace period")
		Expect(seen.most()).To(Equal(4), "%v", seen.log())
		Expect(seen.addedBefore(victim)).To(HaveLen(1), "%v", seen.log())
	})
})

// podEvents records every watch event of an app's pods, terminating ones
// counted until their Deleted event.
type podEvents struct {
	mu     sync.Mutex
	pods   map[string]bool
	events []string // "ADDED name", "DELETED name", in the watch's order
	peak   int
	stop   func()
}

func watchEvery(cs *kubernetes.Clientset, ns, app string) *podEvents {
	GinkgoHelper()
	e := &podEvents{pods: map[string]bool{}}
	e.mu.Lock()
	defer e.mu.Unlock()
	var listed []corev1.Pod
	listed, e.stop = streamPods(cs, ns, app, func(t watch.EventType, pod *corev1.Pod) {
		e.mu.Lock()
		defer e.mu.Unlock()
		switch t {
		case watch.Added:
			e.pods[pod.Name] = true
			e.events = append(e.events, "ADDED "+pod.Name)
		case watch.Deleted:
			delete(e.pods, pod.Name)
			e.events = append(e.events, "DELETED "+pod.Name)
		}
		e.peak = max(e.peak, len(e.pods))
	})
	for _, p := range listed {
		e.pods[p.Name] = true
	}
	e.peak = max(e.peak, len(e.pods))
	return e
}

func (e *podEvents) most() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.peak
}

func (e *podEvents) log() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.events)
}

// added are the pods added since the watch began.
func (e *podEvents) added() []string {
	var out []string
	for _, ev := range e.log() {
		if name, ok := strings.CutPrefix(ev, "ADDED "); ok {
			out = append(out, name)
		}
	}
	return out
}

// addedBefore are the pods added before victim's Deleted event.
func (e *podEvents) addedBefore(victim string) []string {
	var out []string
	for _, ev := range e.log() {
		if ev == "DELETED "+victim {
			break
		}
		if name, ok := strings.CutPrefix(ev, "ADDED "); ok {
			out = append(out, name)
		}
	}
	return out
}
