package controller

import (
	"fmt"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/handover"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/modules"
	"github.com/mydeployment-io/mydeployment-operator/internal/revision"
)

// The hand-over from a Deployment (adopt-from). No kube-controller-manager
// runs here: the suite creates the Deployment's ReplicaSets and pods as it
// would, and plays the garbage collector of a --cascade=orphan delete
// (orphanDelete). That the real controllers behave so is the e2e suite's
// proof (test/e2e/migrate_test.go).
var _ = Describe("MyDeployment taking over a Deployment's pods", Ordered, func() {
	var (
		ns  string
		rec *countingRecorder
	)
	withCountingManager(&rec)
	BeforeEach(func() { ns = newNamespace() })

	It("records its ReplicaSet and waits while the Deployment exists, then adopts the pods, creating and deleting none", func() {
		d := createDeployment(ns, "web", 3, "nginx:1.27")
		rs, uids := createReplicaSet(d, "h1", "nginx:1.27", 1, 3)
		md := handover.FromDeployment(d)
		w := watchPods(md, 3, -1)
		defer w.stop()
		Expect(k8sClient.Create(ctx, md)).To(Succeed())

		By("recording the ReplicaSet's pods as the update revision, waiting, touching no pod")
		Eventually(func() string { return get(md).Annotations[appsv1beta1.AdoptRevisionsAnnotation] }, timeout, interval).
			ShouldNot(BeEmpty())
		Eventually(func() string { return get(md).Status.UpdateRevision }, timeout, interval).ShouldNot(BeEmpty())
		cur := get(md)
		Expect(cur.Annotations[appsv1beta1.AdoptRevisionsAnnotation]).To(Equal(fmt.Sprintf(`{"h1":%q}`, cur.Status.UpdateRevision)))
		Eventually(conditionReason(md, appsv1beta1.ConditionProgressing), timeout, interval).Should(Equal(appsv1beta1.ReasonWaitingForHandOver))
		Expect(condition(get(md), appsv1beta1.ConditionProgressing).Message).To(ContainSubstring("Deployment web still exists"))
		Consistently(func() []types.UID { return controlledByUID(ns, rs.UID) }, 2*time.Second, interval).Should(Equal(uids))

		By("the Deployment and its ReplicaSet deleted with --cascade=orphan: the pods are adopted, relabelled")
		orphanDelete(d, rs)
		orphanDelete(rs, podObjects(ns, uids)...)
		complete(md)
		owner := get(md)
		expectAllControlledBy(owner, uids)
		Expect(owner.Annotations).NotTo(HaveKey(appsv1beta1.AdoptFromAnnotation))
		Expect(owner.Annotations).NotTo(HaveKey(appsv1beta1.AdoptRevisionsAnnotation))
		update := revisionNamed(ns, owner.Status.UpdateRevision)
		for _, p := range podsOf(owner) {
			Expect(p.Labels).To(HaveKeyWithValue(appsv1beta1.RevisionLabel, update.Name))
			Expect(p.Labels).To(HaveKeyWithValue(appsv1beta1.PodTemplateHashLabel, update.Labels[revision.HashLabel]))
		}
		Consistently(func() []types.UID { return uidsOf(owner) }, time.Second, interval).Should(Equal(uids))
		violations, created := w.result()
		Expect(violations).To(BeEmpty())
		Expect(created).To(Equal(3), "no pod created or deleted")
		Expect(rec.of(md, appsv1beta1.ReasonWaitingForHandOver)).To(HaveLen(1), "one event when the wait began")
		Expect(rec.of(md, appsv1beta1.EventHandedOver)).To(ConsistOf("Took over 3 pods of Deployment web, none restarted"))
	})

	It("takes over a rollout under way as two revisions and completes it within its bounds", func() {
		d := createDeployment(ns, "web", 3, "nginx:2")
		oldRS, oldPods := createReplicaSet(d, "h1", "nginx:1", 1, 2)
		newRS, newPods := createReplicaSet(d, "h2", "nginx:2", 2, 2)
		md := handover.FromDeployment(d)
		rolling(md, intstr.FromInt32(1), intstr.FromInt32(0))
		w := watchPods(md, 4, 3)
		defer w.stop()
		Expect(k8sClient.Create(ctx, md)).To(Succeed())
		Eventually(func() string { return get(md).Status.CurrentRevision }, timeout, interval).ShouldNot(BeEmpty())
		cur := get(md)
		parsed, _ := modules.Parse(cur)
		_, recorded := optin.HandOverOf(parsed)
		Expect(recorded).To(HaveLen(2))
		old := revisionNamed(ns, recorded["h1"])
		Expect(old.Revision).To(Equal(int64(1)), "numbered as its ReplicaSet")
		Expect(recorded["h2"]).To(Equal(cur.Status.UpdateRevision))
		Expect(revisionNamed(ns, cur.Status.UpdateRevision).Revision).To(Equal(int64(2)), "the newest")
		Expect(cur.Status.CurrentRevision).To(Equal(old.Name), "the stable ReplicaSet's pods are the current revision")
		tmpl, err := revision.Template(old)
		Expect(err).NotTo(HaveOccurred())
		Expect(tmpl.Spec.Containers[0].Image).To(Equal("nginx:1"))
		Expect(tmpl.Labels).NotTo(HaveKey(appsv1.DefaultDeploymentUniqueLabelKey))

		w.armAvailability()
		orphanDelete(d, oldRS, newRS)
		orphanDelete(oldRS, podObjects(ns, oldPods)...)
		orphanDelete(newRS, podObjects(ns, newPods)...)
		stop := kubelet(md, 50*time.Millisecond)
		defer stop()
		complete(md)
		owner := get(md)
		Expect(owner.Status.CurrentRevision).To(Equal(owner.Status.UpdateRevision))
		for _, p := range podsOf(owner) {
			Expect(p.Spec.Containers[0].Image).To(Equal("nginx:2"))
		}
		Expect(uidsOf(owner)).To(ContainElements(newPods), "the new ReplicaSet's pods kept")
		violations, created := w.result()
		Expect(violations).To(BeEmpty())
		Expect(created).To(Equal(5), "the 4 handed over and 1 new, as the rollout needs")
	})

	It("says so, and creates no pod, when the Deployment it names was never seen", func() {
		md := newMD(ns, "ghost", 2, "nginx:1.27")
		md.Annotations = map[string]string{appsv1beta1.AdoptFromAnnotation: optin.AdoptFrom("ghost")}
		Expect(k8sClient.Create(ctx, md)).To(Succeed())
		Eventually(conditionReason(md, appsv1beta1.ConditionReplicaFailure), timeout, interval).Should(Equal(appsv1beta1.ReasonHandOverBlocked))
		Expect(condition(get(md), appsv1beta1.ConditionReplicaFailure).Message).To(And(
			ContainSubstring("Deployment ghost does not exist and was never seen"), ContainSubstring(appsv1beta1.AdoptFromAnnotation)))
		Expect(conditionReason(md, appsv1beta1.ConditionProgressing)()).To(Equal(appsv1beta1.ReasonWaitingForHandOver))
		Consistently(func() []corev1.Pod { return podsOf(md) }, 2*time.Second, interval).Should(BeEmpty())
		Expect(rec.of(md, appsv1beta1.ReasonHandOverBlocked)).To(HaveLen(1))

		By("the annotation removed, it is a MyDeployment as any other")
		update(md, func(m *appsv1beta1.MyDeployment) { delete(m.Annotations, appsv1beta1.AdoptFromAnnotation) })
		Eventually(func() []corev1.Pod { return podsOf(md) }, timeout, interval).Should(HaveLen(2))
		markAllReady(md)
		complete(md)
		Expect(condition(get(md), appsv1beta1.ConditionReplicaFailure)).To(BeNil())
	})
})

