package e2e

import (
	"os"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// clientset is a client of the local cluster $KUBECONFIG names.
func clientset() *kubernetes.Clientset {
	GinkgoHelper()
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	Expect(err).NotTo(HaveOccurred())
	cs, err := kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	return cs
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

// podWatch follows an app's pods from the API server's watch: pods added
// and deleted after it began, and at any event the most live pods and the
// fewest ready (live and Ready) ones.
type podWatch struct {
	mu               sync.Mutex
	pods             map[string]*corev1.Pod
	added, deleted   []string
	mostLive, fewest int
	events           int
	stop             func()
}

// podWatchResult is what a podWatch saw.
type podWatchResult struct {
	added, deleted        []string
	mostLive, fewestReady int
	events                int
}

func watchPodsOf(cs *kubernetes.Clientset, ns, app string) *podWatch {
	GinkgoHelper()
	w := &podWatch{pods: map[string]*corev1.Pod{}}
	w.mu.Lock()
	defer w.mu.Unlock()
	var listed []corev1.Pod
	listed, w.stop = streamPods(cs, ns, app, w.observe)
	for i := range listed {
		w.pods[listed[i].Name] = &listed[i]
	}
	w.mostLive, w.fewest = w.count()
	return w
}

func (w *podWatch) observe(t watch.EventType, pod *corev1.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch t {
	case watch.Added:
		w.added = append(w.added, pod.Name)
		w.pods[pod.Name] = pod
	case watch.Deleted:
		w.deleted = append(w.deleted, pod.Name)
		delete(w.pods, pod.Name)
	default:
		w.pods[pod.Name] = pod
	}
	w.events++
	live, ready := w.count()
	w.mostLive, w.fewest = max(w.mostLive, live), min(w.fewest, ready)
}

// count is how many pods are live, and how many of those are ready.
func (w *podWatch) count() (live, ready int) {
	for _, p := range w.pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		live++
		if available(p) {
			ready++
		}
	}
	return live, ready
}

func (w *podWatch) result() podWatchResult {
	w.stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	return podWatchResult{added: w.added, deleted: w.deleted, mostLive: w.mostLive, fewestReady: w.fewest, events: w.events}
}
