package application

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// shopApp is an Application that asks for every kind of child, its status
// saying its generation was written.
func shopApp() *appsv1beta1.Application {
	app := &appsv1beta1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "shop", UID: "uid-shop", Generation: 3}}
	app.Status.ObservedGeneration = 3
	app.Spec.Deployment.Template = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "web", Image: "nginx:1.27", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 80}}}}}}
	app.Spec.Service = &appsv1beta1.ApplicationServiceSpec{}
	app.Spec.Ingress = &appsv1beta1.ApplicationIngressSpec{IngressSpec: networkingv1.IngressSpec{
		Rules: []networkingv1.IngressRule{{Host: "shop.example.com"}}}}
	app.Spec.Route = &appsv1beta1.ApplicationRouteSpec{HTTPRouteSpec: gatewayv1.HTTPRouteSpec{
		CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "public"}}},
		Hostnames:       []gatewayv1.Hostname{"shop.example.com"}}}
	app.Spec.Autoscaling = &appsv1beta1.ApplicationAutoscaling{MaxReplicas: 5}
	app.Spec.DisruptionBudget = &appsv1beta1.ApplicationDisruptionBudget{MaxUnavailable: ptr.To(intstr.FromInt32(1))}
	return app
}

// stored is obj as the API server holds it once applied: with a UID and
// resourceVersion, the defaults the API server (or the CRD's schema) fills
// in, and another manager's label and annotation.
func stored(obj client.Object) client.Object {
	obj = obj.DeepCopyObject().(client.Object)
	obj.SetUID(types.UID("uid-" + obj.GetName()))
	obj.SetResourceVersion("7")
	obj.GetLabels()["example.com/theirs"] = "yes"
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations["example.com/theirs"] = "yes"
	obj.SetAnnotations(annotations)
	switch o := obj.(type) {
	case *appsv1beta1.MyDeployment:
		c := &o.Spec.Template.Spec.Containers[0]
		c.ImagePullPolicy, c.TerminationMessagePath = corev1.PullIfNotPresent, "/dev/termination-log"
		c.Ports[0].Protocol = corev1.ProtocolTCP
		o.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
		o.Status.Replicas = 2
	case *corev1.Service:
		o.Spec.ClusterIP, o.Spec.SessionAffinity = "10.0.0.1", corev1.ServiceAffinityNone
		o.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
		if o.Spec.Type == "" {
			o.Spec.Type = corev1.ServiceTypeClusterIP
		}
	case *gatewayv1.HTTPRoute:
		for i := range o.Spec.Rules {
			rule := &o.Spec.Rules[i]
			rule.Matches = []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{
				Type: ptr.To(gatewayv1.PathMatchPathPrefix), Value: ptr.To("/")}}}
			for j := range rule.BackendRefs {
				ref := &rule.BackendRefs[j]
				ref.Group, ref.Kind = ptr.To(gatewayv1.Group("")), ptr.To(gatewayv1.Kind("Service"))
				if ref.Weight == nil {
					ref.Weight = ptr.To(int32(1))
				}
			}
		}
	}
	return obj
}

// atRest is the observation of app with each child it asks for stored as
// applied (the revision Services with split, the route weighed by ready),
// ours.
func atRest(app *appsv1beta1.Application, split *Split, ready [2]int32) *observation {
	o := &observation{app: app, routesServed: true, split: split, ready: ready}
	for i := range kinds {
		s := split
		if i == kindHTTPRoute {
			s = Weighed(split, ready[0], ready[1])
		}
		desired := kinds[i].desired(app, s)
		o.children[i].wanted = kinds[i].desired(app, split) != nil
		if desired != nil {
			o.children[i].live, o.children[i].ours = stored(desired), true
		}
	}
	return o
}

var canarySplit = &Split{Stable: "shop-1", Canary: "shop-2"}

// drop makes kind i's child absent.
func drop(o *observation, i int) { o.children[i].live, o.children[i].ours = nil, false }

// standing makes kind i's child stored as app asks for it with split.
func standing(o *observation, i int, split *Split) {
	o.children[i].live, o.children[i].ours = stored(kinds[i].desired(o.app, split)), true
}