var _ = Describe("MyDeployment taking over a Deployment's pods, without the RBAC to read it", Ordered, func() {
	const sa = "no-handover"
	BeforeAll(func() {
		role := clusterRole("role.yaml")
		role.Name = sa
		role.Rules = slices.DeleteFunc(role.Rules, func(r rbacv1.PolicyRule) bool {
			return slices.Contains(r.APIGroups, "apps") && (slices.Contains(r.Resources, "deployments") || slices.Contains(r.Resources, "replicasets"))
		})
		Expect(k8sClient.Create(ctx, role)).To(Succeed())
		bindClusterRole(ctx, role.Name, sa)
		stopManager()
		startManagerWith(impersonating(cfg, sa), nil)
	})
	AfterAll(func() {
		stopManager()
		startManager()
	})

	It("says what it may not read, and creates no pod", func() {
		ns := newNamespace()
		d := createDeployment(ns, "web", 2, "nginx:1.27")
		_, uids := createReplicaSet(d, "h1", "nginx:1.27", 1, 2)
		md := handover.FromDeployment(d)
		Expect(k8sClient.Create(ctx, md)).To(Succeed())
		Eventually(conditionReason(md, appsv1beta1.ConditionReplicaFailure), timeout, interval).Should(Equal(appsv1beta1.ReasonHandOverAccessDenied))
		Expect(condition(get(md), appsv1beta1.ConditionReplicaFailure).Message).To(And(
			ContainSubstring("may not get deployments (apps) in namespace "+ns), ContainSubstring("config/rbac/role.yaml")))
		Consistently(func() int { return len(podsOf(md)) }, 2*time.Second, interval).Should(Equal(len(uids)))
		Expect(get(md).Annotations).NotTo(HaveKey(appsv1beta1.AdoptRevisionsAnnotation))
	})
})

