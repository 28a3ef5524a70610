package application

import (
	"fmt"
	"maps"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// DeploymentSpec is the MyDeployment spec the Application's spec.deployment
// stands for, with its defaults filled in: the template, in the five-line
// form, of one container (see FiveLineContainer); the selector
// (app.kubernetes.io/name: <name>) when left out, and the template labels
// the selector needs. Given both forms (the webhook refuses that), the
// template wins. It never changes app.
func DeploymentSpec(app *appsv1beta1.Application) appsv1beta1.MyDeploymentSpec {
	d := app.Spec.Deployment.DeepCopy()
	if app.Spec.Autoscaling != nil {
		d.Replicas = nil // the HPA's
	}
	spec := appsv1beta1.MyDeploymentSpec{Replicas: d.Replicas, Selector: d.Selector, RolloutSpec: d.RolloutSpec}
	if d.Template != nil {
		spec.Template = *d.Template
	} else {
		spec.Template.Spec.Containers = []corev1.Container{FiveLineContainer(app)}
	}
	labels := maps.Clone(spec.Template.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	if spec.Selector == nil {
		spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{appsv1beta1.AppNameLabel: app.Name}}
		if _, ok := labels[appsv1beta1.AppNameLabel]; !ok {
			labels[appsv1beta1.AppNameLabel] = app.Name
		}
	} else if len(spec.Template.Labels) == 0 {
		maps.Copy(labels, spec.Selector.MatchLabels)
	}
	spec.Template.Labels = labels
	return spec
}

// FiveLinePortName is the name of the container port of the five-line form,
// which the Service's port and the Ingress's backend default to.
const FiveLinePortName = "http"

// FiveLineContainer is the one container of the five-line form: named after
// the Application, with spec.deployment.image and, when spec.deployment.port
// is set, that container port named FiveLinePortName.
func FiveLineContainer(app *appsv1beta1.Application) corev1.Container {
	c := corev1.Container{Name: app.Name, Image: app.Spec.Deployment.Image}
	if p := app.Spec.Deployment.Port; p != 0 {
		c.Ports = []corev1.ContainerPort{{Name: FiveLinePortName, ContainerPort: p}}
	}
	return c
}

// ServiceSpec is the Application's spec.service with its defaults: the
// selector is the pods' (their selector's matchLabels, else their
// template labels), the ports the containers' (see ContainerServicePorts).
// nil when the Application has no Service.
func ServiceSpec(app *appsv1beta1.Application) *corev1.ServiceSpec {
	if app.Spec.Service == nil {
		return nil
	}
	spec := app.Spec.Service.ServiceSpec.DeepCopy()
	deployment := DeploymentSpec(app)
	if len(spec.Selector) == 0 {
		spec.Selector = maps.Clone(deployment.Selector.MatchLabels)
		if len(spec.Selector) == 0 {
			spec.Selector = maps.Clone(deployment.Template.Labels)
		}
	}
	if len(spec.Ports) == 0 {
		spec.Ports = ContainerServicePorts(deployment.Template.Spec.Containers)
	}
	return spec
}

// ContainerServicePorts is a Service port for each container port: the
// port's name (or, when there are several ports, "<protocol>-<port>" for an
// unnamed one), port = containerPort, targetPort = the name if it has one,
// else the number.
func ContainerServicePorts(containers []corev1.Container) []corev1.ServicePort {
	var all []corev1.ContainerPort
	for _, c := range containers {
		all = append(all, c.Ports...)
	}
	var ports []corev1.ServicePort
	for _, p := range all {
		protocol := p.Protocol
		if protocol == "" {
			protocol = corev1.ProtocolTCP
		}
		sp := corev1.ServicePort{Name: p.Name, Protocol: protocol, Port: p.ContainerPort,
			TargetPort: intstr.FromInt32(p.ContainerPort)}
		if p.Name != "" {
			sp.TargetPort = intstr.FromString(p.Name)
		} else if len(all) > 1 {
			sp.Name = fmt.Sprintf("%s-%d", strings.ToLower(string(protocol)), p.ContainerPort)
		}
		ports = append(ports, sp)
	}
	return ports
}

// IngressSpec is the Application's spec.ingress with its defaults: a rule
// without http routes "/" (Prefix) to the Application's Service at its
// first port, and with neither rules nor a defaultBackend that is the
// defaultBackend. nil when the Application has no Ingress.
func IngressSpec(app *appsv1beta1.Application) *networkingv1.IngressSpec {
	if app.Spec.Ingress == nil {
		return nil
	}
	spec := app.Spec.Ingress.IngressSpec.DeepCopy()
	backend := networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: app.Name}}
	if svc := ServiceSpec(app); svc != nil && len(svc.Ports) > 0 {
		if p := svc.Ports[0]; p.Name != "" {
			backend.Service.Port.Name = p.Name
		} else {
			backend.Service.Port.Number = p.Port
		}
	}
	if len(spec.Rules) == 0 && spec.DefaultBackend == nil {
		spec.DefaultBackend = backend.DeepCopy()
	}
	prefix := networkingv1.PathTypePrefix
	for i := range spec.Rules {
		if spec.Rules[i].HTTP == nil {
			spec.Rules[i].HTTP = &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
				Path: "/", PathType: &prefix, Backend: *backend.DeepCopy(),
			}}}
		}
	}
	return spec
}

