package controller

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/inplace"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
)

// nodeCPU is the cpu the fake kubelet's node has: a resize asking for more
// is Infeasible.
var nodeCPU = resource.MustParse("4")

// inPlaceKubelet plays the kubelet for md's pods every tick, as Kubernetes'
// own integration tests fake pod status: a container whose spec image or
// resources differ from its status is restarted with them (restartCount+1,
// ready), unless a resize asks for more cpu than the node has (then the
// resize is PodResizePending, Infeasible); the pod is Ready when its
// containers are and every readiness gate's condition is True. Conditions
// it does not own (the in-place gate) are left as they are.
func inPlaceKubelet(md *appsv1beta1.MyDeployment, tick time.Duration) (stop func()) {
	return everyTick(tick, func() {
		for _, p := range podsOf(md) {
			if pod := kubeletStatus(&p); pod != nil {
				_ = k8sClient.Status().Update(ctx, pod) // a conflict: next tick
			}
		}
	})
}

// kubeletStatus returns pod with the status a kubelet would report, or nil
// if it already does.
func kubeletStatus(p *corev1.Pod) *corev1.Pod {
	pod := p.DeepCopy()
	pod.Status.Phase = corev1.PodRunning
	statuses := map[string]corev1.ContainerStatus{}
	for _, s := range pod.Status.ContainerStatuses {
		statuses[s.Name] = s
	}
	var out []corev1.ContainerStatus
	infeasible := false
	for _, c := range pod.Spec.Containers {
		s, ok := statuses[c.Name]
		if cpu, set := c.Resources.Requests[corev1.ResourceCPU]; set && cpu.Cmp(nodeCPU) > 0 {
			infeasible = true
			out = append(out, s)
			continue
		}
		if !ok || s.Image != c.Image || s.Resources == nil || !equality.Semantic.DeepEqual(*s.Resources, c.Resources) {
			restarts := s.RestartCount
			if ok && s.Image != c.Image {
				restarts++
			}
			s = corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: "sha256:" + c.Image, Ready: true, Started: ptrTrue(),
				RestartCount: restarts, Resources: c.Resources.DeepCopy(),
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}
		}
		out = append(out, s)
	}
	pod.Status.ContainerStatuses = out
	pod.Status.ObservedGeneration = pod.Generation
	pod.Status.Conditions = slices.DeleteFunc(pod.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.PodResizePending
	})
	if infeasible {
		pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodResizePending,
			Status: corev1.ConditionTrue, Reason: corev1.PodReasonInfeasible, Message: "Node didn't have enough capacity: cpu, requested: 8000, capacity: 4000"})
	}
	ready := corev1.ConditionTrue
	for _, g := range pod.Spec.ReadinessGates {
		if c := podCondition(pod, g.ConditionType); c == nil || c.Status != corev1.ConditionTrue {
			ready = corev1.ConditionFalse
		}
	}
	if c := podCondition(pod, corev1.PodReady); c == nil {
		pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: ready, LastTransitionTime: metav1.Now()})
	} else if c.Status != ready {
		c.Status, c.LastTransitionTime = ready, metav1.Now()
	}
	if equality.Semantic.DeepEqual(pod.Status, p.Status) {
		return nil
	}
	return pod
}

func podCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

func ptrTrue() *bool { t := true; return &t }

// uids are md's pods' UIDs (not terminating), sorted.
func uids(md *appsv1beta1.MyDeployment) []types.UID {
	var out []types.UID
	for _, p := range podsOf(md) {
		out = append(out, p.UID)
	}
	slices.Sort(out)
	return out
}

// imagesOf are the distinct images of md's pods' first containers.
func imagesOf(md *appsv1beta1.MyDeployment) []string {
	var out []string
	for _, p := range podsOf(md) {
		if !slices.Contains(out, p.Spec.Containers[0].Image) {
			out = append(out, p.Spec.Containers[0].Image)
		}
	}
	slices.Sort(out)
	return out
}

