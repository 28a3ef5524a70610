package controller

import (
	"context"
	"errors"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/freshness"
	"github.com/mydeployment-io/mydeployment-operator/internal/inplace"
	"github.com/mydeployment-io/mydeployment-operator/internal/metrics"
	"github.com/mydeployment-io/mydeployment-operator/internal/podcontrol"
	"github.com/mydeployment-io/mydeployment-operator/internal/revision"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
)

// deletedOnCreate plays someone who deletes a new pod of one MyDeployment
// the moment it is created, before the controller's cache can list it.
type deletedOnCreate struct {
	podcontrol.Interface
	owner string
	mu    sync.Mutex
	left  int // how many more pods to delete
}

func (d *deletedOnCreate) Create(ctx context.Context, owner *appsv1beta1.MyDeployment, template *corev1.PodTemplateSpec, rev *appsv1.ControllerRevision) (*corev1.Pod, error) {
	pod, err := d.Interface.Create(ctx, owner, template, rev)
	if err != nil || owner.Name != d.owner {
		return pod, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.left > 0 {
		d.left--
		Expect(k8sClient.Delete(ctx, pod, client.GracePeriodSeconds(0))).To(Succeed())
	}
	return pod, err
}

// lostReplies plays an API server whose reply to a pod write is lost: the
// write is done, the caller gets a server timeout.
type lostReplies struct{ podcontrol.Interface }

func (l lostReplies) Create(ctx context.Context, owner *appsv1beta1.MyDeployment, template *corev1.PodTemplateSpec, rev *appsv1.ControllerRevision) (*corev1.Pod, error) {
	if _, err := l.Interface.Create(ctx, owner, template, rev); err != nil {
		return nil, err
	}
	return nil, apierrors.NewServerTimeout(corev1.Resource("pods"), "create", 1)
}

func (l lostReplies) Delete(ctx context.Context, owner *appsv1beta1.MyDeployment, pod *corev1.Pod) error {
	if err := l.Interface.Delete(ctx, owner, pod); err != nil {
		return err
	}
	return apierrors.NewServerTimeout(corev1.Resource("pods"), "delete", 1)
}

func (l lostReplies) UpdateInPlace(ctx context.Context, owner *appsv1beta1.MyDeployment, pod *corev1.Pod, rev *appsv1.ControllerRevision,
	target *corev1.PodTemplateSpec, change *inplace.Change) error {
	if err := l.Interface.UpdateInPlace(ctx, owner, pod, rev, target, change); err != nil {
		return err
	}
	return apierrors.NewServerTimeout(corev1.Resource("pods"), "patch", 1)
}

// refusedCreates makes the API server refuse every pod create.
type refusedCreates struct{ podcontrol.Interface }

func (refusedCreates) Create(context.Context, *appsv1beta1.MyDeployment, *corev1.PodTemplateSpec, *appsv1.ControllerRevision) (*corev1.Pod, error) {
	return nil, apierrors.NewForbidden(corev1.Resource("pods"), "", errors.New("exceeded quota"))
}

// refusedRevisions makes every ControllerRevision create fail.
type refusedRevisions struct{ client.Client }

func (c refusedRevisions) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if _, ok := obj.(*appsv1.ControllerRevision); ok {
		return apierrors.NewServiceUnavailable("injected: revision write refused")
	}
	return c.Client.Create(ctx, obj, opts...)
}

