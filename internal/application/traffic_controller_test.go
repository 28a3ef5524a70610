package application

import (
	"fmt"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/weights"
)

// routedCanary creates an Application with a route and the canary steps
// given, its pods' selector app.kubernetes.io/name: name.
func routedCanary(ns, name string, replicas int32, steps string) *appsv1beta1.Application {
	if err := k8sClient.List(ctx, &gatewayv1.HTTPRouteList{}, client.InNamespace(ns)); meta.IsNoMatchError(err) {
		installRouteCRD()
	}
	app := minimal(ns, name)
	app.Spec.Deployment.Replicas = ptr.To(replicas)
	app.Spec.Deployment.Metadata = &appsv1beta1.ChildMetadata{Annotations: map[string]string{appsv1beta1.CanaryStepsAnnotation: steps}}
	app.Spec.Route = &appsv1beta1.ApplicationRouteSpec{HTTPRouteSpec: gatewayv1.HTTPRouteSpec{
		CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "public"}}},
		Hostnames:       []gatewayv1.Hostname{gatewayv1.Hostname(name + ".example.com")},
	}}
	return app
}

// playKubelet marks the Application's pods Ready where ready says so, as
// kwok would, and writes the revision Services' EndpointSlices, as
// kube-controller-manager would: one per Service, its ready pods.
func playKubelet(app *appsv1beta1.Application, ready func(*corev1.Pod) bool) {
	ns, name := app.Namespace, app.Name
	var list corev1.PodList
	Expect(k8sClient.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{appsv1beta1.AppNameLabel: name})).To(Succeed())
	for i := range list.Items {
		p := &list.Items[i]
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodRunning || !ready(p) {
			continue
		}
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
		_ = k8sClient.Status().Update(ctx, p) // a conflict: the next round
	}
	for _, svcName := range []string{name + StableSuffix, name + CanarySuffix} {
		svc := &corev1.Service{}
		if err := k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: svcName}, svc); err != nil {
			continue
		}
		slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: svcName}}
		_, _ = controllerutil.CreateOrUpdate(ctx, k8sClient, slice, func() error { // a conflict: the next round
			slice.Labels = map[string]string{discoveryv1.LabelServiceName: svcName,
				appsv1beta1.ApplicationNameLabel: svc.Labels[appsv1beta1.ApplicationNameLabel]}
			slice.AddressType, slice.Endpoints = discoveryv1.AddressTypeIPv4, nil
			var pods corev1.PodList
			Expect(k8sClient.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels(svc.Spec.Selector))).To(Succeed())
			for j, p := range pods.Items {
				if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
					slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.0.1.%d", j+1)},
						Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
						TargetRef:  &corev1.ObjectReference{Kind: "Pod", Name: p.Name, UID: p.UID}})
				}
			}
			return nil
		})
	}
}

// routeBackends are the first rule's backendRefs of app's route,
// name=weight, after a round of kubelet.
func routeBackends(app *appsv1beta1.Application, kubelet func()) func() []string {
	return func() []string {
		kubelet()
		r := &gatewayv1.HTTPRoute{}
		if err := k8sClient.Get(ctx, key(app), r); err != nil || len(r.Spec.Rules) == 0 {
			return nil
		}
		var out []string
		for _, ref := range r.Spec.Rules[0].BackendRefs {
			out = append(out, fmt.Sprintf("%s=%d", ref.Name, ptr.Deref(ref.Weight, 1)))
		}
		return out
	}
}

// oneNewPodReady is a round of kubelet for app (playKubelet) in which
// every pod of the old image (nginx:1.27) becomes Ready and, of the new
// image's (nginx:1.28), only the first: a canary step beyond one pod
// never ends.
func oneNewPodReady(app *appsv1beta1.Application) func() {
	return func() {
		var list corev1.PodList
		Expect(k8sClient.List(ctx, &list, client.InNamespace(app.Namespace), client.MatchingLabels{appsv1beta1.AppNameLabel: app.Name})).To(Succeed())
		readyNew := 0
		for _, p := range list.Items {
			if p.Spec.Containers[0].Image == "nginx:1.28" && p.Status.Phase == corev1.PodRunning {
				readyNew++
			}
		}
		playKubelet(app, func(p *corev1.Pod) bool {
			if p.Spec.Containers[0].Image == "nginx:1.27" {
				return true
			}
			readyNew++
			return readyNew == 1
		})
	}
}