var _ = Describe("Beyond Deployment: in-place updates", Ordered, ContinueOnFailure, Serial, func() {
	var (
		ns     string
		rec    *countingRecorder
		writes = newPodWriteCounter()
	)
	BeforeAll(func() {
		stopManager()
		startManagerCounting(writes, func(r *MyDeploymentReconciler) {
			rec = &countingRecorder{EventRecorder: r.Recorder, notes: map[string][]string{}}
			r.Recorder = rec
			r.InPlaceTimeout = 10 * time.Second
		})
	})
	AfterAll(func() {
		stopManager()
		startManager()
	})
	BeforeEach(func() { ns = newNamespace() })

	// inPlaceMD creates a 10-replica MyDeployment in update-mode
	// InPlaceIfPossible with 25%/25% (2 unavailable, 3 surge), its pods
	// Ready through the fake kubelet, and returns it with a pod watcher
	// armed at "never more than 10 pods, never fewer than 8 Ready".
	inPlaceMD := func(name string) (*appsv1beta1.MyDeployment, *watcher, func()) {
		md := rolling(newMD(ns, name, 10, "nginx:1.27"), intstr.FromString("25%"), intstr.FromString("25%"))
		md.Annotations = map[string]string{appsv1beta1.UpdateModeAnnotation: appsv1beta1.UpdateModeInPlaceIfPossible}
		md.Spec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
		}
		Expect(k8sClient.Create(ctx, md)).To(Succeed())
		stop := inPlaceKubelet(md, 100*time.Millisecond)
		complete(md)
		for _, p := range podsOf(md) {
			Expect(inplace.HasGate(&p)).To(BeTrue(), "pod %s has the in-place readiness gate", p.Name)
		}
		w := watchPods(md, 10, 8)
		Eventually(func() int { _, n := w.result(); return n }, timeout, interval).Should(Equal(10))
		w.armAvailability()
		return md, w, func() { w.stop(); stop() }
	}

	It("updates an image in place: the same 10 pods, never more, never fewer than 8 Ready, status complete", func() {
		md, w, stop := inPlaceMD("image")
		defer stop()
		before := uids(md)
		update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
		complete(md)
		Expect(uids(md)).To(Equal(before), "no pod was replaced")
		Expect(imagesOf(md)).To(Equal([]string{"nginx:1.28"}))
		for _, p := range podsOf(md) {
			Expect(p.Status.ContainerStatuses[0].RestartCount).To(BeEquivalentTo(1), "pod %s restarted its container once", p.Name)
			Expect(p.Labels[appsv1beta1.RevisionLabel]).To(Equal(get(md).Status.UpdateRevision))
		}
		violations, created := w.result()
		Expect(violations).To(BeEmpty())
		Expect(created).To(Equal(10), "no pod created")
		Expect(rec.of(md, appsv1beta1.EventInPlaceUpdateFailed)).To(BeEmpty())
		By("one InPlaceUpdate event for the rollout, a series of its batches, not an event a batch")
		batches := len(rec.of(md, appsv1beta1.EventInPlaceUpdate))
		Expect(batches).To(BeNumerically(">=", 3), "10 pods, 2 unavailable at a time, take several syncs")
		Eventually(func(g Gomega) {
			evs := eventsOf(md, appsv1beta1.EventInPlaceUpdate)
			g.Expect(evs).To(HaveLen(1), "one event object")
			g.Expect(evs[0].Series).NotTo(BeNil(), "a series of the %d batches", batches)
			g.Expect(evs[0].Note).To(ContainSubstring("Updating pods in place to revision"))
		}, timeout, interval).Should(Succeed())

		By("rolled back to the image-only earlier revision: back in place too")
		update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Template.Spec.Containers[0].Image = "nginx:1.27" })
		complete(md)
		Expect(uids(md)).To(Equal(before))
		Expect(imagesOf(md)).To(Equal([]string{"nginx:1.27"}))
		violations, created = w.result()
		Expect(violations).To(BeEmpty())
		Expect(created).To(Equal(10))
	})

	// Issue 31: the gate must go False before the container restarts and
	// True after, and everything else a pod needs (the new images, the
	// revision labels, the template's label and annotation changes) is one
	// spec patch between them. Counted below the manager's clients, at its
	// transport: what kube-apiserver receives.
	It("moves each pod in place with exactly 3 writes for an image change: gate False, one spec patch, gate True", func() {
		md, w, stop := inPlaceMD("writes")
		defer stop()
		before := uids(md)
		created := writes.take(ns)
		Expect(created[""]).To(HaveLen(10), "10 pods created: %v", created)
		delete(created, "")
		for name, got := range created {
			Expect(got).To(Equal([]string{"PATCH status"}), "pod %s: created, then its gate True", name)
		}

		update(md, func(m *appsv1beta1.MyDeployment) {
			m.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
			m.Spec.Template.Labels["tier"] = "web"
			m.Spec.Template.Annotations = map[string]string{"example.com/note": "in place"}
		})
		complete(md)
		Expect(uids(md)).To(Equal(before), "no pod was replaced")
		violations, n := w.result()
		Expect(violations).To(BeEmpty())
		Expect(n).To(Equal(10), "no pod created")

		moved := writes.take(ns)
		Expect(moved).NotTo(HaveKey(""), "no pod created")
		Expect(moved).To(HaveLen(10), "every pod moved, each written to: %v", moved)
		total := 0
		for _, got := range moved {
			total += len(got)
		}
		Expect(total).To(Equal(30), "3 writes for each of 10 pods: %v", moved)
		for name, got := range moved {
			Expect(got).To(Equal([]string{"PATCH status", "PATCH", "PATCH status"}),
				"pod %s: gate False, one spec patch, gate True, and nothing else", name)
		}
		rev := get(md).Status.UpdateRevision
		for _, p := range podsOf(md) {
			Expect(p.Labels).To(HaveKeyWithValue(appsv1beta1.RevisionLabel, rev))
			Expect(p.Labels).To(HaveKeyWithValue("tier", "web"))
			Expect(p.Annotations).To(HaveKeyWithValue("example.com/note", "in place"))
			Expect(p.Spec.Containers[0].Image).To(Equal("nginx:1.28"))
		}
	})

	// The template's annotations are the pods' too: one the template drops
	// is removed from each pod its update moves in place. (The pod cache
	// once kept no annotation of a pod but its deletion cost, so the removal
	// was never written.)
	It("removes from the pods, in place, an annotation the template drops", func() {
		md, w, stop := inPlaceMD("annotations")
		defer stop()
		before := uids(md)
		update(md, func(m *appsv1beta1.MyDeployment) {
			m.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
			m.Spec.Template.Annotations = map[string]string{"example.com/note": "in place", "example.com/keep": "yes"}
		})
		complete(md)
		update(md, func(m *appsv1beta1.MyDeployment) {
			m.Spec.Template.Spec.Containers[0].Image = "nginx:1.29"
			delete(m.Spec.Template.Annotations, "example.com/note")
		})
		complete(md)
		Expect(imagesOf(md)).To(Equal([]string{"nginx:1.29"}))
		Expect(uids(md)).To(Equal(before), "no pod was replaced")
		violations, _ := w.result()
		Expect(violations).To(BeEmpty())
		for _, p := range podsOf(md) {
			Expect(p.Annotations).NotTo(HaveKey("example.com/note"), "pod %s", p.Name)
			Expect(p.Annotations).To(HaveKeyWithValue("example.com/keep", "yes"), "pod %s", p.Name)
		}
	})

	// A pod whose gate went False keeps its old labels and spec until its
	// spec patch; paused, the rollout takes no step, so the update ends
	// where it stands. Without a kubelet here the started pods never leave
	// endpoints, so they are not patched before the pause.
	It("ends, paused, the in-place updates begun and not yet patched: gate True, nothing restarted; resumed, they go on", func() {
		md, _, stop := inPlaceMD("paused")
		stop()
		before := uids(md)
		old := get(md).Status.UpdateRevision
		writes.take(ns)
		update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
		started := func() (n int) {
			for _, p := range podsOf(md) {
				if inplace.Updating(&p) {
					n++
				}
			}
			return n
		}
		Eventually(started, timeout, interval).Should(Equal(2), "maxUnavailable 2 pods started")
		Eventually(func() []int32 {
			st := get(md).Status
			return []int32{st.UpdatedReplicas, st.ReadyReplicas, st.AvailableReplicas}
		}, timeout, interval).Should(Equal([]int32{2, 8, 8}),
			"the 2 pods on their way count as updated and not ready, before their spec patch")
		Consistently(imagesOf, time.Second, interval).WithArguments(md).Should(Equal([]string{"nginx:1.27"}),
			"no patch while the pods are still in endpoints")
		update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Paused = true })
		Eventually(started, timeout, interval).Should(BeZero(), "paused, the updates begun end")
		Eventually(func() int32 { return get(md).Status.UpdatedReplicas }, timeout, interval).Should(BeZero())
		for _, p := range podsOf(md) {
			Expect(p.Labels).To(HaveKeyWithValue(appsv1beta1.RevisionLabel, old), "pod %s keeps its revision", p.Name)
			Expect(p.Spec.Containers[0].Image).To(Equal("nginx:1.27"))
			Expect(p.Status.ContainerStatuses[0].RestartCount).To(BeZero())
		}
		ended := writes.take(ns)
		Expect(ended).To(HaveLen(2), "only the two pods started were written: %v", ended)
		for name, got := range ended {
			Expect(got).To(Equal([]string{"PATCH status", "PATCH status"}), "pod %s: gate False, then True again", name)
		}

		stop = inPlaceKubelet(md, 100*time.Millisecond)
		defer stop()
		update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Paused = false })
		complete(md)
		Expect(uids(md)).To(Equal(before), "no pod was replaced")
		Expect(imagesOf(md)).To(Equal([]string{"nginx:1.28"}))
	})

	It("resizes in place through pods/resize: the same pods, their resources changed", func() {
		md, w, stop := inPlaceMD("resize")
		defer stop()
		before := uids(md)
		writes.take(ns) // the creates
		more := resource.MustParse("300m")
		update(md, func(m *appsv1beta1.MyDeployment) {
			m.Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("150m")
			m.Spec.Template.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = more
		})
		complete(md)
		Expect(uids(md)).To(Equal(before))
		for _, p := range podsOf(md) {
			Expect(p.Spec.Containers[0].Resources.Limits.Cpu().Equal(more)).To(BeTrue(), "pod %s: %v", p.Name, p.Spec.Containers[0].Resources)
		}
		// The resize adds its pods/resize call and nothing else: the spec
		// patch carries the revision labels.
		for name, got := range writes.take(ns) {
			Expect(name).NotTo(BeEmpty(), "no pod created")
			Expect(got).To(HaveExactElements("PATCH status", "PATCH", "PATCH resize", "PATCH status"),
				"pod %s: gate False, the labels, the resize, gate True", name)
		}
		violations, created := w.result()
		Expect(violations).To(BeEmpty())
		Expect(created).To(Equal(10))
	})

	It("recreates pods for a change that is not in-place-able (a command), and says why", func() {
		md, _, stop := inPlaceMD("command")
		defer stop()
		before := uids(md)
		update(md, func(m *appsv1beta1.MyDeployment) {
			m.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
			m.Spec.Template.Spec.Containers[0].Command = []string{"nginx", "-g", "daemon off;"}
		})
		complete(md)
		for _, uid := range uids(md) {
			Expect(before).NotTo(ContainElement(uid), "every pod was replaced")
		}
		Expect(rec.of(md, appsv1beta1.EventInPlaceUpdate)).To(ContainElement(ContainSubstring("are replaced, not updated in place")))
	})

	It("replaces a pod whose resize the kubelet refuses as Infeasible, with an event", func() {
		md, _, stop := inPlaceMD("infeasible")
		defer stop()
		before := uids(md)
		update(md, func(m *appsv1beta1.MyDeployment) {
			m.Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("8")
			m.Spec.Template.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.MustParse("8")
		})
		Eventually(func() []string { return rec.of(md, appsv1beta1.EventInPlaceUpdateFailed) }, timeout, interval).
			Should(ContainElement(ContainSubstring("Infeasible")))
		Eventually(func(g Gomega) {
			g.Expect(uids(md)).NotTo(ContainElement(before[0]))
			replaced := 0
			for _, uid := range uids(md) {
				if !slices.Contains(before, uid) {
					replaced++
				}
			}
			g.Expect(replaced).To(BeNumerically(">", 0))
		}, timeout, interval).Should(Succeed(), "the refused pods are replaced")
	})

	// Found by the chaos suite: after a plain scale (not recorded, one
	// revision), an in-place rollout's first step went on while the write
	// of the record failed; the next plan took the two revisions and the
	// stale record for a scaling event and created old-revision pods.
	It("writes a stale record before the first pod moves: a failed write stops the step, no pod is created", func() {
		armed := &atomic.Bool{}
		stopManager()
		startManager(func(r *MyDeploymentReconciler) {
			r.Client = refusedMetadataPatch{Client: r.Client, armed: armed}
			r.InPlaceTimeout = 10 * time.Second
		})
		md, w, stop := inPlaceMD("record")
		w.stop()
		update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Replicas = ptr.To[int32](12) })
		complete(md)
		Expect(rollout.SizedForOf(get(md)).Replicas).To(BeEquivalentTo(10), "a plain scale is not recorded")
		before := uids(md)
		w = watchPods(md, 12, 9)
		defer func() { w.stop(); stop() }()
		Eventually(func() int { _, n := w.result(); return n }, timeout, interval).Should(Equal(12))
		w.armAvailability()

		armed.Store(true)
		update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
		complete(md)
		Expect(armed.Load()).To(BeFalse(), "the record's first write was refused")
		Expect(rollout.SizedForOf(get(md)).Replicas).To(BeEquivalentTo(12))
		violations, created := w.result()
		Expect(violations).To(BeEmpty())
		Expect(created).To(Equal(12), "no pod created")
		Expect(uids(md)).To(Equal(before))
	})
})

// refusedMetadataPatch refuses the first patch of a MyDeployment's
// metadata (not its status) once armed, as a conflict.
type refusedMetadataPatch struct {
	client.Client
	armed *atomic.Bool
}

func (c refusedMetadataPatch) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if _, ok := obj.(*appsv1beta1.MyDeployment); ok && c.armed.CompareAndSwap(true, false) {
		return apierrors.NewConflict(appsv1beta1.GroupVersion.WithResource("mydeployments").GroupResource(), obj.GetName(),
			errors.New("injected: the object has been modified"))
	}
	return c.Client.Patch(ctx, obj, patch, opts...)
}

// eventsOf returns the events about md with reason, as the API server has
// them (events.k8s.io/v1).
func eventsOf(md *appsv1beta1.MyDeployment, reason string) []eventsv1.Event {
	list := &eventsv1.EventList{}
	Expect(k8sClient.List(ctx, list, client.InNamespace(md.Namespace))).To(Succeed())
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Kind == "MyDeployment" && e.Regarding.Name == md.Name && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}
