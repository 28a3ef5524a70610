package application

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

func newNamespace() string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "app-"}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

// minimal is the README's minimal Application: a name, an image, a port,
// and a Service.
func minimal(ns, name string) *appsv1beta1.Application {
	return &appsv1beta1.Application{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1beta1.ApplicationSpec{
			Deployment: appsv1beta1.ApplicationDeploymentSpec{Template: &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27",
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 80}}}},
			}}},
			Service: &appsv1beta1.ApplicationServiceSpec{},
		},
	}
}

func key(app *appsv1beta1.Application) client.ObjectKey { return client.ObjectKeyFromObject(app) }

// childOf returns the app's child of obj's type once it exists.
func childOf[T client.Object](app *appsv1beta1.Application, obj T) T {
	Eventually(func() error { return k8sClient.Get(ctx, key(app), obj) }, timeout, interval).Should(Succeed())
	return obj
}

func updateApp(app *appsv1beta1.Application, change func(*appsv1beta1.Application)) {
	Eventually(func() error {
		cur := &appsv1beta1.Application{}
		if err := k8sClient.Get(ctx, key(app), cur); err != nil {
			return err
		}
		change(cur)
		return k8sClient.Update(ctx, cur)
	}, timeout, interval).Should(Succeed())
}

func getApp(app *appsv1beta1.Application) *appsv1beta1.Application {
	cur := &appsv1beta1.Application{}
	Expect(k8sClient.Get(ctx, key(app), cur)).To(Succeed())
	return cur
}

// reasons are the reasons of the events about app, in order.
func reasons(app *appsv1beta1.Application) func() []string {
	return func() []string {
		var list eventsv1.EventList
		Expect(k8sClient.List(ctx, &list, client.InNamespace(app.Namespace))).To(Succeed())
		var out []string
		for _, e := range list.Items {
			if e.Regarding.Kind == "Application" && e.Regarding.Name == app.Name {
				out = append(out, e.Reason+" "+e.Note)
			}
		}
		return out
	}
}

func readyCondition(app *appsv1beta1.Application) func() metav1.Condition {
	return func() metav1.Condition {
		if c := meta.FindStatusCondition(getApp(app).Status.Conditions, appsv1beta1.ApplicationReady); c != nil {
			return *c
		}
		return metav1.Condition{}
	}
}

// installRouteCRD installs the Gateway API's HTTPRoute CRD (v1.6.3, from
// the module cache); installing it again changes nothing.
func installRouteCRD() {
	dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/gateway-api").Output()
	Expect(err).NotTo(HaveOccurred())
	_, err = envtest.InstallCRDs(testEnv.Config, envtest.CRDInstallOptions{Paths: []string{
		filepath.Join(strings.TrimSpace(string(dir)), "config", "crd", "standard", "gateway.networking.k8s.io_httproutes.yaml")}})
	Expect(err).NotTo(HaveOccurred())
}

func expectControlledBy(obj client.Object, app *appsv1beta1.Application) {
	ref := metav1.GetControllerOf(obj)
	Expect(ref).NotTo(BeNil(), "%s has a controller", obj.GetName())
	Expect(ref.Kind).To(Equal("Application"))
	Expect(ref.UID).To(Equal(getApp(app).UID))
}