var _ = Describe("MyDeployment status and expectations in the corners", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })
	// Each test that injects a fault runs its own manager; the next test gets
	// the production one back.
	restore := func() {
		stopManager()
		startManager()
	}

	It("refuses to write a status computed from a stale copy of the object", func() {
		md := newMD(ns, "stale", 2, "nginx:1.27")
		createReady(md)
		stale := get(md)
		update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Replicas = ptr.To[int32](3) })
		Eventually(func() int32 { return get(md).Status.Replicas }, timeout, interval).Should(Equal(int32(3)))

		// What a sync reading the old copy would compute: replicas 2, complete.
		err := reconciler.writeStatus(ctx, &object{Record: freshness.NewRecord(0)}, stale, *stale.Status.DeepCopy())
		Expect(apierrors.IsConflict(err)).To(BeTrue(), "writing from a stale copy: %v", err)
		Expect(get(md).Status.Replicas).To(Equal(int32(3)), "the stored status is left as it was")
	})

	It("observes a pod deleted the moment it was created, and goes on at once", func() {
		stopManager()
		startManager(func(r *MyDeploymentReconciler) {
			r.Pods = &deletedOnCreate{Interface: r.Pods, owner: "comego", left: 1}
		})
		defer restore()
		md := newMD(ns, "comego", 3, "nginx:1.27")
		Expect(k8sClient.Create(ctx, md)).To(Succeed())
		// A leaked expectation would hold every sync for 5 minutes.
		Eventually(func() []corev1.Pod { return podsOf(md) }, 15*time.Second, interval).Should(HaveLen(3))
		update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Replicas = ptr.To[int32](5) })
		Eventually(func(g Gomega) {
			cur := get(md)
			g.Expect(cur.Status.ObservedGeneration).To(Equal(cur.Generation))
			g.Expect(podsOf(md)).To(HaveLen(5))
		}, 15*time.Second, interval).Should(Succeed())
	})

	It("keeps counting the pods when the new revision cannot be written", func() {
		md := newMD(ns, "norev", 3, "nginx:1.27")
		createReady(md)
		before := get(md).Status
		stopManager()
		startManager(func(r *MyDeploymentReconciler) { r.Revisions.Client = refusedRevisions{r.Revisions.Client} })
		defer restore()
		update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
		Consistently(func(g Gomega) {
			cur := get(md)
			g.Expect(cur.Status.ObservedGeneration).To(BeNumerically("<", cur.Generation), "a failed sync is not observed")
			g.Expect(cur.Status.Replicas).To(Equal(int32(3)))
			g.Expect(cur.Status.AvailableReplicas).To(Equal(int32(3)))
			g.Expect(cur.Status.UpdateRevision).To(Equal(before.UpdateRevision))
			g.Expect(cur.Status.CurrentRevision).To(Equal(before.CurrentRevision))
		}, 3*time.Second, interval).Should(Succeed())
		Expect(podsOf(md)).To(HaveLen(3))
	})

	It("counts no unavailable replica while Recreate waits for the old pods to go, as Deployment", func() {
		md := newMD(ns, "gap", 3, "nginx:1.27")
		md.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
		createReady(md)
		// A finalizer stands for a kubelet still stopping the old pods.
		const hold = "test.mydeployment.io/hold"
		old := podsOf(md)
		for i := range old {
			updatePod(&old[i], func(p *corev1.Pod) { p.Finalizers = append(p.Finalizers, hold) })
		}
		update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
		Eventually(func(g Gomega) {
			cur := get(md)
			g.Expect(cur.Status.ObservedGeneration).To(Equal(cur.Generation))
			g.Expect(cur.Status.Replicas).To(BeZero())
			g.Expect(ptr.Deref(cur.Status.TerminatingReplicas, 0)).To(Equal(int32(3)))
			g.Expect(cur.Status.UnavailableReplicas).To(BeZero(), "Deployment's old ReplicaSet is scaled to 0 and its new one not yet up")
		}, timeout, interval).Should(Succeed())
		for i := range old {
			updatePod(&old[i], func(p *corev1.Pod) { p.Finalizers = nil })
		}
		Eventually(func() int32 { return get(md).Status.UnavailableReplicas }, timeout, interval).Should(Equal(int32(3)),
			"the new pods, not yet ready")
		markAllReady(md)
		complete(md)
	})

	It("waits for the cache after a pod write whose reply was lost, instead of writing again", func() {
		md := newMD(ns, "lost", 0, "nginx:1.27")
		Expect(k8sClient.Create(ctx, md)).To(Succeed())
		Eventually(func() []appsv1.ControllerRevision { return revisionsOf(md) }, timeout, interval).Should(HaveLen(1))
		// No manager: the pods are this test's alone.
		stopManager()
		defer startManager()
		md, rev := get(md), revisionsOf(md)[0]
		sel, err := selectorOf(md)
		Expect(err).NotTo(HaveOccurred())
		// A reconciler of its own, so the running one cannot observe for it.
		r := &MyDeploymentReconciler{
			APIReader: k8sClient,
			Pods:      lostReplies{&podcontrol.Real{Client: k8sClient}},
		}
		p := &syncPlan{md: md, obj: &object{Record: freshness.NewRecord(0)}, now: time.Now(), selector: sel, claims: &claimed{}}

		created, err := r.actor().create(ctx, p, &outcome{}, &rev, rollout.Creation{Revision: rev.Name, Count: 1})
		Expect(err).To(MatchError(ContainSubstring("could not be completed at this time")), "the caller sees the timeout")
		Expect(created).To(BeZero())
		pods := podsOf(md)
		Expect(pods).To(HaveLen(1), "the create took effect")
		// A sync whose cache does not list the pod yet must not plan.
		Expect(p.obj.Observe(nil, time.Now()).Satisfied).To(BeFalse(), "the pod of the lost reply is expected")
		Expect(p.obj.Observe([]*corev1.Pod{&pods[0]}, time.Now()).Satisfied).To(BeTrue(), "and observed once listed")

		p.Plan = rollout.Plan{Delete: []*corev1.Pod{&pods[0]}}
		_, err = r.actor().act(ctx, p)
		Expect(err).To(MatchError(ContainSubstring("could not be completed at this time")))
		Expect(p.obj.Observe([]*corev1.Pod{&pods[0]}, time.Now()).Satisfied).To(BeFalse(),
			"a cache still listing the deleted pod must not plan another delete")
	})

	// Issue 31: the spec patch of an in-place update is written once; a
	// sync whose cache does not show it yet must not write it again, also
	// when its reply was lost.
	It("waits for the cache after an in-place patch whose reply was lost, instead of patching again", func() {
		md := newMD(ns, "lostpatch", 0, "nginx:1.27")
		Expect(k8sClient.Create(ctx, md)).To(Succeed())
		Eventually(func() []appsv1.ControllerRevision { return revisionsOf(md) }, timeout, interval).Should(HaveLen(1))
		stopManager()
		defer startManager()
		md, rev := get(md), revisionsOf(md)[0]
		r := &MyDeploymentReconciler{APIReader: k8sClient, Metrics: metrics.NewRecorder(),
			Pods: lostReplies{&podcontrol.Real{Client: k8sClient}}}
		p := &syncPlan{md: md, obj: &object{Record: freshness.NewRecord(0)}, now: time.Now(), claims: &claimed{}}
		template := md.Spec.Template.DeepCopy()
		inplace.WithGate(&template.Spec)
		pod, err := (&podcontrol.Real{Client: k8sClient}).Create(ctx, md, template, &rev)
		Expect(err).NotTo(HaveOccurred())
		// The next revision: a new image, and a label of the template.
		next := rev.DeepCopy()
		next.Name, next.Labels = "lostpatch-next", map[string]string{revision.HashLabel: "next"}
		target := template.DeepCopy()
		target.Spec.Containers[0].Image, target.Labels["tier"] = "nginx:1.28", "web"
		tier := "web"
		step := rollout.InPlaceStep{Pod: pod, Revision: next, Target: target, Step: inplace.StepPatch,
			Change: &inplace.Change{Labels: map[string]*string{"tier": &tier}}}

		p.steps = []rollout.InPlaceStep{step}
		Expect(r.actor().writeInPlaceSteps(ctx, p, &outcome{})).To(MatchError(ContainSubstring("could not be completed at this time")))
		fresh := &corev1.Pod{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pod), fresh)).To(Succeed())
		Expect(fresh.Spec.Containers[0].Image).To(Equal("nginx:1.28"), "the patch took effect")
		Expect(fresh.Labels).To(HaveKeyWithValue(appsv1beta1.RevisionLabel, "lostpatch-next"), "labels and images in one write")
		Expect(fresh.Labels).To(HaveKeyWithValue(appsv1beta1.PodTemplateHashLabel, "next"))
		Expect(fresh.Labels).To(HaveKeyWithValue("tier", "web"))
		Expect(p.obj.StepPending(pod, time.Now())).To(BeTrue(), "a cache still showing the pod unpatched must not patch it again")
		Expect(p.obj.StepPending(fresh, time.Now())).To(BeFalse(), "and once it shows the patch, the next step is free")
	})

	It("returns either a result or an error, never both", func() {
		stopManager()
		r := startManager(func(r *MyDeploymentReconciler) { r.Pods = refusedCreates{r.Pods} })
		defer restore()
		md := newMD(ns, "refused", 3, "nginx:1.27")
		Expect(k8sClient.Create(ctx, md)).To(Succeed())
		Eventually(conditionReason(md, appsv1beta1.ConditionReplicaFailure), timeout, interval).
			Should(Equal(appsv1beta1.ReasonFailedCreate))
		res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(md)})
		Expect(err).To(HaveOccurred())
		Expect(res).To(Equal(ctrl.Result{}), "controller-runtime ignores a result returned with an error")
	})
})
