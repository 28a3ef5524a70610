package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

const (
	timeout  = 30 * time.Second
	interval = 100 * time.Millisecond
)

// newNamespace creates a namespace for one test and returns its name.
func newNamespace() string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "md-test-"}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

// newMD returns (without creating) a MyDeployment running image.
func newMD(ns, name string, replicas int32, image string) *appsv1beta1.MyDeployment {
	labels := map[string]string{"app": name}
	return &appsv1beta1.MyDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1beta1.MyDeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}},
			},
		},
	}
}

func rolling(md *appsv1beta1.MyDeployment, surge, unavailable intstr.IntOrString) *appsv1beta1.MyDeployment {
	md.Spec.Strategy = appsv1.DeploymentStrategy{
		Type:          appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable},
	}
	return md
}

func get(md *appsv1beta1.MyDeployment) *appsv1beta1.MyDeployment {
	out := &appsv1beta1.MyDeployment{}
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(md), out)).To(Succeed())
	return out
}

// update re-reads md, applies change and writes it, retrying on conflicts.
func update(md *appsv1beta1.MyDeployment, change func(*appsv1beta1.MyDeployment)) {
	Eventually(func() error {
		cur := get(md)
		change(cur)
		return k8sClient.Update(ctx, cur)
	}, timeout, interval).Should(Succeed())
}

// updatePod re-reads pod, applies change and writes it, retrying on conflicts.
func updatePod(pod *corev1.Pod, change func(*corev1.Pod)) {
	Eventually(func() error {
		cur := &corev1.Pod{}
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(pod), cur); err != nil {
			return err
		}
		change(cur)
		return k8sClient.Update(ctx, cur)
	}, timeout, interval).Should(Succeed())
}

// podsOf lists the pods md's selector matches (any owner), not terminating.
func podsOf(md *appsv1beta1.MyDeployment) []corev1.Pod {
	var list corev1.PodList
	Expect(k8sClient.List(ctx, &list, client.InNamespace(md.Namespace),
		client.MatchingLabels(md.Spec.Selector.MatchLabels))).To(Succeed())
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

func revisionsOf(md *appsv1beta1.MyDeployment) []appsv1.ControllerRevision {
	var list appsv1.ControllerRevisionList
	Expect(k8sClient.List(ctx, &list, client.InNamespace(md.Namespace),
		client.MatchingLabels(md.Spec.Selector.MatchLabels))).To(Succeed())
	return list.Items
}

// markReady plays the kubelet: the pod is Running and Ready since now.
func markReady(pod *corev1.Pod) error {
	now := metav1.Now()
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}
	return k8sClient.Status().Update(ctx, pod)
}

// markAllReady marks every not-ready pod of md Ready; it returns how many.
func markAllReady(md *appsv1beta1.MyDeployment) int {
	n := 0
	for _, p := range podsOf(md) {
		if !podReady(&p) {
			if markReady(&p) == nil {
				n++
			}
		}
	}
	return n
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// kubelet marks md's pods Ready every tick until stopped.
func kubelet(md *appsv1beta1.MyDeployment, tick time.Duration) (stop func()) {
	return everyTick(tick, func() { markAllReady(md) })
}

// everyTick calls play (a fake kubelet's pass) every tick until stopped.
func everyTick(tick time.Duration, play func()) (stop func()) {
	kctx, kcancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		for kctx.Err() == nil {
			play()
			select {
			case <-kctx.Done():
			case <-time.After(tick):
			}
		}
	}()
	return func() { kcancel(); <-done }
}

// condition returns md's condition of type t, or nil.
func condition(md *appsv1beta1.MyDeployment, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range md.Status.Conditions {
		if md.Status.Conditions[i].Type == t {
			return &md.Status.Conditions[i]
		}
	}
	return nil
}

func conditionReason(md *appsv1beta1.MyDeployment, t appsv1.DeploymentConditionType) func() string {
	return func() string {
		if c := condition(get(md), t); c != nil {
			return c.Reason
		}
		return ""
	}
}

