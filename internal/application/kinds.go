package application

import (
	"fmt"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// childKind is one kind of child an Application may own. kinds lists them
// all, in the order they are applied and reported: the controller reads
// the table, and never dispatches on a kind's name.
type childKind struct {
	// name names the kind in events, conditions and logs ("Service").
	name string
	// suffix follows the Application's name in the child's name.
	suffix string
	// newObject is an empty object of the kind, for a read.
	newObject func() client.Object
	// desired is the child the spec asks for (metadata and spec), nil when
	// it asks for none; split is the canary's traffic split (TrafficSplit).
	desired func(app *appsv1beta1.Application, split *Split) client.Object
	// adapt, if set, changes desired to fit the live child before it is
	// applied (the route keeps its live rules: keepLiveRules).
	adapt func(app *appsv1beta1.Application, split *Split, desired, live client.Object)
	// backend: the route may point at the child, so it is deleted only
	// after the route was written without it.
	backend bool
	// gatewayAPI: the kind is served only once the Gateway API CRDs are.
	gatewayAPI bool
	// line sums up a child the Application applied, for status.children
	// (nil: no line of its own).
	line func(live client.Object, st *appsv1beta1.ApplicationStatus) string
	// slot is where that line goes in status.children.
	slot func(*appsv1beta1.ApplicationChildrenStatus) *string
	// updated, if set, is the event of an update of the child instead of
	// EventChildUpdated ("" reason: EventChildUpdated).
	updated func(before, after client.Object) (reason, note string)
}

// The index of each kind in kinds.
const (
	kindMyDeployment = iota
	kindService
	kindStableService
	kindCanaryService
	kindIngress
	kindHTTPRoute
	kindAutoscaler
	kindDisruptionBudget
	numKinds
)

// kinds are the children an Application may own.
var kinds = [numKinds]childKind{
	kindMyDeployment: {
		name:      "MyDeployment",
		newObject: func() client.Object { return &appsv1beta1.MyDeployment{} },
		desired: func(app *appsv1beta1.Application, _ *Split) client.Object {
			return &appsv1beta1.MyDeployment{ObjectMeta: childMeta(app, app.Spec.Deployment.Metadata), Spec: DeploymentSpec(app)}
		},
		line: func(live client.Object, _ *appsv1beta1.ApplicationStatus) string {
			md := live.(*appsv1beta1.MyDeployment)
			return fmt.Sprintf("%d/%d pods available, %d up to date", md.Status.AvailableReplicas,
				ptr.Deref(md.Spec.Replicas, 1), md.Status.UpdatedReplicas)
		},
		slot: func(c *appsv1beta1.ApplicationChildrenStatus) *string { return &c.MyDeployment },
	},
	kindService: {
		name:      "Service",
		newObject: func() client.Object { return &corev1.Service{} },
		desired: func(app *appsv1beta1.Application, _ *Split) client.Object {
			if spec := ServiceSpec(app); spec != nil {
				return &corev1.Service{ObjectMeta: childMeta(app, app.Spec.Service.Metadata), Spec: *spec}
			}
			return nil
		},
		line: func(live client.Object, st *appsv1beta1.ApplicationStatus) string {
			svc, ready := live.(*corev1.Service), int32(0)
			if st.Service != nil {
				ready = st.Service.ReadyEndpoints
			}
			return fmt.Sprintf("%s %s, %d ready endpoints", svc.Spec.Type, svc.Spec.ClusterIP, ready)
		},
		slot: func(c *appsv1beta1.ApplicationChildrenStatus) *string { return &c.Service },
	},
	kindStableService: revisionServiceKind(false),
	kindCanaryService: revisionServiceKind(true),
	kindIngress: {
		name:      "Ingress",
		newObject: func() client.Object { return &networkingv1.Ingress{} },
		desired: func(app *appsv1beta1.Application, _ *Split) client.Object {
			if spec := IngressSpec(app); spec != nil {
				return &networkingv1.Ingress{ObjectMeta: childMeta(app, app.Spec.Ingress.Metadata), Spec: *spec}
			}
			return nil
		},
		line: func(_ client.Object, st *appsv1beta1.ApplicationStatus) string {
			if len(st.URLs) == 0 {
				return "no URL yet (no host, and no load balancer address)"
			}
			return strings.Join(st.URLs, " ")
		},
		slot: func(c *appsv1beta1.ApplicationChildrenStatus) *string { return &c.Ingress },
	},
	kindHTTPRoute: {
		name:       "HTTPRoute",
		newObject:  func() client.Object { return &gatewayv1.HTTPRoute{} },
		gatewayAPI: true,
		desired: func(app *appsv1beta1.Application, split *Split) client.Object {
			return nilIfNone(desiredRoute(app, split))
		},
		adapt: func(app *appsv1beta1.Application, split *Split, desired, live client.Object) {
			keepLiveRules(app, split, desired.(*gatewayv1.HTTPRoute), live.(*gatewayv1.HTTPRoute))
		},
		updated: func(before, after client.Object) (string, string) {
			if note := trafficNote(before.(*gatewayv1.HTTPRoute), after.(*gatewayv1.HTTPRoute)); note != "" {
				return appsv1beta1.EventTrafficShifted, note
			}
			return "", ""
		},
		line: func(live client.Object, _ *appsv1beta1.ApplicationStatus) string {
			return routeLine(live.(*gatewayv1.HTTPRoute))
		},
		slot: func(c *appsv1beta1.ApplicationChildrenStatus) *string { return &c.HTTPRoute },
	},
	kindAutoscaler: {
		name:      "HorizontalPodAutoscaler",
		newObject: func() client.Object { return &autoscalingv2.HorizontalPodAutoscaler{} },
		desired: func(app *appsv1beta1.Application, _ *Split) client.Object {
			if spec := AutoscalerSpec(app); spec != nil {
				return &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: childMeta(app, nil), Spec: *spec}
			}
			return nil
		},
		line: func(live client.Object, _ *appsv1beta1.ApplicationStatus) string {
			hpa := live.(*autoscalingv2.HorizontalPodAutoscaler)
			return fmt.Sprintf("%d replicas, %d desired, between %d and %d", hpa.Status.CurrentReplicas,
				hpa.Status.DesiredReplicas, ptr.Deref(hpa.Spec.MinReplicas, 1), hpa.Spec.MaxReplicas)
		},
		slot: func(c *appsv1beta1.ApplicationChildrenStatus) *string { return &c.HorizontalPodAutoscaler },
	},
	kindDisruptionBudget: {
		name:      "PodDisruptionBudget",
		newObject: func() client.Object { return &policyv1.PodDisruptionBudget{} },
		desired: func(app *appsv1beta1.Application, _ *Split) client.Object {
			if spec := DisruptionBudgetSpec(app); spec != nil {
				return &policyv1.PodDisruptionBudget{ObjectMeta: childMeta(app, nil), Spec: *spec}
			}
			return nil
		},
		line: func(live client.Object, _ *appsv1beta1.ApplicationStatus) string {
			pdb := live.(*policyv1.PodDisruptionBudget)
			return fmt.Sprintf("%d/%d pods healthy, %d disruptions allowed", pdb.Status.CurrentHealthy,
				pdb.Status.DesiredHealthy, pdb.Status.DisruptionsAllowed)
		},
		slot: func(c *appsv1beta1.ApplicationChildrenStatus) *string { return &c.PodDisruptionBudget },
	},
}

// revisionServiceKind is the kind of the stable (canary false) or canary
// Service of a traffic split: no line of its own in status.children.
func revisionServiceKind(canary bool) childKind {
	suffix := StableSuffix
	if canary {
		suffix = CanarySuffix
	}
	return childKind{
		name:      "Service",
		suffix:    suffix,
		newObject: func() client.Object { return &corev1.Service{} },
		desired: func(app *appsv1beta1.Application, split *Split) client.Object {
			return nilIfNone(revisionService(app, split, canary))
		},
		backend: true,
	}
}

// nilIfNone is obj as a client.Object, nil (not a typed nil) when obj is.
func nilIfNone[T client.Object](obj T) client.Object {
	var none T
	if any(obj) == any(none) {
		return nil
	}
	return obj
}