// liveRoute is the observation's route.
func liveRoute(o *observation) *gatewayv1.HTTPRoute {
	return o.children[kindHTTPRoute].live.(*gatewayv1.HTTPRoute)
}

func names(ws []write) []string {
	out := []string{}
	for _, w := range ws {
		out = append(out, w.String())
	}
	return out
}

func TestPlanWrites(t *testing.T) {
	const (
		routeToShop    = "apply HTTPRoute shop (to Service shop)"
		retireStable   = "delete Service shop-stable once HTTPRoute shop went through"
		retireCanary   = "delete Service shop-canary once HTTPRoute shop went through"
		revisionsOrOne = " if Service shop-stable and Service shop-canary stand, else "
	)
	every := []string{"apply MyDeployment shop", "apply Service shop", "apply Ingress shop", routeToShop,
		"apply HorizontalPodAutoscaler shop", "apply PodDisruptionBudget shop"}
	cases := []struct {
		name   string
		split  *Split
		ready  [2]int32
		change func(o *observation)
		want   []string
	}{
		{name: "at rest, with the API server's defaults and another manager's fields: no write", want: []string{}},
		{name: "at rest during a canary step: no write", split: canarySplit, ready: [2]int32{9, 1}, want: []string{}},
		{name: "a generation not yet written: every child applied though each looks as asked (a field the spec dropped is removed only so)",
			change: func(o *observation) { o.app.Status.ObservedGeneration = 2 }, want: every},
		{name: "nothing there yet: each child created in kinds' order, a Service before the Ingress and route that point at it",
			change: func(o *observation) {
				for i := range kinds {
					drop(o, i)
				}
				o.app.Status.ObservedGeneration = 0
			}, want: every},
		{name: "drift of a field of ours (the Service's targetPort): that child alone",
			change: func(o *observation) {
				o.children[kindService].live.(*corev1.Service).Spec.Ports[0].TargetPort = intstr.FromInt32(8080)
			}, want: []string{"apply Service shop"}},
		{name: "an item another manager added to a list we fill (a second port): written, to remove it",
			change: func(o *observation) {
				svc := o.children[kindService].live.(*corev1.Service)
				svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: "debug", Port: 81})
			}, want: []string{"apply Service shop"}},
		{name: "a label of ours removed by hand: written",
			change: func(o *observation) {
				delete(o.children[kindDisruptionBudget].live.GetLabels(), appsv1beta1.ApplicationNameLabel)
			}, want: []string{"apply PodDisruptionBudget shop"}},
		{name: "a child the spec no longer asks for, ours: deleted in kinds' order",
			change: func(o *observation) { o.app.Spec.Ingress, o.children[kindIngress].wanted = nil, false },
			want:   []string{"delete Ingress shop"}},
		{name: "a child of that name someone else controls: left alone, wanted or not",
			change: func(o *observation) {
				o.children[kindService].ours = false
				o.children[kindService].live.(*corev1.Service).Spec.Ports[0].Port = 5432
				o.app.Spec.DisruptionBudget, o.children[kindDisruptionBudget].wanted = nil, false
				o.children[kindDisruptionBudget].ours = false
			}, want: []string{}},
		{name: "a child that could not be read: left alone",
			change: func(o *observation) {
				drop(o, kindIngress)
				o.children[kindIngress].err = errors.New("reading Ingress shop: timeout")
			}, want: []string{}},
		{name: "HTTPRoute not served: nothing written to it",
			change: func(o *observation) {
				o.routesServed = false
				drop(o, kindHTTPRoute)
				o.children[kindHTTPRoute].unserved = true
			}, want: []string{}},
		{name: "the replicas our apply still owns: handed off first, then the MyDeployment applied without them though it looks as asked",
			change: func(o *observation) { o.ownedReplicas = ptr.To(int32(3)) },
			want:   []string{"apply MyDeployment shop"}},
		{name: "a canary begins: the revision Services created; the route stays on the one Service until they have ready endpoints",
			split: canarySplit,
			change: func(o *observation) {
				drop(o, kindStableService)
				drop(o, kindCanaryService)
			}, want: []string{"apply Service shop-stable", "apply Service shop-canary"}},
		{name: "the revision Services have ready endpoints: the route weighed",
			split: canarySplit, ready: [2]int32{9, 1},
			change: func(o *observation) { standing(o, kindHTTPRoute, nil) },
			want:   []string{"apply HTTPRoute shop (shop-stable 90%, shop-canary 10%)"}},
		{name: "a revision Service written in the same sync: the route weighed only if both stand once written",
			split: canarySplit, ready: [2]int32{9, 0},
			change: func(o *observation) {
				drop(o, kindCanaryService)
				standing(o, kindHTTPRoute, nil)
			}, want: []string{"apply Service shop-canary",
				"apply HTTPRoute shop (shop-stable 100%, shop-canary 0%)" + revisionsOrOne + "nothing"}},
		{name: "a revision Service updated while the weights move: the route weighed if both stand, else to the one Service",
			split: canarySplit, ready: [2]int32{9, 1},
			change: func(o *observation) {
				o.children[kindCanaryService].live.(*corev1.Service).Spec.Selector[appsv1beta1.RevisionLabel] = "shop-0"
				standing(o, kindHTTPRoute, &Split{Stable: "shop-1", Canary: "shop-2", CanaryWeight: 20})
			}, want: []string{"apply Service shop-canary",
				"apply HTTPRoute shop (shop-stable 90%, shop-canary 10%)" + revisionsOrOne + routeToShop}},
		{name: "a revision Service weighed already, written again: the route kept if both stand, else to the one Service",
			split: canarySplit, ready: [2]int32{9, 1},
			change: func(o *observation) {
				o.children[kindCanaryService].live.(*corev1.Service).Spec.Selector[appsv1beta1.RevisionLabel] = "shop-0"
			}, want: []string{"apply Service shop-canary",
				"keep HTTPRoute shop" + revisionsOrOne + routeToShop}},
		{name: "a revision Service someone else controls: the route to the one Service",
			split: canarySplit, ready: [2]int32{9, 1},
			change: func(o *observation) {
				o.children[kindCanaryService].ours = false
				standing(o, kindHTTPRoute, nil)
				drop(o, kindStableService)
			}, want: []string{"apply Service shop-stable"}},
		{name: "the canary done: the route written to the one Service, then the revision Services deleted once it went through",
			ready: [2]int32{9, 1},
			change: func(o *observation) {
				for _, i := range []int{kindStableService, kindCanaryService} {
					standing(o, i, canarySplit)
				}
				standing(o, kindHTTPRoute, &Split{Stable: "shop-1", Canary: "shop-2", CanaryWeight: 10})
			}, want: []string{routeToShop, retireStable, retireCanary}},
		{name: "the canary done, the route on the one Service already: the revision Services deleted, still after the route",
			change: func(o *observation) {
				for _, i := range []int{kindStableService, kindCanaryService} {
					standing(o, i, canarySplit)
				}
			}, want: []string{retireStable, retireCanary}},
		{name: "the route no longer in the spec during a canary: deleted, then the revision Services once it went",
			split: canarySplit, ready: [2]int32{9, 1},
			change: func(o *observation) {
				o.app.Spec.Route, o.children[kindHTTPRoute].wanted = nil, false
				o.split = nil
				o.children[kindStableService].wanted, o.children[kindCanaryService].wanted = false, false
			}, want: []string{"delete HTTPRoute shop", retireStable, retireCanary}},
		{name: "the route's rules edited by hand (a filter): kept as they are, no write",
			change: func(o *observation) {
				liveRoute(o).Spec.Rules[0].Filters = []gatewayv1.HTTPRouteFilter{{Type: gatewayv1.HTTPRouteFilterRequestMirror}}
			}, want: []string{}},
		{name: "the Application's route rules changed: the spec's rules written",
			change: func(o *observation) {
				o.app.Spec.Route.Rules = []gatewayv1.HTTPRouteRule{{Matches: []gatewayv1.HTTPRouteMatch{{
					Path: &gatewayv1.HTTPPathMatch{Value: ptr.To("/api")}}}}}
			}, want: []string{routeToShop}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := atRest(shopApp(), c.split, c.ready)
			if c.change != nil {
				c.change(o)
			}
			p := planWrites(o)
			if got := names(p.writes); !reflect.DeepEqual(got, c.want) {
				t.Errorf("writes\n%q\nwant\n%q", got, c.want)
			}
			if (p.handOff != nil) != (o.ownedReplicas != nil) {
				t.Errorf("hand-off %v, want one exactly when our apply owns the replicas (%v)", p.handOff, o.ownedReplicas)
			}
		})
	}
}

