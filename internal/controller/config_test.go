package controller

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/configrollout"
)

// rollout-on-config-change against a real API server: a ConfigMap read
// through envFrom and a Secret through a volume are part of the revision.
var _ = Describe("Rollout on config change", Ordered, func() {
	var (
		ns  string
		rec *countingRecorder
	)
	BeforeAll(func() {
		stopManager()
		startManager(func(r *MyDeploymentReconciler) {
			rec = &countingRecorder{EventRecorder: r.Recorder, notes: map[string][]string{}}
			r.Recorder = rec
		})
	})
	AfterAll(func() {
		stopManager()
		startManager()
	})
	BeforeEach(func() { ns = newNamespace() })

	configMap := func(data string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}, Data: map[string]string{"LEVEL": data}}
	}
	editConfigMap := func(change func(*corev1.ConfigMap)) {
		Eventually(func() error {
			cm := &corev1.ConfigMap{}
			if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, cm); err != nil {
				return err
			}
			change(cm)
			return k8sClient.Update(ctx, cm)
		}, timeout, interval).Should(Succeed())
	}
	// reading is a MyDeployment of 4 pods (maxSurge 1, maxUnavailable 0)
	// reading the ConfigMap "app" through envFrom and the Secret "db"
	// through a volume.
	reading := func(name string, optIn bool) *appsv1beta1.MyDeployment {
		md := rolling(newMD(ns, name, 4, "nginx:1.27"), intstr.FromInt32(1), intstr.FromInt32(0))
		if optIn {
			md.Annotations = map[string]string{appsv1beta1.RolloutOnConfigChangeAnnotation: "true"}
		}
		spec := &md.Spec.Template.Spec
		spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}}}
		spec.Volumes = []corev1.Volume{{Name: "db", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "db"}}}}
		spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "db", MountPath: "/db"}}
		return md
	}
	setup := func() {
		Expect(k8sClient.Create(ctx, configMap("info"))).To(Succeed())
		Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
			Data: map[string][]byte{"password": []byte("one")}})).To(Succeed())
	}
	configHashes := func(md *appsv1beta1.MyDeployment) []string {
		var out []string
		for _, p := range podsOf(md) {
			out = append(out, p.Annotations[appsv1beta1.ConfigHashAnnotation])
		}
		slices.Sort(out)
		return slices.Compact(out)
	}

	It("rolls every pod within the strategy's bounds when the data changes, and not for a label", func() {
		setup()
		md := reading("cfg", true)
		createReady(md)
		Expect(revisionsOf(md)).To(HaveLen(1))
		first := configHashes(md)
		Expect(first).To(HaveLen(1))
		Expect(first[0]).To(MatchRegexp(`^configmap/app=[0-9a-f]{16},secret/db=[0-9a-f]{16}$`))
		Expect(get(md).Spec.Template.Annotations).NotTo(HaveKey(appsv1beta1.ConfigHashAnnotation), "the spec is not written")
		before := podNames(md)

		By("a label edit rolls nothing")
		editConfigMap(func(cm *corev1.ConfigMap) { cm.Labels = map[string]string{"team": "a"} })
		Consistently(func() int { return len(revisionsOf(md)) }, 3*time.Second, interval).Should(Equal(1))
		Expect(podNames(md)).To(Equal(before))

		By("a data edit rolls all pods, never more than 5 nor fewer than 4 available")
		w := watchPods(md, 5, 4)
		defer w.stop()
		Eventually(func() int { w.mu.Lock(); defer w.mu.Unlock(); return len(w.pods) }, timeout, interval).Should(Equal(4))
		w.armAvailability()
		stop := kubelet(md, 300*time.Millisecond)
		editConfigMap(func(cm *corev1.ConfigMap) { cm.Data["LEVEL"] = "debug" })
		Eventually(func() int { return len(revisionsOf(md)) }, timeout, interval).Should(Equal(2))
		complete(md)
		stop()
		Expect(get(md).Annotations).To(HaveKeyWithValue(appsv1beta1.RevisionAnnotation, "2"))
		after := configHashes(md)
		Expect(after).To(HaveLen(1))
		Expect(after[0]).NotTo(Equal(first[0]))
		for _, name := range podNames(md) {
			Expect(before).NotTo(ContainElement(name), "every pod is replaced")
		}
		violations, _ := w.result()
		Expect(violations).To(BeEmpty())

		second := get(md).Status.UpdateRevision

		By("the Secret's data edit rolls again")
		setPassword := func(p string) {
			Eventually(func() error {
				s := &corev1.Secret{}
				if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db"}, s); err != nil {
					return err
				}
				s.Data["password"] = []byte(p)
				return k8sClient.Update(ctx, s)
			}, timeout, interval).Should(Succeed())
		}
		stop = kubelet(md, 300*time.Millisecond)
		setPassword("two")
		Eventually(func() int { return len(revisionsOf(md)) }, timeout, interval).Should(Equal(3))
		complete(md)

		By("the Secret's old data back: the second revision is current again, renumbered, none is created")
		setPassword("one")
		Eventually(func() string { return get(md).Status.UpdateRevision }, timeout, interval).Should(Equal(second))
		complete(md)
		stop()
		Expect(revisionsOf(md)).To(HaveLen(3))
		Expect(get(md).Annotations).To(HaveKeyWithValue(appsv1beta1.RevisionAnnotation, "4"))
		Expect(get(md).Status.CurrentRevision).To(Equal(second))
	})

	It("keeps its revision and pods while a referenced ConfigMap is missing, says so once, and rolls once it is back", func() {
		setup()
		md := reading("missing", true)
		createReady(md)
		before := podNames(md)
		Expect(k8sClient.Delete(ctx, configMap(""))).To(Succeed())
		Eventually(conditionReason(md, appsv1beta1.ConditionReplicaFailure), timeout, interval).Should(Equal(appsv1beta1.ReasonConfigMissing))
		Expect(condition(get(md), appsv1beta1.ConditionReplicaFailure).Message).To(ContainSubstring("configmap/app"))
		// Other syncs while it is missing: a scale and a pod event.
		update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Replicas = ptr.To[int32](5) })
		stop := kubelet(md, 300*time.Millisecond)
		Eventually(func() []string { return podNames(md) }, timeout, interval).Should(HaveLen(5))
		Consistently(func() int { return len(revisionsOf(md)) }, 2*time.Second, interval).Should(Equal(1))
		stop()
		for _, name := range before {
			Expect(podNames(md)).To(ContainElement(name), "no pod is replaced")
		}
		Expect(rec.of(md, appsv1beta1.ReasonConfigMissing)).To(HaveLen(1))
		Expect(get(md).Status.ObservedGeneration).To(BeNumerically("<", get(md).Generation),
			"a generation that cannot roll out is not observed")

		By("back with other data: the rollout proceeds")
		stop = kubelet(md, 300*time.Millisecond)
		Expect(k8sClient.Create(ctx, configMap("warn"))).To(Succeed())
		Eventually(func() int { return len(revisionsOf(md)) }, timeout, interval).Should(Equal(2))
		complete(md)
		stop()
		Expect(condition(get(md), appsv1beta1.ConditionReplicaFailure)).To(BeNil())
	})

	It("rolls nothing for a data edit when not opted in", func() {
		setup()
		md := reading("plain", false)
		createReady(md)
		editConfigMap(func(cm *corev1.ConfigMap) { cm.Data["LEVEL"] = "debug" })
		Consistently(func() int { return len(revisionsOf(md)) }, 3*time.Second, interval).Should(Equal(1))
		Expect(configHashes(md)).To(Equal([]string{""}))
	})

	It("reports a bad value as ReplicaFailure InvalidAnnotation without the webhook, writing no pod", func() {
		setup()
		md := reading("bad", false)
		md.Annotations = map[string]string{appsv1beta1.RolloutOnConfigChangeAnnotation: "yes"}
		Expect(k8sClient.Create(ctx, md)).To(Succeed())
		Eventually(conditionReason(md, appsv1beta1.ConditionReplicaFailure), timeout, interval).Should(Equal(appsv1beta1.ReasonInvalidAnnotation))
		Expect(condition(get(md), appsv1beta1.ConditionReplicaFailure).Message).To(ContainSubstring(appsv1beta1.RolloutOnConfigChangeAnnotation))
		Expect(podsOf(md)).To(BeEmpty())
	})
})