// createReady creates md, waits for all its pods, marks them Ready (the
// kubelet's part) and waits until its status says they are available.
func createReady(md *appsv1beta1.MyDeployment) {
	Expect(k8sClient.Create(ctx, md)).To(Succeed())
	want := int(ptr.Deref(md.Spec.Replicas, 1))
	Eventually(func() []corev1.Pod { return podsOf(md) }, timeout, interval).Should(HaveLen(want))
	markAllReady(md)
	complete(md)
}

// complete waits until md's rollout finished: every pod updated and available.
func complete(md *appsv1beta1.MyDeployment) {
	Eventually(func(g Gomega) {
		cur := get(md)
		want := ptr.Deref(cur.Spec.Replicas, 1)
		g.Expect(cur.Status.ObservedGeneration).To(Equal(cur.Generation), "status: %+v", cur.Status)
		g.Expect(cur.Status.UpdatedReplicas).To(Equal(want))
		g.Expect(cur.Status.AvailableReplicas).To(Equal(want))
		g.Expect(cur.Status.Replicas).To(Equal(want))
		g.Expect(podsOf(md)).To(HaveLen(int(want)))
	}, timeout, interval).Should(Succeed())
}

// watcher records every pod event of md's selector, as the API server
// orders them, and checks the rollout invariants after each one.
type watcher struct {
	mu         sync.Mutex
	pods       map[string]*corev1.Pod
	created    map[string]bool
	violations []string
	stop       func()
	checkAvail bool
	surgeLimit int
	availFloor int
}

// watchPods starts recording; surgeLimit is checked when > 0, availFloor
// once armAvailability is called.
func watchPods(md *appsv1beta1.MyDeployment, surgeLimit, availFloor int) *watcher {
	w := &watcher{pods: map[string]*corev1.Pod{}, created: map[string]bool{}, surgeLimit: surgeLimit, availFloor: availFloor}
	w.stop = watchEach(&corev1.PodList{}, func(ev watch.Event) {
		if pod, ok := ev.Object.(*corev1.Pod); ok {
			w.observe(ev.Type, pod)
		}
	}, client.InNamespace(md.Namespace), client.MatchingLabels(md.Spec.Selector.MatchLabels))
	return w
}

// watchEach watches list's kind and hands every event to fn, one at a time,
// until the returned stop is called (it waits for fn's last call).
func watchEach(list client.ObjectList, fn func(watch.Event), opts ...client.ListOption) (stop func()) {
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	wi, err := wc.Watch(ctx, list, opts...)
	Expect(err).NotTo(HaveOccurred())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range wi.ResultChan() {
			fn(ev)
		}
	}()
	return func() { wi.Stop(); <-done }
}

func (w *watcher) observe(t watch.EventType, pod *corev1.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if t == watch.Deleted {
		delete(w.pods, pod.Name)
	} else {
		w.pods[pod.Name] = pod
		w.created[pod.Name] = true
	}
	active, avail := 0, 0
	for _, p := range w.pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		active++
		if podReady(p) {
			avail++
		}
	}
	if w.surgeLimit > 0 && active > w.surgeLimit {
		w.violations = append(w.violations, fmt.Sprintf("%d active pods > %d after %s %s", active, w.surgeLimit, t, pod.Name))
	}
	if w.checkAvail && avail < w.availFloor {
		w.violations = append(w.violations, fmt.Sprintf("%d available pods < %d after %s %s", avail, w.availFloor, t, pod.Name))
	}
}

// armAvailability starts checking the availability floor (once the initial
// pods are ready).
func (w *watcher) armAvailability() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.checkAvail = true
}

func (w *watcher) result() (violations []string, createdTotal int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.violations...), len(w.created)
}

// withCountingManager runs the specs of the Ordered container it is called
// in against a manager whose events are counted in *rec, and restores the
// plain manager after them.
func withCountingManager(rec **countingRecorder) {
	BeforeAll(func() {
		stopManager()
		startManager(func(r *MyDeploymentReconciler) {
			*rec = &countingRecorder{EventRecorder: r.Recorder, notes: map[string][]string{}}
			r.Recorder = *rec
		})
	})
	AfterAll(func() {
		stopManager()
		startManager()
	})
}

// names are the pods' names, in order.
func names(pods []*corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out
}