func TestPlanKeepsTheRouteRulesEditedByHand(t *testing.T) {
	o := atRest(shopApp(), canarySplit, [2]int32{9, 1})
	standing(o, kindHTTPRoute, nil)
	mirror := gatewayv1.HTTPRouteFilter{Type: gatewayv1.HTTPRouteFilterRequestMirror}
	liveRoute(o).Spec.Rules[0].Filters = []gatewayv1.HTTPRouteFilter{mirror}
	before := liveRoute(o).DeepCopy()

	p := planWrites(o)
	if len(p.writes) != 1 {
		t.Fatalf("writes %q, want the route's", names(p.writes))
	}
	route := p.writes[0].object.(*gatewayv1.HTTPRoute)
	if route.ResourceVersion != before.ResourceVersion {
		t.Errorf("resourceVersion %q, want the live route's %q: the write of its live rules is guarded", route.ResourceVersion, before.ResourceVersion)
	}
	if f := route.Spec.Rules[0].Filters; !reflect.DeepEqual(f, []gatewayv1.HTTPRouteFilter{mirror}) {
		t.Errorf("filters %+v, want the one added by hand", f)
	}
	if !reflect.DeepEqual(liveRoute(o), before) {
		t.Error("the plan changed the observed route")
	}
}

func TestWriteGiven(t *testing.T) {
	app := shopApp()
	weighed := write{kind: kindHTTPRoute, op: applyOp, object: desiredRoute(app, &Split{Stable: "shop-1", Canary: "shop-2", CanaryWeight: 10}),
		ifStanding: []int{kindStableService, kindCanaryService}}
	one := write{kind: kindHTTPRoute, op: applyOp, object: desiredRoute(app, nil)}
	withOne := weighed
	withOne.otherwise = &one
	kept := withOne
	kept.op = keep
	retire := write{kind: kindStableService, op: deleteOp, live: stored(revisionService(app, canarySplit, false)),
		ifWritten: []int{kindHTTPRoute}}
	refused := outcome{err: apierrors.NewForbidden(schema.GroupResource{Resource: "services"}, "shop-canary", errors.New("quota"))}
	cases := []struct {
		name string
		w    write
		out  map[int]outcome
		want string // "": no write
	}{
		{name: "both revision Services stand: the route weighed", w: withOne,
			out:  map[int]outcome{kindStableService: {present: true}, kindCanaryService: {present: true}},
			want: withOne.String()},
		{name: "a revision Service's apply refused: the route to the one Service instead", w: withOne,
			out:  map[int]outcome{kindStableService: {present: true}, kindCanaryService: refused},
			want: one.String()},
		{name: "a revision Service that could not be written stands as it was: the route weighed", w: withOne,
			out: map[int]outcome{kindStableService: {present: true},
				kindCanaryService: {present: true, unwritten: true, err: apierrors.NewServiceUnavailable("webhook")}},
			want: withOne.String()},
		{name: "a revision Service refused, the one Service's route in place already: nothing", w: weighed,
			out: map[int]outcome{kindStableService: refused}},
		{name: "both stand and the weighed route holds: nothing", w: kept,
			out: map[int]outcome{kindStableService: {present: true}, kindCanaryService: {present: true}}},
		{name: "the route written: the revision Service deleted", w: retire,
			out: map[int]outcome{kindHTTPRoute: {present: true}}, want: retire.String()},
		{name: "the route not ours, or not written (absent, not served): the revision Service deleted", w: retire,
			out: map[int]outcome{kindHTTPRoute: {notOwned: true}}, want: retire.String()},
		{name: "the route's write failed: the revision Service kept, the route may send traffic to it", w: retire,
			out: map[int]outcome{kindHTTPRoute: {err: errors.New("applying HTTPRoute shop: refused")}}},
		{name: "the route's write met a newer route: the revision Service kept", w: retire,
			out: map[int]outcome{kindHTTPRoute: {present: true, stale: true}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out [numKinds]outcome
			for k, o := range c.out {
				out[k] = o
			}
			got := ""
			if w, ok := c.w.given(&out); ok {
				got = w.String()
			}
			if got != c.want {
				t.Errorf("given = %q, want %q", got, c.want)
			}
		})
	}
}