func serviceGone(ns, svc string) func() bool {
	return func() bool {
		return apierrors.IsNotFound(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: svc}, &corev1.Service{}))
	}
}

// canaryTrafficSpecs are the Application's canary traffic specs, in the
// Application container (namespace gives each spec's namespace) after the
// route test, which installs the Gateway API CRDs; run alone, they install
// them.
func canaryTrafficSpecs(namespace func() string) {
	It("splits its route's traffic through a canary's steps with stable and canary Services, keeping a filter added by hand", func() {
		ns := namespace()
		const name = "traffic"
		app := routedCanary(ns, name, 10, "10%, pause, 50%, pause, 100%")
		Expect(k8sClient.Create(ctx, app)).To(Succeed())
		kubelet := func() { playKubelet(app, func(*corev1.Pod) bool { return true }) }
		route := func() *gatewayv1.HTTPRoute {
			r := &gatewayv1.HTTPRoute{}
			Expect(k8sClient.Get(ctx, key(app), r)).To(Succeed())
			return r
		}
		backends := routeBackends(app, kubelet)
		handFilter := gatewayv1.HTTPRouteFilter{Type: gatewayv1.HTTPRouteFilterRequestHeaderModifier,
			RequestHeaderModifier: &gatewayv1.HTTPHeaderFilter{Add: []gatewayv1.HTTPHeader{{Name: "X-Added-By", Value: "hand"}}}}
		expectHandFilter := func() {
			GinkgoHelper()
			Expect(route().Spec.Rules[0].Filters).To(Equal([]gatewayv1.HTTPRouteFilter{handFilter}), "the filter added by hand is there")
		}
		md := func() *appsv1beta1.MyDeployment { return childOf(app, &appsv1beta1.MyDeployment{}) }
		promote := func(step int) {
			GinkgoHelper()
			m := md()
			patch := client.MergeFrom(m.DeepCopy())
			m.Annotations[appsv1beta1.CanaryPromoteAnnotation] = m.Status.UpdateRevision + "/" + strconv.Itoa(step)
			Expect(k8sClient.Patch(ctx, m, patch)).To(Succeed())
		}
		selectorOf := func(svc string) func() map[string]string {
			return func() map[string]string {
				s := &corev1.Service{}
				if err := k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: svc}, s); err != nil {
					return nil
				}
				return s.Spec.Selector
			}
		}
		By("before a rollout: one backend, the Application's Service")
		Eventually(backends, 3*CRDPoll, interval).Should(Equal([]string{"traffic=1"}))
		Eventually(func() int32 { kubelet(); return md().Status.AvailableReplicas }, timeout, interval).Should(Equal(int32(10)))
		Eventually(func() []string { kubelet(); return writesOfASync(app, true) }, timeout, interval).Should(BeEmpty(),
			"at rest with its route, a sync writes nothing")

		By("someone adds a filter to the route's rule by hand")
		Eventually(func() error {
			r := route()
			r.Spec.Rules[0].Filters = append(r.Spec.Rules[0].Filters, handFilter)
			return k8sClient.Update(ctx, r, client.FieldOwner("kubectl-edit"))
		}, timeout, interval).Should(Succeed())
		updateApp(app, func(a *appsv1beta1.Application) { a.Spec.Deployment.Template.Spec.Containers[0].Image = "nginx:1.28" })

		By("step 2 (the pause after 10%): 90/10, the revision Services select each revision's pods")
		Eventually(backends, timeout, interval).Should(Equal([]string{"traffic-stable=90", "traffic-canary=10"}))
		expectHandFilter()
		m := md()
		Expect(m.Annotations[appsv1beta1.CanaryStepAnnotation]).To(ContainSubstring(`"step":2`))
		Eventually(selectorOf("traffic-stable"), timeout, interval).Should(Equal(map[string]string{
			appsv1beta1.AppNameLabel: name, appsv1beta1.RevisionLabel: m.Status.CurrentRevision}))
		Eventually(selectorOf("traffic-canary"), timeout, interval).Should(Equal(map[string]string{
			appsv1beta1.AppNameLabel: name, appsv1beta1.RevisionLabel: m.Status.UpdateRevision}))
		Eventually(func() string { return getApp(app).Status.Children.HTTPRoute }, timeout, interval).
			Should(ContainSubstring("canary traffic: traffic-stable 90%, traffic-canary 10%"))
		Eventually(reasons(app), timeout, interval).Should(ContainElement(
			"TrafficShifted HTTPRoute traffic: traffic-stable 90%, traffic-canary 10%"))
		Eventually(func() []string { kubelet(); return writesOfASync(app, true) }, timeout, interval).Should(BeEmpty(),
			"at the step's pause, its weights written, a sync writes nothing")

		By("promoted to step 4 (the pause after 50%): 50/50")
		promote(2)
		Eventually(backends, timeout, interval).Should(Equal([]string{"traffic-stable=50", "traffic-canary=50"}))
		expectHandFilter()

		By("promoted to step 5 (100%), which completes the rollout: the one Service again, the revision Services gone")
		promote(4)
		Eventually(backends, timeout, interval).Should(Equal([]string{"traffic=1"}))
		// The step record (every step done) and the status (the update
		// revision current) are two writes: the route may follow the first.
		Eventually(func() string { return md().Status.CurrentRevision }, timeout, interval).Should(Equal(m.Status.UpdateRevision))
		expectHandFilter()
		Eventually(serviceGone(ns, "traffic-stable"), timeout, interval).Should(BeTrue())
		Eventually(serviceGone(ns, "traffic-canary"), timeout, interval).Should(BeTrue())
		Eventually(reasons(app), timeout, interval).Should(ContainElement(
			"TrafficShifted HTTPRoute traffic sends all traffic to Service traffic again"))

		By("the Application's own rules change: they replace the route's")
		updateApp(app, func(a *appsv1beta1.Application) {
			a.Spec.Route.Rules = []gatewayv1.HTTPRouteRule{{Matches: []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{
				Type: ptr.To(gatewayv1.PathMatchPathPrefix), Value: ptr.To("/api")}}}}}
		})
		Eventually(func() string { return ptr.Deref(route().Spec.Rules[0].Matches[0].Path.Value, "") }, timeout, interval).Should(Equal("/api"))
		Expect(route().Spec.Rules[0].Filters).To(BeEmpty())
	})

	It("on abort sends the canary nothing, then points the route at the one Service again", func() {
		ns := namespace()
		app := routedCanary(ns, "aborted", 4, "50%, pause")
		app.Spec.Deployment.Metadata.Annotations[appsv1beta1.OnFailureAnnotation] = appsv1beta1.OnFailureAbort
		app.Spec.Deployment.ProgressDeadlineSeconds = ptr.To(int32(2))
		Expect(k8sClient.Create(ctx, app)).To(Succeed())
		// One pod of the new image becomes Ready, the others never: step 1
		// (2 pods) never ends, and the deadline aborts the rollout.
		kubelet := oneNewPodReady(app)
		backends := routeBackends(app, kubelet)
		Eventually(backends, 3*CRDPoll, interval).Should(Equal([]string{"aborted=1"}))
		Eventually(func() int32 { kubelet(); return childOf(app, &appsv1beta1.MyDeployment{}).Status.AvailableReplicas }, timeout, interval).
			Should(Equal(int32(4)))

		updateApp(app, func(a *appsv1beta1.Application) { a.Spec.Deployment.Template.Spec.Containers[0].Image = "nginx:1.28" })
		By("the canary's one ready pod gets its share")
		Eventually(backends, timeout, interval).Should(ContainElement(MatchRegexp(`^aborted-canary=[1-9][0-9]*$`)))

		By("aborted: the route points at the one Service again once the canary's pods are gone, and the revision Services go")
		Eventually(func() string {
			kubelet()
			return childOf(app, &appsv1beta1.MyDeployment{}).Annotations[appsv1beta1.AbortedRevisionAnnotation]
		}, timeout, interval).ShouldNot(BeEmpty())
		Eventually(backends, timeout, interval).Should(Equal([]string{"aborted=1"}))
		Expect(childOf(app, &appsv1beta1.MyDeployment{}).Status.UpdatedReplicas).To(BeZero())
		Eventually(serviceGone(ns, "aborted-stable"), timeout, interval).Should(BeTrue())
		Eventually(serviceGone(ns, "aborted-canary"), timeout, interval).Should(BeTrue())
	})

	It("on abort with weight steps takes the route's weight off the canary before any canary pod goes, and waits the drain delay", func() {
		ns := namespace()
		app := routedCanary(ns, "drained", 4, "weight 25%, 1, weight 50%, 2, pause")
		app.Spec.Deployment.Metadata.Annotations[appsv1beta1.OnFailureAnnotation] = appsv1beta1.OnFailureAbort
		app.Spec.Deployment.Metadata.Annotations[weights.AbortDrainDelayAnnotation] = "5s"
		app.Spec.Deployment.ProgressDeadlineSeconds = ptr.To(int32(2))
		Expect(k8sClient.Create(ctx, app)).To(Succeed())
		// The first pod of the new image becomes Ready, no other: step 2
		// (1 pod, 25%) ends, step 4 (2 pods) never does, and the deadline
		// aborts the rollout with the route carrying 25% to that pod.
		kubelet := oneNewPodReady(app)
		md := func() *appsv1beta1.MyDeployment { return childOf(app, &appsv1beta1.MyDeployment{}) }
		record := func() (weights.Record, bool) { return weights.RecordOf(md()) }
		backends := routeBackends(app, kubelet)
		Eventually(backends, 3*CRDPoll, interval).Should(Equal([]string{"drained=1"}))
		Eventually(func() int32 { kubelet(); return md().Status.AvailableReplicas }, timeout, interval).Should(Equal(int32(4)))
		_, ok := record()
		Expect(ok).To(BeFalse(), "no record before a rollout")

		updateApp(app, func(a *appsv1beta1.Application) { a.Spec.Deployment.Template.Spec.Containers[0].Image = "nginx:1.28" })
		By("the canary's one ready pod gets its weight, and the MyDeployment holds the route's record of it")
		Eventually(backends, timeout, interval).Should(ContainElement(MatchRegexp(`^drained-canary=[1-9][0-9]*$`)))
		update := md().Status.UpdateRevision
		Eventually(func() bool { r, _ := record(); return r.Revision == update && r.Effective > 0 }, timeout, interval).Should(BeTrue())
		canaryPods := func() []string {
			var list corev1.PodList
			Expect(k8sClient.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{appsv1beta1.RevisionLabel: update})).To(Succeed())
			var names []string
			for _, p := range list.Items {
				if p.DeletionTimestamp == nil {
					names = append(names, p.Name)
				}
			}
			return names
		}

		By("aborted: no canary pod goes before the record says the route sends it 0, and not within the drain delay after")
		var (
			most     int       // the most canary pods seen at once
			zeroAt   time.Time // the record's time of the route's 0
			heldTill time.Time // the last look that found every canary pod there, the record saying 0
		)
		Eventually(func() bool {
			kubelet()
			pods := canaryPods()
			r, ok := record()
			zero := ok && r.Revision == update && r.Effective == 0
			if most = max(most, len(pods)); len(pods) < most {
				Expect(zero).To(BeTrue(), "a canary pod went while the route's record said %+v", r)
				return true
			}
			if zero {
				zeroAt, heldTill = r.At, time.Now()
			}
			return false
		}, timeout, interval).Should(BeTrue())
		Expect(md().Annotations[appsv1beta1.AbortedRevisionAnnotation]).To(Equal(update))
		Expect(heldTill).To(BeTemporally(">=", zeroAt.Add(4*time.Second)),
			"the canary pods stayed the drain delay (5s, the record's time to the second) after the route's 0")
		Eventually(backends, timeout, interval).Should(Equal([]string{"drained=1"}))
	})
}
