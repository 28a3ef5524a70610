package controller

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/podcontrol"
)

// Ownership corners of issue 21, each reproduced on a real cluster first.
var _ = Describe("MyDeployment ownership", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	DescribeTable("keeps the pods of an object deleted with --cascade=orphan when another one with the same template takes them",
		func(deleteRevisions bool) {
			first := newMD(ns, "first", 3, "nginx:1.27")
			createReady(first)
			pods := uidsOf(first)
			deleteOrphaning(first)
			if deleteRevisions {
				for _, rev := range revisionsOf(first) {
					Expect(k8sClient.Delete(ctx, &rev)).To(Succeed())
				}
			}

			w := watchPods(first, 3, -1)
			defer w.stop()
			second := newMD(ns, "second", 3, "nginx:1.27")
			second.Spec.Selector = first.Spec.Selector
			second.Spec.Template = first.Spec.Template
			Expect(k8sClient.Create(ctx, second)).To(Succeed())
			complete(second)

			owner := get(second)
			expectAllControlledBy(owner, pods)
			for _, p := range podsOf(owner) {
				Expect(p.Labels).To(HaveKeyWithValue(appsv1beta1.RevisionLabel, owner.Status.UpdateRevision),
					"an adopted pod of the update revision's template counts as updated")
			}
			Consistently(func() []types.UID { return uidsOf(owner) }, 2*time.Second, interval).Should(Equal(pods))
			violations, created := w.result()
			Expect(violations).To(BeEmpty())
			Expect(created).To(Equal(3), "no pod created or replaced")
		},
		Entry("with its orphaned revisions (adopted too)", false),
		Entry("without revisions (the pods are relabelled)", true),
	)

	It("takes back its pods and history when deleted with --cascade=orphan and applied again", func() {
		md := newMD(ns, "again", 3, "nginx:1.27")
		createReady(md)
		old := get(md)
		pods := uidsOf(md)
		deleteOrphaning(md)

		w := watchPods(md, 3, -1)
		defer w.stop()
		Expect(k8sClient.Create(ctx, newMD(ns, "again", 3, "nginx:1.27"))).To(Succeed())
		complete(md)

		owner := get(md)
		Expect(owner.UID).NotTo(Equal(old.UID))
		Expect(ptr.Deref(owner.Status.CollisionCount, 0)).To(BeZero(), "its old revision's name is its own again")
		Expect(owner.Status.UpdateRevision).To(Equal(old.Status.UpdateRevision))
		expectAllControlledBy(owner, pods)
		Consistently(func() []types.UID { return uidsOf(owner) }, 2*time.Second, interval).Should(Equal(pods))
		violations, created := w.result()
		Expect(violations).To(BeEmpty())
		Expect(created).To(Equal(3), "no pod created or replaced")
	})

	DescribeTable("takes back its orphans, replacing none, when an adoption's reply is a conflict or a timeout",
		func(wrap func(podcontrol.Interface) podcontrol.Interface) {
			md := newMD(ns, "adoptlost", 3, "nginx:1.27")
			createReady(md)
			pods := uidsOf(md)
			deleteOrphaning(md)
			stopManager()
			startManager(func(r *MyDeploymentReconciler) { r.Pods = wrap(r.Pods) })
			defer func() { stopManager(); startManager() }()

			w := watchPods(md, 3, -1)
			defer w.stop()
			zero := watchZeroReplicas(ns)
			Expect(k8sClient.Create(ctx, newMD(ns, "adoptlost", 3, "nginx:1.27"))).To(Succeed())
			complete(md)
			expectAllControlledBy(get(md), pods)
			Consistently(func() []types.UID { return uidsOf(md) }, 2*time.Second, interval).Should(Equal(pods))
			_, created := w.result()
			Expect(created).To(Equal(3), "no pod created beside the adopted ones")
			Expect(zero()).To(BeEmpty(), "no status said 0 replicas while its orphans ran")
		},
		// What a retry from a stale cache sees after its own adoption.
		Entry("a conflict, adopted all the same", func(p podcontrol.Interface) podcontrol.Interface {
			return adoptedAnyway{Interface: p, reply: apierrors.NewConflict(corev1.Resource("pods"), "", errors.New("the object has been modified"))}
		}),
		Entry("a timeout, adopted all the same", func(p podcontrol.Interface) podcontrol.Interface {
			return adoptedAnyway{Interface: p, reply: apierrors.NewServerTimeout(corev1.Resource("pods"), "patch", 1)}
		}),
		// Someone else changed the pod meanwhile: still an orphan, retried.
		Entry("a conflict that adopted nothing (the first three)", func(p podcontrol.Interface) podcontrol.Interface {
			return &notAdopted{Interface: p, left: 3}
		}),
	)

	DescribeTable("releases a pod that no longer matches although it left the pod cache, and replaces it",
		func(change func(*corev1.Pod)) {
			md := newMD(ns, "stray", 3, "nginx:1.27")
			createReady(md)
			owner := get(md)
			victim := podsOf(md)[0]
			updatePod(&victim, change)

			expectReleased(&victim)
			Eventually(func() []types.UID { return controlledBy(owner) }, timeout, interval).Should(HaveLen(3))
			Expect(controlledBy(owner)).NotTo(ContainElement(victim.UID))
			markAllReady(md)
			// Not complete(md): a released pod may still match the selector.
			Eventually(func(g Gomega) {
				st := get(md).Status
				g.Expect([]int32{st.Replicas, st.UpdatedReplicas, st.AvailableReplicas}).To(Equal([]int32{3, 3, 3}))
			}, timeout, interval).Should(Succeed())
			Consistently(func() []types.UID { return controlledBy(owner) }, 2*time.Second, interval).Should(HaveLen(3))
		},
		Entry("all its labels replaced (TestReplicaSetOrphaningAndAdoption)", func(p *corev1.Pod) {
			p.Labels = map[string]string{"name": "unrelated"}
		}),
		Entry("its pod-template-hash label removed", func(p *corev1.Pod) {
			delete(p.Labels, appsv1beta1.PodTemplateHashLabel)
		}),
		Entry("its controller-revision-hash label removed", func(p *corev1.Pod) {
			delete(p.Labels, appsv1beta1.RevisionLabel)
		}),
	)

	DescribeTable("releases a pod that left the pod cache while no manager ran",
		func(change func(*corev1.Pod)) {
			md := newMD(ns, "asleep", 3, "nginx:1.27")
			createReady(md)
			owner := get(md)
			victim := podsOf(md)[0]
			stopManager()
			updatePod(&victim, change)
			startManager()

			expectReleased(&victim)
			Eventually(func() []types.UID { return controlledBy(owner) }, timeout, interval).Should(HaveLen(3))
		},
		Entry("its pod-template-hash label removed", func(p *corev1.Pod) {
			delete(p.Labels, appsv1beta1.PodTemplateHashLabel)
		}),
		// Also what a manager killed between the pod's DELETE event and its
		// release leaves behind (the chaos suite's label surgery found it).
		Entry("all its labels replaced", func(p *corev1.Pod) {
			p.Labels = map[string]string{"name": "unrelated"}
		}),
	)

	It("adopts a pod that lists it as a non-controller owner with one reference, not two", func() {
		md := newMD(ns, "dup", 2, "nginx:1.27")
		createReady(md)
		owner := get(md)
		victim := podsOf(md)[0]
		updatePod(&victim, func(p *corev1.Pod) {
			for i := range p.OwnerReferences {
				p.OwnerReferences[i].Controller = ptr.To(false)
			}
		})
		Eventually(func(g Gomega) {
			p := &corev1.Pod{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(&victim), p)).To(Succeed())
			g.Expect(metav1.IsControlledBy(p, owner)).To(BeTrue())
			g.Expect(p.OwnerReferences).To(HaveLen(1), "one reference per owner: %+v", p.OwnerReferences)
		}, timeout, interval).Should(Succeed())
		complete(md)
	})
})