// RouteSpec is the Application's spec.route with its defaults: a rule
// without backendRefs routes to the Application's Service at its first
// port, and no rules is one such rule. nil without spec.route.
func RouteSpec(app *appsv1beta1.Application) *gatewayv1.HTTPRouteSpec {
	if app.Spec.Route == nil {
		return nil
	}
	spec := app.Spec.Route.HTTPRouteSpec.DeepCopy()
	ref := gatewayv1.HTTPBackendRef{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{
		Name: gatewayv1.ObjectName(app.Name)}}}
	if svc := ServiceSpec(app); svc != nil && len(svc.Ports) > 0 {
		ref.Port = ptr.To(svc.Ports[0].Port)
	}
	if len(spec.Rules) == 0 {
		spec.Rules = []gatewayv1.HTTPRouteRule{{}}
	}
	for i := range spec.Rules {
		if len(spec.Rules[i].BackendRefs) == 0 {
			spec.Rules[i].BackendRefs = []gatewayv1.HTTPBackendRef{*ref.DeepCopy()}
		}
	}
	return spec
}

// AutoscalerSpec is the HorizontalPodAutoscaler the Application's
// spec.autoscaling asks for: scaling its MyDeployment between the limits,
// at the CPU and memory utilisation targets given (none: the HPA's
// default, 80% CPU). nil without spec.autoscaling.
func AutoscalerSpec(app *appsv1beta1.Application) *autoscalingv2.HorizontalPodAutoscalerSpec {
	a := app.Spec.Autoscaling
	if a == nil {
		return nil
	}
	spec := &autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{
			APIVersion: appsv1beta1.GroupVersion.String(), Kind: "MyDeployment", Name: app.Name},
		MinReplicas: a.MinReplicas,
		MaxReplicas: a.MaxReplicas,
	}
	for _, t := range []struct {
		name    corev1.ResourceName
		percent *int32
	}{{corev1.ResourceCPU, a.TargetCPUUtilizationPercentage}, {corev1.ResourceMemory, a.TargetMemoryUtilizationPercentage}} {
		if t.percent == nil {
			continue
		}
		spec.Metrics = append(spec.Metrics, autoscalingv2.MetricSpec{
			Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{Name: t.name, Target: autoscalingv2.MetricTarget{
				Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(*t.percent)}},
		})
	}
	return spec
}

// DisruptionBudgetSpec is the PodDisruptionBudget the Application's
// spec.disruptionBudget asks for, over the MyDeployment's pods (its
// selector). nil without spec.disruptionBudget.
func DisruptionBudgetSpec(app *appsv1beta1.Application) *policyv1.PodDisruptionBudgetSpec {
	b := app.Spec.DisruptionBudget
	if b == nil {
		return nil
	}
	return &policyv1.PodDisruptionBudgetSpec{
		Selector:       DeploymentSpec(app).Selector,
		MinAvailable:   b.MinAvailable,
		MaxUnavailable: b.MaxUnavailable,
	}
}

// childMeta is a child's metadata: the Application's name, its controller
// reference, the labels and annotations the spec gives the child, and
// ApplicationNameLabel (which a label of the same key cannot override: the
// cache selects on it).
func childMeta(app *appsv1beta1.Application, m *appsv1beta1.ChildMetadata) metav1.ObjectMeta {
	meta := metav1.ObjectMeta{
		Name:            app.Name,
		Namespace:       app.Namespace,
		Labels:          map[string]string{},
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(app, appsv1beta1.GroupVersion.WithKind("Application"))},
	}
	if m != nil {
		maps.Copy(meta.Labels, m.Labels)
		meta.Annotations = maps.Clone(m.Annotations)
	}
	meta.Labels[appsv1beta1.ApplicationNameLabel] = app.Name
	return meta
}
