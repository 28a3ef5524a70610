package plugin

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/handover"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
)

// No controller runs in this suite: the specs play the MyDeployment
// controller's part of a hand-over (recording, then removing adopt-from)
// where they need it. The whole move, with kube-controller-manager and the
// manager, is test/e2e/migrate_test.go's.
var _ = Describe("migrate", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("--dry-run prints each step and changes nothing", func() {
		d, rs := createDeployment(ns, "web", 2)
		hpa := createHPA(ns, "web", "apps/v1", "Deployment")
		r := runPlugin(ns, "migrate", "deployment/web", "--dry-run")
		Expect(r.code).To(Equal(0), r.err)
		Expect(r.out).To(Equal(strings.Join([]string{
			"mydeployment.apps.mydeployment.io/web created, taking over deployment.apps/web (apps.mydeployment.io/adopt-from: Deployment/web) (dry run)",
			"deployment.apps/web paused (dry run)",
			"replicaset.apps/" + rs.Name + ": its pods become the MyDeployment's update revision (dry run)",
			"revisions recorded for 1 ReplicaSets with pods (dry run)",
			"deployment.apps/web deleted (--cascade=orphan) (dry run)",
			"replicaset.apps/" + rs.Name + " deleted (--cascade=orphan) (dry run)",
			"1 ReplicaSets deleted (dry run)",
			"2 pods handed over to mydeployment.apps.mydeployment.io/web, none restarted (dry run)",
			"horizontalpodautoscaler.autoscaling/web now targets MyDeployment web (dry run)",
			""}, "\n")))
		Expect(apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(d), &appsv1beta1.MyDeployment{}))).To(BeTrue())
		Expect(getObject(d).Spec.Paused).To(BeFalse())
		Expect(getObject(rs).DeletionTimestamp).To(BeNil())
		Expect(getObject(hpa).Spec.ScaleTargetRef.Kind).To(Equal("Deployment"))
	})

	It("refuses a Deployment it cannot move, and one that is not there", func() {
		d, _ := createDeployment(ns, "web", 1)
		r := runPlugin(ns, "migrate", "statefulset/web")
		Expect(r.err).To(Equal("error: \"statefulset/web\" is not a Deployment: use deployment/NAME\n"))
		Expect(runPlugin(ns, "migrate", "deployment/none").err).To(Equal("error: deployments.apps \"none\" not found\n"))

		createMD(ns, "web", "nginx:1", 1)
		r = runPlugin(ns, "migrate", "deploy/web")
		Expect(r.code).To(Equal(1))
		Expect(r.err).To(Equal("error: mydeployment \"web\" already exists and does not take over deployment \"web\"\n"))
		Expect(getObject(d).Spec.Paused).To(BeFalse(), "nothing written")

		owned, _ := createDeployment(ns, "owned", 1)
		owned.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps.mydeployment.io/v1beta1", Kind: "Application",
			Name: "shop", UID: "app-uid", Controller: ptr.To(true)}}
		Expect(k8sClient.Update(ctx, owned)).To(Succeed())
		r = runPlugin(ns, "migrate", "owned")
		Expect(r.err).To(ContainSubstring("is controlled by Application shop"))
	})

	It("stops after each step as if killed, and run again goes on where it stopped", func() {
		d, rs := createDeployment(ns, "web", 2)
		hpa := createHPA(ns, "web", "apps/v1", "Deployment")
		stop := playHandOver(ns, "web", rs)
		defer stop()
		for _, step := range []string{stepCreate, stepPause, stepRecord, stepDeleteDeployment, stepDeleteReplicaSets, stepHandOver} {
			r := runStopping(ns, step, "migrate", "deployment/web", "--timeout", "20s")
			Expect(r.code).To(Equal(1), "%s: %s", step, r.out)
			Expect(r.err).To(Equal(fmt.Sprintf("error: stopped after step %s (%s)\n", step, StopAfterEnv)))
		}
		r := runPlugin(ns, "migrate", "deployment/web")
		Expect(r.code).To(Equal(0), r.err)
		Expect(r.out).To(Equal("deployment.apps/web already migrated to mydeployment.apps.mydeployment.io/web\n" +
			"horizontalpodautoscaler.autoscaling/web now targets MyDeployment web\n"))
		md := &appsv1beta1.MyDeployment{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(d), md)).To(Succeed())
		Expect(*md.Spec.Replicas).To(Equal(int32(2)))
		Expect(md.Spec.Template.Spec.Containers[0].Image).To(Equal("nginx:1"))
		Expect(getObject(d).DeletionTimestamp).NotTo(BeNil(), "deleted with --cascade=orphan")
		Expect(getObject(d).Finalizers).To(ContainElement(metav1.FinalizerOrphanDependents))
		Expect(getObject(rs).Finalizers).To(ContainElement(metav1.FinalizerOrphanDependents))
		Expect(getObject(hpa).Spec.ScaleTargetRef).To(Equal(autoscalingv2.CrossVersionObjectReference{
			APIVersion: "apps.mydeployment.io/v1beta1", Kind: "MyDeployment", Name: "web"}))
	})
})