func TestHolds(t *testing.T) {
	svc := func(change func(*corev1.Service)) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"a": "1"}},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "shop"},
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}}}
		if change != nil {
			change(s)
		}
		return s
	}
	desired := svc(nil)
	for _, c := range []struct {
		name string
		live *corev1.Service
		want bool
	}{
		{"the same", svc(nil), true},
		{"defaults and others' fields beside ours", svc(func(s *corev1.Service) {
			s.Labels["theirs"] = "x"
			s.Annotations = map[string]string{"theirs": "y"}
			s.Spec.ClusterIP, s.Spec.Ports[0].Protocol = "10.0.0.1", corev1.ProtocolTCP
		}), true},
		{"a label of ours changed", svc(func(s *corev1.Service) { s.Labels["a"] = "2" }), false},
		{"a label of ours gone", svc(func(s *corev1.Service) { s.Labels = nil }), false},
		{"a map key of ours gone", svc(func(s *corev1.Service) { s.Spec.Selector = map[string]string{"other": "x"} }), false},
		{"a list item another manager added", svc(func(s *corev1.Service) {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Port: 81})
		}), false},
		{"a list item's field of ours changed", svc(func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromInt32(80) }), false},
		{"our controller reference gone", svc(func(s *corev1.Service) { s.OwnerReferences = nil }), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := desired.DeepCopy()
			d.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps.mydeployment.io/v1beta1", Kind: "Application", Name: "shop", UID: "u", Controller: ptr.To(true)}}
			if c.name != "our controller reference gone" {
				c.live.OwnerReferences = append([]metav1.OwnerReference{{APIVersion: "v1", Kind: "Other", Name: "o", UID: "o"}}, d.OwnerReferences...)
			}
			if got := holds(d, c.live); got != c.want {
				t.Errorf("holds = %v, want %v", got, c.want)
			}
		})
	}
	if holds(&autoscalingv2.HorizontalPodAutoscaler{Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 5}},
		&autoscalingv2.HorizontalPodAutoscaler{Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 4}}) {
		t.Error("a scalar of ours changed, and holds")
	}
	pdb := &policyv1.PodDisruptionBudget{}
	if !holds(pdb, pdb.DeepCopy()) {
		t.Error("an empty spec does not hold")
	}
}