// A grant withheld stalls nothing (issue 39): the manager's identity may
// read ConfigMaps and Secrets in one namespace only. The opted-in object of
// the other says ConfigAccessDenied and rolls nothing; a plain object
// there and an opted-in one where reading is granted work as ever; once the
// grant is added, the watch starts without a restart.
var _ = Describe("Rollout on config change without access to config", Ordered, Serial, func() {
	const serviceAccount = "mydeployment-manager-no-config"
	var (
		denied, granted string
		rec             *countingRecorder
	)
	grantConfig := func(ns string) {
		Expect(k8sClient.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "read-config"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"},
				Verbs: []string{"get", "list", "watch"}}}})).To(Succeed())
		Expect(k8sClient.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "read-config"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "read-config"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: managerNamespace,
				Name: serviceAccount}}})).To(Succeed())
	}
	BeforeAll(func() {
		stopManager()
		// The markers' rules without the config one, cluster-wide.
		role := clusterRole("role.yaml")
		role.Name = serviceAccount
		role.Rules = slices.DeleteFunc(role.Rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Resources, "secrets") })
		Expect(k8sClient.Create(ctx, role)).To(Succeed())
		bindClusterRole(ctx, role.Name, serviceAccount)
		denied, granted = newNamespace(), newNamespace()
		grantConfig(granted)
		startManagerWith(impersonating(managerCfg, serviceAccount), nil, func(r *MyDeploymentReconciler) {
			rec = &countingRecorder{EventRecorder: r.Recorder, notes: map[string][]string{}}
			r.Recorder = rec
			configWatch(r).Poll = time.Second // ask again soon: the spec grants access later
		})
	})
	AfterAll(func() {
		stopManager()
		startManager()
	})

	reading := func(ns, name string, optIn bool) *appsv1beta1.MyDeployment {
		Expect(client.IgnoreAlreadyExists(k8sClient.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}, Data: map[string]string{"LEVEL": "info"}}))).To(Succeed())
		md := newMD(ns, name, 2, "nginx:1.27")
		if optIn {
			md.Annotations = map[string]string{appsv1beta1.RolloutOnConfigChangeAnnotation: "true"}
		}
		md.Spec.Template.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}}}
		return md
	}
	editData := func(ns, level string) {
		Eventually(func() error {
			cm := &corev1.ConfigMap{}
			if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, cm); err != nil {
				return err
			}
			cm.Data["LEVEL"] = level
			return k8sClient.Update(ctx, cm)
		}, timeout, interval).Should(Succeed())
	}
	scaleWithin30s := func(md *appsv1beta1.MyDeployment) {
		update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Replicas = ptr.To[int32](3) })
		Eventually(func() []corev1.Pod { return podsOf(md) }, 30*time.Second, interval).Should(HaveLen(3))
	}

	It("says ConfigAccessDenied where reading is denied, rolls nothing there, and everything else works", func() {
		opted := reading(denied, "opted", false)
		createReady(opted)
		before := podNames(opted)
		annotate(opted, appsv1beta1.RolloutOnConfigChangeAnnotation, "true")
		Eventually(conditionReason(opted, appsv1beta1.ConditionReplicaFailure), timeout, interval).Should(
			Equal(appsv1beta1.ReasonConfigAccessDenied))
		Expect(condition(get(opted), appsv1beta1.ConditionReplicaFailure).Message).To(
			ContainSubstring("configmaps in namespace " + denied))
		editData(denied, "debug")
		Consistently(func() int { return len(revisionsOf(opted)) }, 3*time.Second, interval).Should(Equal(1))
		Expect(podNames(opted)).To(Equal(before))
		Expect(rec.of(opted, appsv1beta1.ReasonConfigAccessDenied)).To(HaveLen(1), "one event, not one per sync")

		By("a plain MyDeployment in the denied namespace and an opted-in one where reading is granted scale within 30 s")
		plain := reading(denied, "plain", false)
		createReady(plain)
		scaleWithin30s(plain)
		elsewhere := reading(granted, "opted", true)
		createReady(elsewhere)
		scaleWithin30s(elsewhere)
		stop := kubelet(elsewhere, 300*time.Millisecond)
		editData(granted, "debug")
		Eventually(func() int { return len(revisionsOf(elsewhere)) }, timeout, interval).Should(Equal(2))
		complete(elsewhere)
		stop()

		By("the grant added: the watch starts without a restart, and the next data edit rolls")
		grantConfig(denied)
		stop = kubelet(opted, 300*time.Millisecond)
		defer stop()
		// Turning the opt-in on rolls once (the recorded template gains the hash).
		Eventually(func() int { return len(revisionsOf(opted)) }, 30*time.Second, interval).Should(Equal(2))
		complete(opted)
		Expect(condition(get(opted), appsv1beta1.ConditionReplicaFailure)).To(BeNil())
		editData(denied, "warn")
		Eventually(func() int { return len(revisionsOf(opted)) }, timeout, interval).Should(Equal(3))
		complete(opted)
	})
})