var _ = Describe("eject", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("refuses a MyDeployment that is not at rest, or still taking over, or whose Deployment exists", func() {
		md := createMD(ns, "web", "nginx:1", 2)
		rev := createRevision(md, "nginx:1", 1, "")
		setStatus(md, func(m *appsv1beta1.MyDeployment) {
			m.Status.UpdateRevision, m.Status.ObservedGeneration = rev.Name, m.Generation
		})
		r := runPlugin(ns, "eject", "md/web")
		Expect(r.err).To(Equal(fmt.Sprintf("error: mydeployment \"web\" is not at rest (0 of 2 pods on its update revision %q): "+
			"wait for `kubectl mydeployment rollout status web`, then eject\n", rev.Name)))

		setAnnotation(md, appsv1beta1.AdoptFromAnnotation, optin.AdoptFrom("web"))
		Expect(runPlugin(ns, "eject", "web").err).To(ContainSubstring("is still taking over Deployment/web"))
		patch := client.MergeFrom(md.DeepCopy())
		delete(md.Annotations, appsv1beta1.AdoptFromAnnotation)
		Expect(k8sClient.Patch(ctx, md, patch)).To(Succeed())
		createDeployment(ns, "web", 1)
		Expect(runPlugin(ns, "eject", "web").err).To(Equal("error: deployment.apps \"web\" already exists\n"))
		Expect(getMD(md).Finalizers).To(BeEmpty(), "nothing written")
		Expect(runPlugin(ns, "eject", "none").err).To(Equal("error: mydeployments.apps.mydeployment.io \"none\" not found\n"))
	})

	It("--dry-run prints each step and changes nothing", func() {
		md := createMD(ns, "web", "nginx:1", 2)
		rev := createRevision(md, "nginx:1", 1, "")
		setStatus(md, func(m *appsv1beta1.MyDeployment) {
			m.Status.UpdateRevision, m.Status.ObservedGeneration = rev.Name, m.Generation
		})
		for i := range 2 {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("web-%d", i),
				Labels: map[string]string{"app": "web", appsv1beta1.RevisionLabel: rev.Name,
					appsv1beta1.PodTemplateHashLabel: revisionHash(rev.Name)},
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(md, appsv1beta1.GroupVersion.WithKind("MyDeployment"))}},
				Spec: podTemplate("web", "nginx:1").Spec}
			Expect(k8sClient.Create(ctx, p)).To(Succeed())
		}
		hpa := createHPA(ns, "web", "apps.mydeployment.io/v1beta1", "MyDeployment")
		r := runPlugin(ns, "eject", "md/web", "--dry-run")
		Expect(r.code).To(Equal(0), r.err)
		rsName := "web-" + revisionHash(rev.Name)
		Expect(r.out).To(Equal(strings.Join([]string{
			"mydeployment.apps.mydeployment.io/web: finalizer apps.mydeployment.io/eject added (dry run)",
			"mydeployment.apps.mydeployment.io/web deleted (--cascade=orphan), kept until the Deployment owns its pods (dry run)",
			"2 pods released by mydeployment.apps.mydeployment.io/web (dry run)",
			"2 pods relabelled: controller-revision-hash removed (dry run)",
			"replicaset.apps/" + rsName + " owns 2 pods (dry run)",
			"deployment.apps/web owns replicaset.apps/" + rsName + " (dry run)",
			"horizontalpodautoscaler.autoscaling/web now targets Deployment web (dry run)",
			"1 ControllerRevisions of mydeployment.apps.mydeployment.io/web deleted (dry run)",
			"mydeployment.apps.mydeployment.io/web gone: deployment.apps/web runs its 2 pods through replicaset.apps/" + rsName + ", none restarted (dry run)",
			""}, "\n")))
		got := getMD(md)
		Expect(got.Finalizers).To(BeEmpty())
		Expect(got.DeletionTimestamp).To(BeNil())
		Expect(getObject(hpa).Spec.ScaleTargetRef.Kind).To(Equal("MyDeployment"))
		var rss appsv1.ReplicaSetList
		Expect(k8sClient.List(ctx, &rss, client.InNamespace(ns))).To(Succeed())
		Expect(rss.Items).To(BeEmpty())
	})
})