func TestObservedOutcome(t *testing.T) {
	route := stored(desiredRoute(shopApp(), nil))
	for _, c := range []struct {
		name string
		seen seen
		want string
	}{
		{"wanted, ours: present", seen{wanted: true, live: route, ours: true}, "present"},
		{"wanted, someone else's: not owned", seen{wanted: true, live: route}, "not owned"},
		{"not wanted, ours: not present (its delete is planned)", seen{live: route, ours: true}, ""},
		{"not wanted, someone else's: nothing", seen{live: route}, ""},
		{"wanted, kind not served: the CRD absent", seen{wanted: true, unserved: true}, "crd absent"},
		{"not wanted, kind not served: nothing", seen{unserved: true}, ""},
		{"what the write needs could not be read: an error, not present", seen{wanted: true, live: route, ours: true,
			err: errors.New("listing the EndpointSlices of Service shop-stable: timeout")}, "error"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := &observation{app: shopApp()}
			o.children[kindHTTPRoute] = c.seen
			out := o.outcome(kindHTTPRoute)
			got := ""
			switch {
			case out.present && (out.notOwned || out.crdAbsent || out.err != nil):
				got = fmt.Sprintf("contradiction: %+v", out)
			case out.present:
				got = "present"
			case out.notOwned:
				got = "not owned"
			case out.crdAbsent:
				got = "crd absent"
			case out.err != nil:
				got = "error"
			}
			if got != c.want {
				t.Errorf("outcome %q, want %q", got, c.want)
			}
		})
	}
}