// createDeployment creates a Deployment of replicas pods running image
// (maxSurge 1, maxUnavailable 0), and returns it as the API server
// defaulted it.
func createDeployment(ns, name string, replicas int32, image string) *appsv1.Deployment {
	md := rolling(newMD(ns, name, replicas, image), intstr.FromInt32(1), intstr.FromInt32(0))
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{Replicas: md.Spec.Replicas, Selector: md.Spec.Selector, Template: md.Spec.Template,
			Strategy: md.Spec.Strategy}}
	Expect(k8sClient.Create(ctx, d)).To(Succeed())
	return d
}

// createReplicaSet plays the Deployment controller: d's ReplicaSet of
// pod-template-hash hash, running image, numbered number, with pods Ready
// pods it controls. It returns the ReplicaSet and its pods' UIDs, sorted.
func createReplicaSet(d *appsv1.Deployment, hash, image string, number, pods int32) (*appsv1.ReplicaSet, []types.UID) {
	t := d.Spec.Template.DeepCopy()
	t.Spec.Containers[0].Image = image
	t.Labels = map[string]string{"app": d.Name, appsv1.DefaultDeploymentUniqueLabelKey: hash}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: handover.ReplicaSetName(d.Name, hash), Labels: t.Labels,
			Annotations:     map[string]string{handover.DeploymentRevisionAnnotation: fmt.Sprint(number)},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(pods), Template: *t,
			Selector: &metav1.LabelSelector{MatchLabels: t.Labels}},
	}
	Expect(k8sClient.Create(ctx, rs)).To(Succeed())
	var uids []types.UID
	for i := range pods {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: fmt.Sprintf("%s-%d", rs.Name, i), Labels: t.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}},
			Spec: t.Spec}
		Expect(k8sClient.Create(ctx, p)).To(Succeed())
		Expect(markReady(p)).To(Succeed())
		uids = append(uids, p.UID)
	}
	slices.Sort(uids)
	return rs, uids
}

// orphanDelete plays `kubectl delete --cascade=orphan` of obj and the
// garbage collector: obj's owner references go from dependents, then its
// orphan finalizer, then obj.
func orphanDelete(obj client.Object, dependents ...client.Object) {
	Expect(k8sClient.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationOrphan))).To(Succeed())
	for _, dep := range dependents {
		Eventually(func() error {
			if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(dep), dep); err != nil {
				return err
			}
			dep.SetOwnerReferences(slices.DeleteFunc(dep.GetOwnerReferences(), func(r metav1.OwnerReference) bool { return r.UID == obj.GetUID() }))
			return k8sClient.Update(ctx, dep)
		}, timeout, interval).Should(Succeed())
	}
	Eventually(func() error {
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		obj.SetFinalizers(slices.DeleteFunc(obj.GetFinalizers(), func(f string) bool { return f == metav1.FinalizerOrphanDependents }))
		return k8sClient.Update(ctx, obj)
	}, timeout, interval).Should(Succeed())
	Eventually(func() bool { return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), obj)) },
		timeout, interval).Should(BeTrue())
}

// podObjects are the pods of ns with uids.
func podObjects(ns string, uids []types.UID) []client.Object {
	var list corev1.PodList
	Expect(k8sClient.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	var out []client.Object
	for i := range list.Items {
		if slices.Contains(uids, list.Items[i].UID) {
			out = append(out, &list.Items[i])
		}
	}
	return out
}

// controlledByUID returns the UIDs of ns's live pods whose controller has uid, sorted.
func controlledByUID(ns string, uid types.UID) []types.UID {
	var list corev1.PodList
	Expect(k8sClient.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	var out []types.UID
	for _, p := range list.Items {
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == uid && p.DeletionTimestamp == nil {
			out = append(out, p.UID)
		}
	}
	slices.Sort(out)
	return out
}

// revisionNamed reads the ControllerRevision name of ns.
func revisionNamed(ns, name string) *appsv1.ControllerRevision {
	rev := &appsv1.ControllerRevision{}
	Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, rev)).To(Succeed())
	return rev
}