// createDeployment creates Deployment name of replicas pods running
// nginx:1 as the Deployment controller would leave it: its ReplicaSet
// (returned) controlling the pods.
func createDeployment(ns, name string, replicas int32) (*appsv1.Deployment, *appsv1.ReplicaSet) {
	t := podTemplate(name, "nginx:1")
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: t.Labels}, Template: *t}}
	Expect(k8sClient.Create(ctx, d)).To(Succeed())
	rt := d.Spec.Template.DeepCopy()
	rt.Labels = map[string]string{"app": name, appsv1.DefaultDeploymentUniqueLabelKey: "h1"}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: handover.ReplicaSetName(name, "h1"), Labels: rt.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(replicas), Template: *rt, Selector: &metav1.LabelSelector{MatchLabels: rt.Labels}},
	}
	Expect(k8sClient.Create(ctx, rs)).To(Succeed())
	for i := range replicas {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", rs.Name, i), Labels: rt.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}},
			Spec: rt.Spec}
		Expect(k8sClient.Create(ctx, p)).To(Succeed())
	}
	return d, rs
}

// createHPA creates an HPA named name targeting kind name of apiVersion.
func createHPA(ns, name, apiVersion, kind string) *autoscalingv2.HorizontalPodAutoscaler {
	hpa := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 5,
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: apiVersion, Kind: kind, Name: name}}}
	Expect(k8sClient.Create(ctx, hpa)).To(Succeed())
	return hpa
}

// getObject reads obj back.
func getObject[T client.Object](obj T) T {
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	return obj
}

// playHandOver plays the MyDeployment controller's part of a hand-over of
// Deployment name until stopped: once the MyDeployment exists, it records
// rs's pods as a revision; once rs is being deleted, it removes adopt-from.
func playHandOver(ns, name string, rs *appsv1.ReplicaSet) (stop func()) {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(stopped)
		for {
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
			md := &appsv1beta1.MyDeployment{}
			if k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, md) != nil {
				continue
			}
			if _, ok := md.Annotations[appsv1beta1.AdoptRevisionsAnnotation]; !ok {
				setAnnotation(md, appsv1beta1.AdoptRevisionsAnnotation, `{"h1":"web-rev"}`)
				continue
			}
			cur := &appsv1.ReplicaSet{}
			if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(rs), cur); err == nil && cur.DeletionTimestamp != nil {
				if _, ok := md.Annotations[appsv1beta1.AdoptFromAnnotation]; ok {
					patch := client.MergeFrom(md.DeepCopy())
					delete(md.Annotations, appsv1beta1.AdoptFromAnnotation)
					delete(md.Annotations, appsv1beta1.AdoptRevisionsAnnotation)
					Expect(k8sClient.Patch(ctx, md, patch)).To(Succeed())
				}
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// runStopping runs the plugin as runPlugin does, stopped after step.
func runStopping(ns, step string, args ...string) result {
	var out, errOut bytes.Buffer
	full := append([]string{"--kubeconfig", kubeconfig, "-n", ns}, args...)
	code := Run(full, Options{IOStreams: IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut},
		Now: testNow, PollInterval: 20 * time.Millisecond, StopAfter: step})
	return result{out: out.String(), err: errOut.String(), code: code}
}