// deleteOrphaning deletes md as `kubectl delete --cascade=orphan` does and
// plays the garbage collector envtest lacks: while the orphan finalizer
// holds md, md's references are removed from its pods and revisions, then
// the finalizer, and md is gone.
func deleteOrphaning(md *appsv1beta1.MyDeployment) {
	cur := get(md)
	Expect(k8sClient.Delete(ctx, cur, client.PropagationPolicy(metav1.DeletePropagationOrphan))).To(Succeed())
	Expect(get(md).Finalizers).To(ContainElement(metav1.FinalizerOrphanDependents))
	without := func(refs []metav1.OwnerReference) []metav1.OwnerReference {
		return slices.DeleteFunc(refs, func(r metav1.OwnerReference) bool { return r.UID == cur.UID })
	}
	for _, p := range podsOf(md) {
		updatePod(&p, func(p *corev1.Pod) { p.OwnerReferences = without(p.OwnerReferences) })
	}
	for _, r := range revisionsOf(md) {
		Eventually(func() error {
			rev := &appsv1.ControllerRevision{}
			if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(&r), rev); err != nil {
				return err
			}
			rev.OwnerReferences = without(rev.OwnerReferences)
			return k8sClient.Update(ctx, rev)
		}, timeout, interval).Should(Succeed())
	}
	Eventually(func() error {
		m := get(md)
		m.Finalizers = slices.DeleteFunc(m.Finalizers, func(f string) bool { return f == metav1.FinalizerOrphanDependents })
		return k8sClient.Update(ctx, m)
	}, timeout, interval).Should(Succeed())
	Eventually(func() bool {
		return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(md), &appsv1beta1.MyDeployment{}))
	}, timeout, interval).Should(BeTrue())
}

