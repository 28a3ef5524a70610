package admission

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/weights"
)

// AppCase is one invalid Application.
type AppCase struct {
	Name string
	// Change makes ValidApp's object invalid.
	Change func(*appsv1beta1.Application)
	// Update: create the valid object first, then apply the change as an update.
	Update bool
	// Field must appear in the error; Why too (case-insensitive).
	Field, Why string
	By         By
}

// Submit sends the case's Application to the API server in namespace ns
// and returns the refusal; err is set when the setup failed or the object
// was accepted.
func (c AppCase) Submit(ctx context.Context, cl client.Client, ns string) (refusal, err error) {
	app := ValidApp(ns, "shop")
	if !c.Update {
		c.Change(app)
		return accepted(c.Name, cl.Create(ctx, app))
	}
	if err := cl.Create(ctx, app); err != nil {
		return nil, fmt.Errorf("creating the valid object: %w", err)
	}
	for attempt := 0; ; attempt++ {
		cur := &appsv1beta1.Application{}
		if err := cl.Get(ctx, client.ObjectKeyFromObject(app), cur); err != nil {
			return nil, fmt.Errorf("reading the valid object: %w", err)
		}
		c.Change(cur)
		refusal = cl.Update(ctx, cur)
		if !apierrors.IsConflict(refusal) || attempt == 9 {
			return accepted(c.Name, refusal)
		}
	}
}

// ValidApp returns an Application every admission step accepts: one
// container with a named port, a Service on it, an Ingress for one host.
func ValidApp(ns, name string) *appsv1beta1.Application {
	return &appsv1beta1.Application{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1beta1.ApplicationSpec{
			Deployment: appsv1beta1.ApplicationDeploymentSpec{Template: &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27",
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 80}}}},
			}}},
			Service: &appsv1beta1.ApplicationServiceSpec{ServiceSpec: corev1.ServiceSpec{
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}}},
			Ingress: &appsv1beta1.ApplicationIngressSpec{IngressSpec: networkingv1.IngressSpec{
				Rules: []networkingv1.IngressRule{{Host: "shop.example.com"}}}},
		},
	}
}

// FiveLineApp returns ValidApp in the five-line form: image, replicas and
// port instead of the template.
func FiveLineApp(ns, name string) *appsv1beta1.Application {
	app := ValidApp(ns, name)
	app.Spec.Deployment = appsv1beta1.ApplicationDeploymentSpec{Image: "nginx:1.27", Replicas: ptr.To(int32(2)), Port: 80}
	return app
}

// RouteTo is a route with one rule to port 80 of the Service named (none:
// the rule routes to the Application's Service by default).
func RouteTo(service string) *appsv1beta1.ApplicationRouteSpec {
	rule := gatewayv1.HTTPRouteRule{}
	if service != "" {
		rule.BackendRefs = []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
			BackendObjectReference: gatewayv1.BackendObjectReference{Name: gatewayv1.ObjectName(service),
				Port: ptr.To(gatewayv1.PortNumber(80))}}}}
	}
	return &appsv1beta1.ApplicationRouteSpec{HTTPRouteSpec: gatewayv1.HTTPRouteSpec{Rules: []gatewayv1.HTTPRouteRule{rule}}}
}

func backend(service, port string) networkingv1.IngressBackend {
	return networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: service,
		Port: networkingv1.ServiceBackendPort{Name: port}}}
}

func paths(b networkingv1.IngressBackend) *networkingv1.HTTPIngressRuleValue {
	return &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
		Path: "/", PathType: ptr.To(networkingv1.PathTypePrefix), Backend: b}}}
}