var _ = Describe("Application", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("creates its MyDeployment, Service and Ingress, owned, with the defaults filled in, and updates them", func() {
		app := minimal(ns, "shop")
		app.Spec.Ingress = &appsv1beta1.ApplicationIngressSpec{IngressSpec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: "shop.example.com"}}}}
		Expect(k8sClient.Create(ctx, app)).To(Succeed())

		md := childOf(app, &appsv1beta1.MyDeployment{})
		expectControlledBy(md, app)
		Expect(md.Spec.Selector.MatchLabels).To(Equal(map[string]string{appsv1beta1.AppNameLabel: "shop"}))
		Expect(md.Spec.Template.Labels).To(HaveKeyWithValue(appsv1beta1.AppNameLabel, "shop"))
		Expect(*md.Spec.Replicas).To(Equal(int32(1)), "the MyDeployment's own default")

		svc := childOf(app, &corev1.Service{})
		expectControlledBy(svc, app)
		Expect(svc.Spec.Selector).To(Equal(map[string]string{appsv1beta1.AppNameLabel: "shop"}))
		Expect(svc.Spec.Ports).To(HaveLen(1))
		Expect(svc.Spec.Ports[0].Name).To(Equal("http"))
		Expect(svc.Spec.Ports[0].Port).To(Equal(int32(80)))
		Expect(svc.Spec.Ports[0].TargetPort).To(Equal(intstr.FromString("http")))

		ing := childOf(app, &networkingv1.Ingress{})
		expectControlledBy(ing, app)
		Expect(ing.Spec.Rules[0].HTTP.Paths).To(HaveLen(1))
		path := ing.Spec.Rules[0].HTTP.Paths[0]
		Expect(path.Path).To(Equal("/"))
		Expect(path.Backend.Service.Name).To(Equal("shop"))
		Expect(path.Backend.Service.Port.Name).To(Equal("http"))
		Eventually(reasons(app), timeout, interval).Should(ContainElements(
			"Created Created MyDeployment shop", "Created Created Service shop", "Created Created Ingress shop"))

		updateApp(app, func(a *appsv1beta1.Application) {
			a.Spec.Deployment.Template.Spec.Containers[0].Image = "nginx:1.28"
		})
		Eventually(func() string {
			return childOf(app, &appsv1beta1.MyDeployment{}).Spec.Template.Spec.Containers[0].Image
		}, timeout, interval).Should(Equal("nginx:1.28"))
		Eventually(reasons(app), timeout, interval).Should(ContainElement("Updated Updated MyDeployment shop"))
		Eventually(func() int64 { return getApp(app).Status.ObservedGeneration }, timeout, interval).
			Should(Equal(getApp(app).Generation))
	})

	It("expands the five-line form to one container named after it, whose port the Service and the Ingress use", func() {
		app := &appsv1beta1.Application{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "five"},
			Spec: appsv1beta1.ApplicationSpec{
				Deployment: appsv1beta1.ApplicationDeploymentSpec{Image: "nginx:1.27", Replicas: ptr.To(int32(2)), Port: 8080},
				Service:    &appsv1beta1.ApplicationServiceSpec{},
				Ingress: &appsv1beta1.ApplicationIngressSpec{IngressSpec: networkingv1.IngressSpec{
					Rules: []networkingv1.IngressRule{{Host: "five.example.com"}}}},
			},
		}
		Expect(k8sClient.Create(ctx, app)).To(Succeed())

		md := childOf(app, &appsv1beta1.MyDeployment{})
		expectControlledBy(md, app)
		Expect(*md.Spec.Replicas).To(Equal(int32(2)))
		Expect(md.Spec.Selector.MatchLabels).To(Equal(map[string]string{appsv1beta1.AppNameLabel: "five"}))
		Expect(md.Spec.Template.Labels).To(Equal(map[string]string{appsv1beta1.AppNameLabel: "five"}))
		Expect(md.Spec.Template.Spec.Containers).To(HaveLen(1))
		c := md.Spec.Template.Spec.Containers[0]
		Expect(c.Name).To(Equal("five"))
		Expect(c.Image).To(Equal("nginx:1.27"))
		Expect(c.Ports).To(Equal([]corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}))

		svc := childOf(app, &corev1.Service{})
		Expect(svc.Spec.Ports).To(HaveLen(1))
		Expect(svc.Spec.Ports[0]).To(And(HaveField("Name", "http"), HaveField("Port", int32(8080)),
			HaveField("TargetPort", intstr.FromString("http"))))
		ing := childOf(app, &networkingv1.Ingress{})
		Expect(ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service).To(Equal(&networkingv1.IngressServiceBackend{
			Name: "five", Port: networkingv1.ServiceBackendPort{Name: "http"}}))

		By("a typed client's update of the stored five-line form (no template in it) changes the image")
		Expect(getApp(app).Spec.Deployment.Template).To(BeNil())
		updateApp(app, func(a *appsv1beta1.Application) { a.Spec.Deployment.Image = "nginx:1.28" })
		Eventually(func() string {
			return childOf(app, &appsv1beta1.MyDeployment{}).Spec.Template.Spec.Containers[0].Image
		}, timeout, interval).Should(Equal("nginx:1.28"))
	})

	It("puts back drift in its fields and keeps other writers' fields", func() {
		app := minimal(ns, "drift")
		Expect(k8sClient.Create(ctx, app)).To(Succeed())
		svc := childOf(app, &corev1.Service{})

		By("someone edits the Service's targetPort and adds an annotation")
		svc.Spec.Ports[0].TargetPort = intstr.FromInt32(8080)
		svc.Annotations = map[string]string{"cloud.example.com/lb": "internal"}
		Expect(k8sClient.Update(ctx, svc, client.FieldOwner("someone"))).To(Succeed())

		Eventually(func() intstr.IntOrString {
			return childOf(app, &corev1.Service{}).Spec.Ports[0].TargetPort
		}, timeout, interval).Should(Equal(intstr.FromString("http")), "our field is put back")
		Expect(childOf(app, &corev1.Service{}).Annotations).To(HaveKeyWithValue("cloud.example.com/lb", "internal"),
			"their field stays")
		Eventually(reasons(app), timeout, interval).Should(ContainElement("Updated Updated Service drift"))

		By("a spec change re-applies: their annotation still stays")
		updateApp(app, func(a *appsv1beta1.Application) { a.Spec.Service.SessionAffinity = corev1.ServiceAffinityClientIP })
		Eventually(func() corev1.ServiceAffinity {
			return childOf(app, &corev1.Service{}).Spec.SessionAffinity
		}, timeout, interval).Should(Equal(corev1.ServiceAffinityClientIP))
		Expect(childOf(app, &corev1.Service{}).Annotations).To(HaveKeyWithValue("cloud.example.com/lb", "internal"))
	})

	It("puts back a Service port and an Ingress rule another field manager edited, and keeps that manager's annotation", func() {
		app := minimal(ns, "edited")
		app.Spec.Ingress = &appsv1beta1.ApplicationIngressSpec{IngressSpec: networkingv1.IngressSpec{
			Rules: []networkingv1.IngressRule{{Host: "edited.example.com"}}}}
		Expect(k8sClient.Create(ctx, app)).To(Succeed())
		svc := childOf(app, &corev1.Service{})
		Expect(svc.Spec.Ports).To(HaveLen(1))
		Expect(svc.Spec.Ports[0].Port).To(Equal(int32(80)))
		childOf(app, &networkingv1.Ingress{})

		By("kubectl patch: the Service's port 80 becomes 81 (a new item of the ports list, keyed by port), plus an annotation")
		Expect(k8sClient.Patch(ctx, svc, client.RawPatch(types.JSONPatchType, []byte(`[
			{"op": "replace", "path": "/spec/ports/0/port", "value": 81},
			{"op": "add", "path": "/metadata/annotations", "value": {"example.com/note": "theirs"}}]`)),
			client.FieldOwner("kubectl-patch"))).To(Succeed())
		By("kubectl edit: the Ingress rule's host changes, plus an annotation")
		ing := childOf(app, &networkingv1.Ingress{})
		Expect(k8sClient.Patch(ctx, ing, client.RawPatch(types.MergePatchType, []byte(`{
			"metadata": {"annotations": {"example.com/note": "theirs"}},
			"spec": {"rules": [{"host": "other.example.com"}]}}`)),
			client.FieldOwner("kubectl-edit"))).To(Succeed())

		ports := func() []int32 {
			var out []int32
			for _, p := range childOf(app, &corev1.Service{}).Spec.Ports {
				out = append(out, p.Port)
			}
			return out
		}
		Eventually(ports, timeout, interval).Should(Equal([]int32{80}), "80 put back, 81 removed")
		Eventually(func() string { return childOf(app, &networkingv1.Ingress{}).Spec.Rules[0].Host }, timeout, interval).
			Should(Equal("edited.example.com"))
		Consistently(ports, "2s", interval).Should(Equal([]int32{80}))
		Expect(childOf(app, &networkingv1.Ingress{}).Spec.Rules).To(HaveLen(1))
		Expect(childOf(app, &corev1.Service{}).Annotations).To(HaveKeyWithValue("example.com/note", "theirs"))
		Expect(childOf(app, &networkingv1.Ingress{}).Annotations).To(HaveKeyWithValue("example.com/note", "theirs"))
	})

	It("applies each child's labels and annotations, changes and removes them, and leaves another manager's alone", func() {
		app := minimal(ns, "labelled")
		app.Spec.Deployment.Metadata = &appsv1beta1.ChildMetadata{
			Labels:      map[string]string{"team": "shop"},
			Annotations: map[string]string{"example.com/owner": "team-a"},
		}
		app.Spec.Service.Metadata = &appsv1beta1.ChildMetadata{
			Annotations: map[string]string{"service.beta.kubernetes.io/aws-load-balancer-internal": "true"}}
		app.Spec.Ingress = &appsv1beta1.ApplicationIngressSpec{
			Metadata: &appsv1beta1.ChildMetadata{
				Labels:      map[string]string{"exposure": "public"},
				Annotations: map[string]string{"cert-manager.io/cluster-issuer": "letsencrypt"}},
			IngressSpec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: "labelled.example.com"}}},
		}
		Expect(k8sClient.Create(ctx, app)).To(Succeed())

		md := childOf(app, &appsv1beta1.MyDeployment{})
		Expect(md.Labels).To(Equal(map[string]string{"team": "shop", appsv1beta1.ApplicationNameLabel: "labelled"}))
		Expect(md.Annotations).To(HaveKeyWithValue("example.com/owner", "team-a"))
		Expect(md.Spec.Template.Labels).NotTo(HaveKey("team"), "the MyDeployment's labels are not its pods'")
		svc := childOf(app, &corev1.Service{})
		Expect(svc.Annotations).To(HaveKeyWithValue("service.beta.kubernetes.io/aws-load-balancer-internal", "true"))
		ing := childOf(app, &networkingv1.Ingress{})
		Expect(ing.Labels).To(HaveKeyWithValue("exposure", "public"))
		Expect(ing.Annotations).To(HaveKeyWithValue("cert-manager.io/cluster-issuer", "letsencrypt"))

		By("another manager annotates the Service and the Ingress")
		for _, obj := range []client.Object{svc, ing} {
			Expect(k8sClient.Patch(ctx, obj, client.RawPatch(types.MergePatchType,
				[]byte(`{"metadata": {"annotations": {"example.com/note": "theirs"}}}`)), client.FieldOwner("someone"))).To(Succeed())
		}

		By("the Application changes one annotation, removes the Ingress's metadata and renames a label")
		updateApp(app, func(a *appsv1beta1.Application) {
			a.Spec.Service.Metadata.Annotations["service.beta.kubernetes.io/aws-load-balancer-internal"] = "false"
			a.Spec.Ingress.Metadata = nil
			a.Spec.Deployment.Metadata.Labels = map[string]string{"tier": "front"}
		})
		Eventually(func() map[string]string { return childOf(app, &corev1.Service{}).Annotations }, timeout, interval).
			Should(Equal(map[string]string{"service.beta.kubernetes.io/aws-load-balancer-internal": "false", "example.com/note": "theirs"}))
		Eventually(func() map[string]string { return childOf(app, &networkingv1.Ingress{}).Annotations }, timeout, interval).
			Should(Equal(map[string]string{"example.com/note": "theirs"}), "ours removed, theirs kept")
		Eventually(func() map[string]string { return childOf(app, &networkingv1.Ingress{}).Labels }, timeout, interval).
			Should(Equal(map[string]string{appsv1beta1.ApplicationNameLabel: "labelled"}))
		Eventually(func() map[string]string { return childOf(app, &appsv1beta1.MyDeployment{}).Labels }, timeout, interval).
			Should(Equal(map[string]string{"tier": "front", appsv1beta1.ApplicationNameLabel: "labelled"}))
	})

	It("makes and removes an HPA and a PodDisruptionBudget; with the HPA it hands over the replicas and stops setting them", func() {
		app := minimal(ns, "scaled-app")
		app.Spec.Deployment.Replicas = ptr.To(int32(3))
		Expect(k8sClient.Create(ctx, app)).To(Succeed())
		Eventually(func() int32 { return *childOf(app, &appsv1beta1.MyDeployment{}).Spec.Replicas }, timeout, interval).Should(Equal(int32(3)))

		By("autoscaling and a disruption budget are added")
		updateApp(app, func(a *appsv1beta1.Application) {
			a.Spec.Autoscaling = &appsv1beta1.ApplicationAutoscaling{MinReplicas: ptr.To(int32(2)), MaxReplicas: 5,
				TargetCPUUtilizationPercentage: ptr.To(int32(60)), TargetMemoryUtilizationPercentage: ptr.To(int32(70))}
			a.Spec.DisruptionBudget = &appsv1beta1.ApplicationDisruptionBudget{MaxUnavailable: ptr.To(intstr.FromInt32(1))}
		})
		hpa := childOf(app, &autoscalingv2.HorizontalPodAutoscaler{})
		expectControlledBy(hpa, app)
		Expect(hpa.Spec.ScaleTargetRef).To(Equal(autoscalingv2.CrossVersionObjectReference{
			APIVersion: "apps.mydeployment.io/v1beta1", Kind: "MyDeployment", Name: "scaled-app"}))
		Expect(*hpa.Spec.MinReplicas).To(Equal(int32(2)))
		Expect(hpa.Spec.MaxReplicas).To(Equal(int32(5)))
		Expect(hpa.Spec.Metrics).To(HaveLen(2))
		Expect(hpa.Spec.Metrics[0].Resource.Name).To(Equal(corev1.ResourceCPU))
		Expect(*hpa.Spec.Metrics[0].Resource.Target.AverageUtilization).To(Equal(int32(60)))
		Expect(hpa.Spec.Metrics[1].Resource.Name).To(Equal(corev1.ResourceMemory))
		pdb := childOf(app, &policyv1.PodDisruptionBudget{})
		expectControlledBy(pdb, app)
		Expect(pdb.Spec.Selector.MatchLabels).To(Equal(map[string]string{appsv1beta1.AppNameLabel: "scaled-app"}))
		Expect(pdb.Spec.MaxUnavailable).To(Equal(ptr.To(intstr.FromInt32(1))))

		By("the replicas stay 3 (handed over, not defaulted to 1), and the HPA's scale is not fought")
		Consistently(func() int32 { return *childOf(app, &appsv1beta1.MyDeployment{}).Spec.Replicas }, "2s", interval).
			Should(Equal(int32(3)))
		md := childOf(app, &appsv1beta1.MyDeployment{})
		scale := &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: 4}}
		Expect(k8sClient.SubResource("scale").Update(ctx, md, client.WithSubResourceBody(scale))).To(Succeed())
		updateApp(app, func(a *appsv1beta1.Application) {
			a.Spec.Deployment.Template.Spec.Containers[0].Image = "nginx:1.28"
			a.Spec.DisruptionBudget = &appsv1beta1.ApplicationDisruptionBudget{MinAvailable: ptr.To(intstr.FromString("50%"))}
		})
		Eventually(func() string {
			return childOf(app, &appsv1beta1.MyDeployment{}).Spec.Template.Spec.Containers[0].Image
		}, timeout, interval).Should(Equal("nginx:1.28"))
		Consistently(func() int32 { return *childOf(app, &appsv1beta1.MyDeployment{}).Spec.Replicas }, "2s", interval).
			Should(Equal(int32(4)))
		Eventually(func() *intstr.IntOrString { return childOf(app, &policyv1.PodDisruptionBudget{}).Spec.MinAvailable },
			timeout, interval).Should(Equal(ptr.To(intstr.FromString("50%"))))
		Expect(childOf(app, &policyv1.PodDisruptionBudget{}).Spec.MaxUnavailable).To(BeNil(), "ours, removed with the Application's")

		By("both removed from the spec: both deleted")
		updateApp(app, func(a *appsv1beta1.Application) { a.Spec.Autoscaling, a.Spec.DisruptionBudget = nil, nil })
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, key(app), &autoscalingv2.HorizontalPodAutoscaler{}))
		}, timeout, interval).Should(BeTrue())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, key(app), &policyv1.PodDisruptionBudget{}))
		}, timeout, interval).Should(BeTrue())
		Eventually(reasons(app), timeout, interval).Should(ContainElements(
			"Deleted Deleted HorizontalPodAutoscaler scaled-app: no longer in the spec",
			"Deleted Deleted PodDisruptionBudget scaled-app: no longer in the spec"))
		Eventually(func() int32 { return *childOf(app, &appsv1beta1.MyDeployment{}).Spec.Replicas }, timeout, interval).
			Should(Equal(int32(3)), "spec.deployment.replicas applies again")
	})

	It("reports a route while the Gateway API CRDs are absent, and makes the HTTPRoute once they are installed", func() {
		app := minimal(ns, "routed")
		app.Spec.Route = &appsv1beta1.ApplicationRouteSpec{HTTPRouteSpec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "public"}}},
			Hostnames:       []gatewayv1.Hostname{"routed.example.com"},
		}}
		Expect(k8sClient.Create(ctx, app)).To(Succeed())
		Eventually(readyCondition(app), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", appsv1beta1.ReasonRouteCRDAbsent),
			HaveField("Message", ContainSubstring("the Gateway API CRDs are not installed"))))
		Expect(getApp(app).Status.Children.HTTPRoute).To(Equal("waiting for the Gateway API CRDs"))
		childOf(app, &corev1.Service{}) // the rest goes on

		By("the Gateway API CRDs are installed after the manager started")
		installRouteCRD()

		route := &gatewayv1.HTTPRoute{}
		Eventually(func() error { return k8sClient.Get(ctx, key(app), route) }, 3*CRDPoll, interval).Should(Succeed())
		expectControlledBy(route, app)
		Expect(route.Spec.ParentRefs).To(HaveLen(1))
		Expect(route.Spec.ParentRefs[0].Name).To(Equal(gatewayv1.ObjectName("public")))
		Expect(route.Spec.Hostnames).To(Equal([]gatewayv1.Hostname{"routed.example.com"}))
		Expect(route.Spec.Rules).To(HaveLen(1))
		Expect(route.Spec.Rules[0].BackendRefs).To(HaveLen(1))
		ref := route.Spec.Rules[0].BackendRefs[0]
		Expect(ref.Name).To(Equal(gatewayv1.ObjectName("routed")))
		Expect(ref.Port).To(Equal(ptr.To(gatewayv1.PortNumber(80))))
		Eventually(func() []string { return getApp(app).Status.URLs }, timeout, interval).
			Should(Equal([]string{"http://routed.example.com/"}))
		Eventually(readyCondition(app), timeout, interval).Should(HaveField("Reason", Not(Equal(appsv1beta1.ReasonRouteCRDAbsent))))
		Expect(getApp(app).Status.Children.HTTPRoute).To(Equal("http://routed.example.com/; not accepted by a Gateway yet"))

		By("the route leaves the spec: the HTTPRoute is deleted")
		updateApp(app, func(a *appsv1beta1.Application) { a.Spec.Route = nil })
		Eventually(func() bool { return apierrors.IsNotFound(k8sClient.Get(ctx, key(app), &gatewayv1.HTTPRoute{})) },
			timeout, interval).Should(BeTrue())
	})

	It("leaves the MyDeployment's replicas to whoever scales it when the Application does not set them", func() {
		app := minimal(ns, "scaled")
		Expect(k8sClient.Create(ctx, app)).To(Succeed())
		md := childOf(app, &appsv1beta1.MyDeployment{})

		By("an HPA (or kubectl scale md) scales the MyDeployment through its scale subresource")
		scale := &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: 3}}
		Expect(k8sClient.SubResource("scale").Update(ctx, md, client.WithSubResourceBody(scale))).To(Succeed())

		By("a template change is applied, replicas are not fought")
		updateApp(app, func(a *appsv1beta1.Application) {
			a.Spec.Deployment.Template.Spec.Containers[0].Image = "nginx:1.28"
		})
		Eventually(func() string {
			return childOf(app, &appsv1beta1.MyDeployment{}).Spec.Template.Spec.Containers[0].Image
		}, timeout, interval).Should(Equal("nginx:1.28"))
		Consistently(func() int32 { return *childOf(app, &appsv1beta1.MyDeployment{}).Spec.Replicas }, "2s", interval).
			Should(Equal(int32(3)))
	})

	It("passes kubectl scale app through to the MyDeployment", func() {
		app := minimal(ns, "scale-app")
		Expect(k8sClient.Create(ctx, app)).To(Succeed())
		childOf(app, &appsv1beta1.MyDeployment{})

		scale := &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: 4}}
		Expect(k8sClient.SubResource("scale").Update(ctx, getApp(app), client.WithSubResourceBody(scale))).To(Succeed())
		Eventually(func() int32 { return *childOf(app, &appsv1beta1.MyDeployment{}).Spec.Replicas }, timeout, interval).
			Should(Equal(int32(4)))
		Eventually(func() string { return getApp(app).Status.LabelSelector }, timeout, interval).
			Should(Equal(appsv1beta1.AppNameLabel + "=scale-app"))
	})

	It("deletes the Ingress and the Service when they leave the spec", func() {
		app := minimal(ns, "shrink")
		app.Spec.Ingress = &appsv1beta1.ApplicationIngressSpec{}
		Expect(k8sClient.Create(ctx, app)).To(Succeed())
		ing := childOf(app, &networkingv1.Ingress{})
		Expect(ing.Spec.DefaultBackend.Service.Name).To(Equal("shrink"))
		childOf(app, &corev1.Service{})

		updateApp(app, func(a *appsv1beta1.Application) { a.Spec.Ingress = nil })
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, key(app), &networkingv1.Ingress{}))
		}, timeout, interval).Should(BeTrue())
		Expect(k8sClient.Get(ctx, key(app), &corev1.Service{})).To(Succeed())

		updateApp(app, func(a *appsv1beta1.Application) { a.Spec.Service = nil })
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, key(app), &corev1.Service{}))
		}, timeout, interval).Should(BeTrue())
		Eventually(reasons(app), timeout, interval).Should(ContainElements(
			"Deleted Deleted Ingress shrink: no longer in the spec", "Deleted Deleted Service shrink: no longer in the spec"))
		Expect(k8sClient.Get(ctx, key(app), &appsv1beta1.MyDeployment{})).To(Succeed())
	})

	It("reports its children's state: replicas, cluster IP, ready endpoints, URLs, Ready", func() {
		app := minimal(ns, "live")
		app.Spec.Deployment.Replicas = ptr.To(int32(2))
		app.Spec.Ingress = &appsv1beta1.ApplicationIngressSpec{IngressSpec: networkingv1.IngressSpec{
			TLS:   []networkingv1.IngressTLS{{Hosts: []string{"live.example.com"}}},
			Rules: []networkingv1.IngressRule{{Host: "live.example.com"}, {}},
		}}
		Expect(k8sClient.Create(ctx, app)).To(Succeed())
		Eventually(readyCondition(app), timeout, interval).Should(HaveField("Reason", appsv1beta1.ReasonDeploymentNotAvailable))

		By("the kubelet: the pods become Ready")
		var pods []corev1.Pod
		Eventually(func() []corev1.Pod {
			var list corev1.PodList
			Expect(k8sClient.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{appsv1beta1.AppNameLabel: "live"})).To(Succeed())
			pods = list.Items
			return pods
		}, timeout, interval).Should(HaveLen(2))
		for i := range pods {
			pods[i].Status.Phase = corev1.PodRunning
			pods[i].Status.PodIP = "10.0.0." + string(rune('1'+i))
			pods[i].Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
			Expect(k8sClient.Status().Update(ctx, &pods[i])).To(Succeed())
		}
		Eventually(func() int32 { return getApp(app).Status.AvailableReplicas }, timeout, interval).Should(Equal(int32(2)))
		Eventually(readyCondition(app), timeout, interval).Should(HaveField("Reason", appsv1beta1.ReasonNoReadyEndpoints))

		By("kube-controller-manager: an EndpointSlice with the Service's labels, one pod ready and one not")
		svc := childOf(app, &corev1.Service{})
		slice := &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "live-", Labels: map[string]string{
				discoveryv1.LabelServiceName: "live", discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io",
				appsv1beta1.ApplicationNameLabel: svc.Labels[appsv1beta1.ApplicationNameLabel],
			}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints: []discoveryv1.Endpoint{
				{Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
					TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: pods[0].Name, UID: pods[0].UID}},
				{Addresses: []string{"10.0.0.2"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)},
					TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: pods[1].Name, UID: pods[1].UID}},
			},
			Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(int32(80))}},
		}
		Expect(k8sClient.Create(ctx, slice)).To(Succeed())
		Eventually(func() *appsv1beta1.ApplicationServiceStatus { return getApp(app).Status.Service }, timeout, interval).
			Should(Equal(&appsv1beta1.ApplicationServiceStatus{ClusterIP: svc.Spec.ClusterIP, ReadyEndpoints: 1}))
		Expect(svc.Spec.ClusterIP).NotTo(BeEmpty())
		Eventually(readyCondition(app), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", appsv1beta1.ReasonChildrenReady)))

		By("the Ingress controller: a load balancer address")
		ing := childOf(app, &networkingv1.Ingress{})
		ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "192.0.2.10"}}
		Expect(k8sClient.Status().Update(ctx, ing)).To(Succeed())
		Eventually(func() []string { return getApp(app).Status.URLs }, timeout, interval).
			Should(Equal([]string{"http://192.0.2.10/", "https://live.example.com/"}))
		st := getApp(app).Status
		Expect(st.Ingress.LoadBalancer).To(Equal(ing.Status.LoadBalancer.Ingress))
		Expect(st.Replicas).To(Equal(int32(2)))
		Expect(st.ReadyReplicas).To(Equal(int32(2)))
		Expect(st.UpdatedReplicas).To(Equal(int32(2)))
		Expect(meta.FindStatusCondition(st.Conditions, appsv1beta1.ApplicationAvailable).Status).To(Equal(metav1.ConditionTrue))
		Expect(meta.FindStatusCondition(st.Conditions, appsv1beta1.ApplicationProgressing).Reason).To(Equal(appsv1beta1.ReasonNewRevisionAvailable))
		Expect(st.Children).To(Equal(&appsv1beta1.ApplicationChildrenStatus{
			MyDeployment: "2/2 pods available, 2 up to date",
			Service:      "ClusterIP " + svc.Spec.ClusterIP + ", 1 ready endpoints",
			Ingress:      "http://192.0.2.10/ https://live.example.com/",
		}), "one line per child")
	})

	It("leaves alone a Service of the same name it does not own, with a condition and one event", func() {
		foreign := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken"},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "db", Port: 5432}}},
		}
		Expect(k8sClient.Create(ctx, foreign)).To(Succeed())
		app := minimal(ns, "taken")
		Expect(k8sClient.Create(ctx, app)).To(Succeed())

		Eventually(readyCondition(app), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", appsv1beta1.ReasonChildNotOwned),
			HaveField("Message", ContainSubstring("Service taken exists and is not controlled by this Application"))))
		childOf(app, &appsv1beta1.MyDeployment{}) // the rest still goes on
		notOwned := func() int {
			n := 0
			for _, r := range reasons(app)() {
				if len(r) > len(appsv1beta1.EventChildNotOwned) && r[:len(appsv1beta1.EventChildNotOwned)] == appsv1beta1.EventChildNotOwned {
					n++
				}
			}
			return n
		}
		Eventually(notOwned, timeout, interval).Should(Equal(1))

		By("more reconciles (a spec change) neither touch it nor repeat the event")
		updateApp(app, func(a *appsv1beta1.Application) { a.Spec.Deployment.MinReadySeconds = 1 })
		Eventually(func() int32 { return childOf(app, &appsv1beta1.MyDeployment{}).Spec.MinReadySeconds }, timeout, interval).Should(Equal(int32(1)))
		Consistently(notOwned, "1s", interval).Should(Equal(1))
		cur := childOf(app, &corev1.Service{})
		Expect(metav1.GetControllerOf(cur)).To(BeNil())
		Expect(cur.Labels).NotTo(HaveKey(appsv1beta1.ApplicationNameLabel))
		Expect(cur.Spec.Ports).To(HaveLen(1))
		Expect(cur.Spec.Ports[0].Name).To(Equal("db"))
		Expect(getApp(app).Status.ObservedGeneration).To(BeZero(), "not every child was synced")
	})

	It("reports a child the API server refuses as a condition and an event, and creates it once allowed", func() {
		By("an admission policy that refuses Services in the namespace (as a quota would)")
		policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "no-services-" + ns},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				FailurePolicy: ptr.To(admissionregistrationv1.Fail),
				MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"services"}},
					}}}},
				Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: "no Services here",
					Reason: ptr.To(metav1.StatusReasonForbidden)}},
			},
		}
		Expect(k8sClient.Create(ctx, policy)).To(Succeed())
		binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: policy.Name},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
				PolicyName:        policy.Name,
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
				MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
					MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}},
			},
		}
		Expect(k8sClient.Create(ctx, binding)).To(Succeed())
		DeferCleanup(func() { _ = k8sClient.Delete(ctx, policy) })
		Eventually(func() error { // the policy takes effect asynchronously
			probe := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"},
				Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 1}}}}
			return k8sClient.Create(ctx, probe, client.DryRunAll)
		}, timeout, interval).Should(MatchError(ContainSubstring("no Services here")))

		app := minimal(ns, "refused")
		Expect(k8sClient.Create(ctx, app)).To(Succeed())
		Eventually(readyCondition(app), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", appsv1beta1.ReasonChildApplyFailed),
			HaveField("Message", ContainSubstring("no Services here"))))
		Eventually(reasons(app), timeout, interval).Should(ContainElement(ContainSubstring(appsv1beta1.EventChildApplyFailed)))
		childOf(app, &appsv1beta1.MyDeployment{}) // the rest goes on

		By("the policy goes: the Service is created on a retry")
		Expect(k8sClient.Delete(ctx, binding)).To(Succeed())
		childOf(app, &corev1.Service{})
	})

	It("keeps reporting a child the API server could not write (a webhook it could not call) as it stands, and writes it once it can", func() {
		app := minimal(ns, "unwritten")
		Expect(k8sClient.Create(ctx, app)).To(Succeed())
		Eventually(readyCondition(app), timeout, interval).Should(HaveField("Reason", appsv1beta1.ReasonDeploymentNotAvailable))
		Eventually(func() int64 { return getApp(app).Status.ObservedGeneration }, timeout, interval).Should(Equal(int64(1)))
		// Each condition but for the generation it was last looked at with.
		conditions := func() []string {
			var out []string
			for _, c := range getApp(app).Status.Conditions {
				out = append(out, fmt.Sprintf("%s=%s %s %q since %s", c.Type, c.Status, c.Reason, c.Message, c.LastTransitionTime.UTC()))
			}
			return out
		}
		Eventually(conditions, timeout, interval).Should(ContainElements(
			HavePrefix("Available=False MinimumReplicasUnavailable"), HavePrefix("Progressing=True RevisionUpdated")),
			"the MyDeployment's own conditions mirrored: nothing more to change until its pod is Ready")
		before := conditions()

		By("a webhook on MyDeployments in the namespace that the API server cannot call, as during an operator upgrade under OLM")
		hook := &admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "unreachable-" + ns},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{
				Name: "unreachable.mydeployment.io",
				ClientConfig: admissionregistrationv1.WebhookClientConfig{
					URL: ptr.To("https://127.0.0.1:1/validate"), // nothing listens: connection refused
				},
				Rules: []admissionregistrationv1.RuleWithOperations{{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update, admissionregistrationv1.Create},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{appsv1beta1.GroupVersion.Group},
						APIVersions: []string{appsv1beta1.GroupVersion.Version}, Resources: []string{"mydeployments"}},
				}},
				NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
				FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
				SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
				AdmissionReviewVersions: []string{"v1"},
				TimeoutSeconds:          ptr.To(int32(2)),
			}},
		}
		Expect(k8sClient.Create(ctx, hook)).To(Succeed())
		DeferCleanup(func() { _ = k8sClient.Delete(ctx, hook) })
		Eventually(func() error { // it takes effect asynchronously
			md := childOf(app, &appsv1beta1.MyDeployment{})
			return k8sClient.Update(ctx, md, client.DryRunAll)
		}, timeout, interval).Should(MatchError(ContainSubstring("failed calling webhook")))

		By("a spec change: the MyDeployment's write fails, and the status still reports it as it stands")
		updateApp(app, func(a *appsv1beta1.Application) { a.Spec.Deployment.MinReadySeconds = 2 })
		Eventually(reasons(app), timeout, interval).Should(ContainElement(And(
			ContainSubstring(appsv1beta1.EventChildApplyFailed), ContainSubstring("failed calling webhook"))))
		Consistently(conditions, "2s", interval).
			Should(Equal(before), "Ready, Available and Progressing unchanged, lastTransitionTime too: nothing of the Application changed")
		Expect(getApp(app).Status.ObservedGeneration).To(Equal(int64(1)), "the change is not written yet")
		Expect(childOf(app, &appsv1beta1.MyDeployment{}).Spec.MinReadySeconds).To(BeZero())

		By("the webhook goes: the retry writes the change")
		Expect(k8sClient.Delete(ctx, hook)).To(Succeed())
		Eventually(func() int32 { return childOf(app, &appsv1beta1.MyDeployment{}).Spec.MinReadySeconds }, timeout, interval).Should(Equal(int32(2)))
		Eventually(func() int64 { return getApp(app).Status.ObservedGeneration }, timeout, interval).Should(Equal(int64(2)))
	})

	// After the route test: it installs the Gateway API CRDs while the
	// manager runs, which these need.
	canaryTrafficSpecs(func() string { return ns })
})