// uidsOf returns the UIDs of the pods md's selector matches, sorted.
func uidsOf(md *appsv1beta1.MyDeployment) []types.UID {
	var out []types.UID
	for _, p := range podsOf(md) {
		out = append(out, p.UID)
	}
	slices.Sort(out)
	return out
}

// controlledBy returns the UIDs of the live pods of owner's namespace that
// owner controls, whatever their labels, sorted.
func controlledBy(owner *appsv1beta1.MyDeployment) []types.UID {
	var list corev1.PodList
	Expect(k8sClient.List(ctx, &list, client.InNamespace(owner.Namespace))).To(Succeed())
	var out []types.UID
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && metav1.IsControlledBy(&p, owner) {
			out = append(out, p.UID)
		}
	}
	slices.Sort(out)
	return out
}

// expectAllControlledBy checks that the pods owner's selector matches are
// exactly pods, each with owner as its one controller, and that every
// revision the selector matches is owner's.
func expectAllControlledBy(owner *appsv1beta1.MyDeployment, pods []types.UID) {
	Expect(uidsOf(owner)).To(Equal(pods), "the same pods, none replaced")
	Expect(controlledBy(owner)).To(Equal(pods))
	for _, r := range revisionsOf(owner) {
		Expect(metav1.IsControlledBy(&r, owner)).To(BeTrue(), "revision %s is %s's", r.Name, owner.Name)
	}
}

// expectReleased waits until pod has no owner reference left.
func expectReleased(pod *corev1.Pod) {
	Eventually(func(g Gomega) {
		p := &corev1.Pod{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pod), p)).To(Succeed())
		g.Expect(p.OwnerReferences).To(BeEmpty(), "released")
	}, timeout, interval).Should(Succeed())
}

// adoptedAnyway adopts, then answers with reply as if it had not.
type adoptedAnyway struct {
	podcontrol.Interface
	reply error
}

func (a adoptedAnyway) Adopt(ctx context.Context, owner *appsv1beta1.MyDeployment, pod *corev1.Pod, rev *appsv1.ControllerRevision) (*corev1.Pod, error) {
	if _, err := a.Interface.Adopt(ctx, owner, pod, rev); err != nil {
		return nil, err
	}
	return nil, a.reply
}

// notAdopted answers the first left adoptions with a conflict, adopting
// nothing, then adopts.
type notAdopted struct {
	podcontrol.Interface
	mu   sync.Mutex
	left int
}

func (n *notAdopted) Adopt(ctx context.Context, owner *appsv1beta1.MyDeployment, pod *corev1.Pod, rev *appsv1.ControllerRevision) (*corev1.Pod, error) {
	n.mu.Lock()
	refuse := n.left > 0
	n.left--
	n.mu.Unlock()
	if refuse {
		return nil, apierrors.NewConflict(corev1.Resource("pods"), pod.Name, errors.New("the object has been modified"))
	}
	return n.Interface.Adopt(ctx, owner, pod, rev)
}

// watchZeroReplicas records, until the returned func is called, every status
// write of a MyDeployment in ns (a status unlike the one before) that says 0
// replicas, as "name@resourceVersion", as the chaos suite's status watcher does.
func watchZeroReplicas(ns string) func() []string {
	var seen []string
	last := map[types.UID]appsv1beta1.MyDeploymentStatus{}
	stop := watchEach(&appsv1beta1.MyDeploymentList{}, func(ev watch.Event) {
		md, ok := ev.Object.(*appsv1beta1.MyDeployment)
		if !ok {
			return
		}
		prev, known := last[md.UID]
		last[md.UID] = md.Status
		if known && !apiequality.Semantic.DeepEqual(prev, md.Status) && md.Status.Replicas == 0 {
			seen = append(seen, md.Name+"@"+md.ResourceVersion)
		}
	}, client.InNamespace(ns))
	return func() []string {
		stop() // waits for the last event: seen is ours alone from here
		return seen
	}
}