// AppCases is the table of invalid Applications.
func AppCases() []AppCase {
	return []AppCase{
		{Name: "a Service targetPort that names no container port",
			Change: func(a *appsv1beta1.Application) { a.Spec.Service.Ports[0].TargetPort = intstr.FromString("web") },
			Field:  "spec.service.ports[0].targetPort", Why: "names no port of spec.deployment.template.spec.containers", By: Webhook},
		{Name: "an Ingress backend naming another Service",
			Change: func(a *appsv1beta1.Application) { a.Spec.Ingress.Rules[0].HTTP = paths(backend("other", "http")) },
			Field:  "spec.ingress.rules[0].http.paths[0].backend.service.name", Why: `must be "shop", the Application's Service`, By: Webhook},
		{Name: "an Ingress defaultBackend naming another Service",
			Change: func(a *appsv1beta1.Application) { b := backend("other", "http"); a.Spec.Ingress.DefaultBackend = &b },
			Field:  "spec.ingress.defaultBackend.service.name", Why: "the Application's Service", By: Webhook},
		{Name: "an Ingress backend port naming no port of the Service",
			Change: func(a *appsv1beta1.Application) { a.Spec.Ingress.Rules[0].HTTP = paths(backend("shop", "grpc")) },
			Field:  "spec.ingress.rules[0].http.paths[0].backend.service.port.name", Why: "names no port of the Application's Service", By: Webhook},
		{Name: "an Ingress without a Service",
			Change: func(a *appsv1beta1.Application) { a.Spec.Service = nil },
			Field:  "spec.service", Why: "an Ingress routes to the Application's Service", By: Webhook},
		{Name: "a route without a Service",
			Change: func(a *appsv1beta1.Application) {
				a.Spec.Service, a.Spec.Ingress = nil, nil
				a.Spec.Route = &appsv1beta1.ApplicationRouteSpec{}
			},
			Field: "spec.service", Why: "an HTTPRoute routes to the Application's Service", By: Webhook},
		{Name: "weight steps without a route",
			Change: func(a *appsv1beta1.Application) {
				a.Spec.Deployment.Metadata = &appsv1beta1.ChildMetadata{Annotations: map[string]string{
					appsv1beta1.CanaryStepsAnnotation: "weight 5%, 1, pause, weight 50%, 50%"}}
			},
			Field: "spec.deployment.metadata.annotations[" + appsv1beta1.CanaryStepsAnnotation + "]",
			Why:   "weight steps need spec.route", By: Webhook},
		{Name: "weight steps whose size runs ahead of the weight",
			Change: func(a *appsv1beta1.Application) {
				a.Spec.Route = RouteTo(a.Name)
				a.Spec.Deployment.Metadata = &appsv1beta1.ChildMetadata{Annotations: map[string]string{
					appsv1beta1.CanaryStepsAnnotation: "weight 5%, 50%"}}
			},
			Field: "spec.deployment.metadata.annotations[" + appsv1beta1.CanaryStepsAnnotation + "]",
			Why:   `step 2 "50%" exceeds the weight stated at step 1 (5%)`, By: Webhook},
		{Name: "a weight headroom beyond 10",
			Change: func(a *appsv1beta1.Application) {
				a.Spec.Route = RouteTo(a.Name)
				a.Spec.Deployment.Metadata = &appsv1beta1.ChildMetadata{Annotations: map[string]string{
					appsv1beta1.CanaryStepsAnnotation: "weight 5%, 1, pause", weights.HeadroomAnnotation: "12"}}
			},
			Field: "spec.deployment.metadata.annotations[" + weights.HeadroomAnnotation + "]",
			Why:   "must be a decimal from 1 to 10", By: Webhook},
		{Name: "a route backend naming the canary Service, which the Application weighs itself",
			Change: func(a *appsv1beta1.Application) { a.Spec.Route = RouteTo(a.Name + "-canary") },
			Field:  "spec.route.rules[0].backendRefs[0].name", Why: "names a Service the Application makes for a canary's traffic", By: Webhook},
		{Name: "the route's rules annotation, which the Application writes",
			Change: func(a *appsv1beta1.Application) {
				a.Spec.Route = RouteTo(a.Name)
				a.Spec.Route.Metadata = &appsv1beta1.ChildMetadata{Annotations: map[string]string{appsv1beta1.RouteRulesAnnotation: "x"}}
			},
			Field: "spec.route.metadata.annotations[" + appsv1beta1.RouteRulesAnnotation + "]", Why: "set by the Application on its HTTPRoute", By: Webhook},
		{Name: "a route with a name too long for the canary Services",
			Change: func(a *appsv1beta1.Application) { a.Name, a.Spec.Route = strings.Repeat("a", 57), RouteTo("") },
			Field:  "metadata.name", Why: "with spec.route, at most 56 characters", By: Webhook},
		{Name: "canary steps on the Application's MyDeployment that can never work",
			Change: func(a *appsv1beta1.Application) {
				a.Spec.Deployment.Metadata = &appsv1beta1.ChildMetadata{Annotations: map[string]string{appsv1beta1.CanaryStepsAnnotation: "50%, 10%"}}
			},
			Field: "spec.deployment.metadata.annotations[" + appsv1beta1.CanaryStepsAnnotation + "]", Why: "sizes must not decrease", By: Webhook},
		{Name: "duplicate Service port names",
			Change: func(a *appsv1beta1.Application) {
				a.Spec.Service.Ports = append(a.Spec.Service.Ports, corev1.ServicePort{Name: "http", Port: 8080, TargetPort: intstr.FromInt32(8080)})
			},
			Field: "spec.service.ports[1].name", Why: "Duplicate value", By: Webhook},
		{Name: "duplicate container port names across containers",
			Change: func(a *appsv1beta1.Application) {
				a.Spec.Deployment.Template.Spec.Containers = append(a.Spec.Deployment.Template.Spec.Containers, corev1.Container{
					Name: "sidecar", Image: "envoy:1", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}})
			},
			Field: "spec.deployment.template.spec.containers[1].ports[0].name", Why: "Duplicate value", By: Webhook},
		{Name: "a name too long for its children's label",
			Change: func(a *appsv1beta1.Application) { a.Name = strings.Repeat("a", 64) },
			Field:  "metadata.name", Why: "must be no more than 63 characters", By: Webhook},
		{Name: "a name its Service cannot have",
			Change: func(a *appsv1beta1.Application) { a.Name = "1shop" },
			Field:  "metadata.name", Why: "the name of its Service", By: Webhook},
		{Name: "a pod template no Pod could have",
			Change: func(a *appsv1beta1.Application) { a.Spec.Deployment.Template.Spec.Containers[0].Image = "" },
			Field:  "spec.deployment.template.spec.containers[0].image", Why: "Required value", By: Webhook},
		{Name: "a selector given after creation (it defaulted to the name label)", Update: true,
			Change: func(a *appsv1beta1.Application) {
				a.Spec.Deployment.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "shop"}}
				a.Spec.Deployment.Template.Labels = map[string]string{"app": "shop"}
			},
			Field: "spec.deployment.selector", Why: "field is immutable", By: Webhook},
		{Name: "the five-line form's image with a template",
			Change: func(a *appsv1beta1.Application) { a.Spec.Deployment.Image = "nginx:1.28" },
			Field:  "spec.deployment.image", Why: "may not be set with spec.deployment.template", By: Webhook},
		{Name: "the five-line form's port with a template",
			Change: func(a *appsv1beta1.Application) { a.Spec.Deployment.Port = 8080 },
			Field:  "spec.deployment.port", Why: "may not be set with spec.deployment.template", By: Webhook},
		{Name: "neither an image nor a template",
			Change: func(a *appsv1beta1.Application) { a.Spec.Deployment.Template = nil },
			Field:  "spec.deployment.image", Why: "the five-line form needs an image", By: Webhook},
		{Name: "a name its five-line container cannot have",
			Change: func(a *appsv1beta1.Application) {
				a.Name, a.Spec.Service, a.Spec.Ingress = "shop.v2", nil, nil
				a.Spec.Deployment = appsv1beta1.ApplicationDeploymentSpec{Image: "nginx:1.27"}
			},
			Field: "metadata.name", Why: "the name of its container (the five-line form)", By: Webhook},
		{Name: "a child label that takes the Application's own label",
			Change: func(a *appsv1beta1.Application) {
				a.Spec.Service.Metadata = &appsv1beta1.ChildMetadata{Labels: map[string]string{appsv1beta1.ApplicationNameLabel: "other"}}
			},
			Field: "spec.service.metadata.labels[" + appsv1beta1.ApplicationNameLabel + "]", Why: "set by the Application on each child", By: Webhook},
		{Name: "a child annotation with an invalid key",
			Change: func(a *appsv1beta1.Application) {
				a.Spec.Ingress.Metadata = &appsv1beta1.ChildMetadata{Annotations: map[string]string{"not a key": "x"}}
			},
			Field: "spec.ingress.metadata.annotations", Why: "name part must consist of", By: Webhook},
		{Name: "autoscaling with minReplicas above maxReplicas",
			Change: func(a *appsv1beta1.Application) {
				a.Spec.Autoscaling = &appsv1beta1.ApplicationAutoscaling{MinReplicas: ptr.To(int32(5)), MaxReplicas: 2}
			},
			Field: "spec.autoscaling.minReplicas", Why: "must not be greater than maxReplicas", By: CRD},
		{Name: "a disruption budget with both minAvailable and maxUnavailable",
			Change: func(a *appsv1beta1.Application) {
				a.Spec.DisruptionBudget = &appsv1beta1.ApplicationDisruptionBudget{
					MinAvailable: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(1))}
			},
			Field: "spec.disruptionBudget", Why: "give one of minAvailable and maxUnavailable", By: CRD},
		{Name: "a disruption budget with neither",
			Change: func(a *appsv1beta1.Application) { a.Spec.DisruptionBudget = &appsv1beta1.ApplicationDisruptionBudget{} },
			Field:  "spec.disruptionBudget", Why: "give one of minAvailable and maxUnavailable", By: CRD},
		{Name: "negative replicas",
			Change: func(a *appsv1beta1.Application) { a.Spec.Deployment.Replicas = ptr.To(int32(-1)) },
			Field:  "spec.deployment.replicas", Why: "greater than or equal to 0", By: CRD},
		{Name: "a selector given that the template labels do not match",
			Change: func(a *appsv1beta1.Application) {
				a.Spec.Deployment.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "shop"}}
				a.Spec.Deployment.Template.Labels = map[string]string{"app": "other"}
			},
			Field: "spec.deployment.template.metadata.labels", Why: "`selector` does not match template `labels`", By: CRD},
	}
}