// A transient error is not a denial (issue 57): the manager's access check
// of the namespace fails for its first seconds (an error, then replies
// lost after the review was made). The opted-in object is never said to be
// denied, has its revision and pods within 5 s of the API answering again,
// and the watch then runs: a data edit rolls.
var _ = Describe("Rollout on config change while the access check fails", Ordered, func() {
	var (
		rec     *countingRecorder
		reviews *flakyReviews
	)
	BeforeAll(func() {
		stopManager()
		startManager(func(r *MyDeploymentReconciler) {
			rec = &countingRecorder{EventRecorder: r.Recorder, notes: map[string][]string{}}
			r.Recorder = rec
			reviews = &flakyReviews{Client: r.Client}
			reviews.failing.Store(true)
			configWatch(r).Reviews = reviews
		})
	})
	AfterAll(func() {
		stopManager()
		startManager()
	})

	It("is never denied and has its revision and pods within 5 s of the API answering again", func() {
		ns := newNamespace()
		Expect(k8sClient.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
			Data: map[string]string{"LEVEL": "info"}})).To(Succeed())
		md := newMD(ns, "opted", 2, "nginx:1.27")
		md.Annotations = map[string]string{appsv1beta1.RolloutOnConfigChangeAnnotation: "true"}
		md.Spec.Template.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}}}
		Expect(k8sClient.Create(ctx, md)).To(Succeed())

		By("while every access check fails, nothing says the manager is denied")
		Consistently(conditionReason(md, appsv1beta1.ConditionReplicaFailure), 3*time.Second, interval).
			ShouldNot(Equal(appsv1beta1.ReasonConfigAccessDenied))
		Expect(reviews.failed.Load()).To(BeNumerically(">=", 2), "an error, then a lost reply, at least")

		By("the API answers again: revision and pods within 5 s")
		healed := time.Now()
		reviews.failing.Store(false)
		Eventually(func() int { return len(revisionsOf(md)) }, 5*time.Second, interval).Should(Equal(1))
		Eventually(func() []corev1.Pod { return podsOf(md) }, 5*time.Second-time.Since(healed), interval).Should(HaveLen(2))
		Expect(rec.of(md, appsv1beta1.ReasonConfigAccessDenied)).To(BeEmpty())

		By("the watch runs: a data edit rolls")
		stop := kubelet(md, 300*time.Millisecond)
		defer stop()
		Eventually(func() error {
			cm := &corev1.ConfigMap{}
			if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, cm); err != nil {
				return err
			}
			cm.Data["LEVEL"] = "debug"
			return k8sClient.Update(ctx, cm)
		}, timeout, interval).Should(Succeed())
		Eventually(func() int { return len(revisionsOf(md)) }, timeout, interval).Should(Equal(2))
	})
})

// flakyReviews makes the SelfSubjectAccessReviews created through it fail
// while failing is set: the first with an InternalError (no review made),
// the later ones with a timeout after the API server made them (a lost
// reply). failed counts both.
type flakyReviews struct {
	client.Client
	failing atomic.Bool
	failed  atomic.Int32
}

func (f *flakyReviews) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if _, ok := obj.(*authorizationv1.SelfSubjectAccessReview); !ok || !f.failing.Load() {
		return f.Client.Create(ctx, obj, opts...)
	}
	if f.failed.Add(1) == 1 {
		return apierrors.NewInternalError(errors.New("injected: no review made"))
	}
	if err := f.Client.Create(ctx, obj, opts...); err != nil {
		return err
	}
	return apierrors.NewTimeoutError("injected: the review was made, its reply lost", 1)
}

// configWatch is the config-rollout module's watch of r.
func configWatch(r *MyDeploymentReconciler) *configrollout.Watch {
	return r.parts[configrollout.Name].(*configrollout.Watch)
}
