package application

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/canary"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/weights"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
)

// Canary traffic. While the Application's MyDeployment runs a canary
// (CanaryStepsAnnotation), an Application with a route keeps two more
// Services, <name>-stable and <name>-canary, selecting the pods of the
// MyDeployment's current and update revision (RevisionLabel), and its
// HTTPRoute sends each rule's traffic for the Application's Service to those
// two at the weights of Weighed. Once every step is done, or once an
// aborted rollout has no pod of the aborted revision left, the route points
// at the one Service again and the two Services go.
//
// In gateway-api v1.6.3 an HTTPRoute's rules, and each rule's matches,
// filters and backendRefs, are atomic lists (+listType=atomic): server-side
// apply owns a rule list whole, never one backendRef's weight. So the
// Application owns the rules it writes only in value: it writes the rules of
// its spec when they change (RouteRulesAnnotation records which ones it
// wrote), and otherwise writes back the route's live rules, whoever edited
// them, with only the backendRefs that name its Services changed (weigh).
// That read-modify-write carries the live resourceVersion, so an edit made
// after the read fails the write (a conflict, synced again) instead of being
// lost.

// Split is how the route divides the traffic for the Application's Service
// during a canary.
type Split struct {
	// Stable and Canary are the revisions (ControllerRevision names, the
	// pods' RevisionLabel) the stable and canary Services select.
	Stable, Canary string
	// Aborted: the rollout to Canary was aborted; the canary gets nothing.
	Aborted bool
	// CanaryWeight is the canary's share in percent (see Weighed); the
	// stable Service gets the rest.
	CanaryWeight int32
	// Stated is the weight the canary's weight steps state at the step
	// under way (rollout.StatedWeight); nil without weight steps, the
	// weight then being the Ready pods' share.
	Stated *int32
	// Headroom multiplies the canary's Ready share before it caps Stated
	// (weights.Headroom; 1: an equal share per pod).
	Headroom float64
}

// Capped says w carries less than its steps state: fewer canary pods are
// Ready than the stated weight needs (Weighed).
func (w *Split) Capped() bool {
	return w != nil && !w.Aborted && w.Stated != nil && w.CanaryWeight < *w.Stated
}

// TrafficSplit is the split md's canary asks for, its weight not yet set
// (Weighed), nil when the route should point at the one Service: no canary
// steps (or steps that do not parse), no rollout under way (no current
// revision, or it is the update revision), every step done
// (CanaryStepAnnotation, for the update revision), or an aborted rollout
// with no pod of the aborted revision left.
func TrafficSplit(md *appsv1beta1.MyDeployment) *Split {
	if md == nil {
		return nil
	}
	steps, err := canary.ParseSteps(md.Annotations[appsv1beta1.CanaryStepsAnnotation])
	cur, upd := md.Status.CurrentRevision, md.Status.UpdateRevision
	if err != nil || cur == "" || cur == upd {
		return nil
	}
	split := &Split{Stable: cur, Canary: upd}
	rec := optin.RecordsOf(md)
	if rec.Aborted == upd {
		if md.Status.UpdatedReplicas == 0 {
			return nil
		}
		split.Aborted = true
		return split
	}
	st := canary.Recorded(md)
	if st != nil && st.Revision == upd && st.Index >= len(steps) {
		return nil
	}
	index := 0 // no record of this rollout yet: its first step
	if st != nil && st.Revision == upd {
		index = st.Index
	}
	if stated, ok := rollout.StatedWeight(steps, index); ok {
		split.Stated, split.Headroom = &stated, weights.Headroom(md)
	}
	return split
}

// WeightSteps says annotations (a MyDeployment's) hold canary steps with
// a weight step, which only a route carries.
func WeightSteps(annotations map[string]string) bool {
	v, ok := annotations[appsv1beta1.CanaryStepsAnnotation]
	steps, err := canary.ParseSteps(v)
	return ok && err == nil && canary.HasWeights(steps)
}

// Weighed is split with its weight, from the ready endpoints of the stable
// and canary Services: the canary's share of the ready pods of both
// revisions, in percent, rounded; none when aborted. With weight steps
// (split.Stated) the stated weight, capped by that share times the
// headroom, rounded down (Capped), and 0 while no canary pod is ready:
// 2% to 1 ready pod of 10, but 10% at most to it when 50% is stated (15%
// with a headroom of 1.5). nil (the one Service)
// while the Services the weights would send traffic to have no ready
// endpoint (just made: their EndpointSlices not yet written), so the route
// never points at an empty Service. Each ready pod so gets an equal share,
// as behind the one Service, however the planner moves pods during a step:
// at a step's pause that is the step's share of the pods (1 of 10 pods:
// 10), while a step moves pods it follows them, never ahead of those ready.
func Weighed(split *Split, stableReady, canaryReady int32) *Split {
	if split == nil {
		return nil
	}
	w := *split
	switch {
	case split.Aborted && stableReady == 0, stableReady+canaryReady == 0:
		return nil
	case split.Aborted:
		w.CanaryWeight = 0
	case split.Stated != nil:
		// Capped by the canary's share; all of it when no stable pod is
		// ready (the stable Service has nothing to send it to).
		share := int32(min(100, math.Floor(100*float64(canaryReady)*max(split.Headroom, 1)/float64(stableReady+canaryReady))))
		w.CanaryWeight = min(*split.Stated, share)
		if stableReady == 0 {
			w.CanaryWeight = 100
		}
	default:
		w.CanaryWeight = int32((200*int64(canaryReady) + int64(stableReady+canaryReady)) / (2 * int64(stableReady+canaryReady)))
	}
	return &w
}

// The suffixes of the names of the stable and canary Services.
const (
	StableSuffix = "-stable"
	CanarySuffix = "-canary"
)

// revisionServiceSpec is the spec of the stable or canary Service: the
// Application Service's ports and selector, the selector narrowed to the
// pods of revision. A ClusterIP Service whatever the main one's type: the
// route reaches it inside the cluster.
func revisionServiceSpec(app *appsv1beta1.Application, revision string) *corev1.ServiceSpec {
	main := ServiceSpec(app)
	if main == nil {
		return nil
	}
	spec := &corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: maps.Clone(main.Selector)}
	spec.Selector[appsv1beta1.RevisionLabel] = revision
	for _, p := range main.Ports {
		spec.Ports = append(spec.Ports, corev1.ServicePort{Name: p.Name, Protocol: p.Protocol, AppProtocol: p.AppProtocol,
			Port: p.Port, TargetPort: p.TargetPort})
	}
	return spec
}

// revisionService is the desired stable (canary false) or canary Service:
// nil without a split.
func revisionService(app *appsv1beta1.Application, split *Split, canary bool) *corev1.Service {
	if split == nil || app.Spec.Service == nil {
		return nil
	}
	name, revision := app.Name+StableSuffix, split.Stable
	if canary {
		name, revision = app.Name+CanarySuffix, split.Canary
	}
	meta := childMeta(app, nil)
	meta.Name = name
	return &corev1.Service{ObjectMeta: meta, Spec: *revisionServiceSpec(app, revision)}
}

// desiredRoute is the HTTPRoute the Application asks for: its spec's rules
// (RouteSpec) weighed for split, and RouteRulesAnnotation naming those
// rules. nil without spec.route.
func desiredRoute(app *appsv1beta1.Application, split *Split) *gatewayv1.HTTPRoute {
	spec := RouteSpec(app)
	if spec == nil {
		return nil
	}
	meta := childMeta(app, app.Spec.Route.Metadata)
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	meta.Annotations[appsv1beta1.RouteRulesAnnotation] = rulesHash(spec.Rules)
	spec.Rules = weigh(spec.Rules, app, split)
	return &gatewayv1.HTTPRoute{ObjectMeta: meta, Spec: *spec}
}

// keepLiveRules turns desired (desiredRoute) into a write of the live
// route's rules when the Application's rules have not changed since it
// wrote them (live's RouteRulesAnnotation is desired's): the live rules,
// as whoever edited them last left them, weighed for split, guarded by
// live's resourceVersion. Otherwise desired stays the spec's rules, which
// replace the live ones (a change of the Application's rules wins).
func keepLiveRules(app *appsv1beta1.Application, split *Split, desired, live *gatewayv1.HTTPRoute) {
	if live.Annotations[appsv1beta1.RouteRulesAnnotation] != desired.Annotations[appsv1beta1.RouteRulesAnnotation] {
		return
	}
	desired.Spec.Rules = weigh(live.Spec.Rules, app, split)
	desired.ResourceVersion = live.ResourceVersion
}

// rulesHash names a list of rules: a hash of their JSON.
func rulesHash(rules []gatewayv1.HTTPRouteRule) string {
	b, _ := json.Marshal(rules) // plain data: cannot fail
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// weigh is rules with, in each rule, the backendRefs that name one of the
// Application's Services (ours) replaced where the first of them stood:
// without a split by one ref to the Application's Service, with one by a
// ref to the stable Service and one to the canary Service at the split's
// weights. The replacements keep the first ref's port and filters. Every
// other ref, and everything else in the rules, is left as it is. rules is
// not changed.
func weigh(rules []gatewayv1.HTTPRouteRule, app *appsv1beta1.Application, split *Split) []gatewayv1.HTTPRouteRule {
	out := make([]gatewayv1.HTTPRouteRule, len(rules))
	for i := range rules {
		rule := rules[i].DeepCopy()
		var refs []gatewayv1.HTTPBackendRef
		placed := false
		for _, ref := range rule.BackendRefs {
			if !ours(ref, app) {
				refs = append(refs, ref)
				continue
			}
			if !placed {
				refs = append(refs, weighedRefs(ref, app, split)...)
				placed = true
			}
		}
		rule.BackendRefs = refs
		out[i] = *rule
	}
	return out
}

// weighedRefs are the refs that stand for our template ref: see weigh.
func weighedRefs(template gatewayv1.HTTPBackendRef, app *appsv1beta1.Application, split *Split) []gatewayv1.HTTPBackendRef {
	named := func(name string, weight *int32) gatewayv1.HTTPBackendRef {
		ref := *template.DeepCopy()
		ref.Name, ref.Weight = gatewayv1.ObjectName(name), weight
		return ref
	}
	if split == nil {
		weight := template.Weight
		if string(template.Name) != app.Name {
			weight = nil // the stable one's share: gone with the split
		}
		return []gatewayv1.HTTPBackendRef{named(app.Name, weight)}
	}
	return []gatewayv1.HTTPBackendRef{
		named(app.Name+StableSuffix, ptr.To(100-split.CanaryWeight)),
		named(app.Name+CanarySuffix, ptr.To(split.CanaryWeight)),
	}
}

// ours: ref names a Service of the Application (its own, stable or canary)
// in its namespace.
func ours(ref gatewayv1.HTTPBackendRef, app *appsv1beta1.Application) bool {
	if g := ptr.Deref(ref.Group, ""); g != "" && g != gatewayv1.Group(corev1.GroupName) {
		return false
	}
	if k := ptr.Deref(ref.Kind, "Service"); k != "Service" {
		return false
	}
	if ns := ptr.Deref(ref.Namespace, ""); ns != "" && string(ns) != app.Namespace {
		return false
	}
	switch string(ref.Name) {
	case app.Name, app.Name + StableSuffix, app.Name + CanarySuffix:
		return true
	}
	return false
}

// routeTraffic describes how route divides the traffic of the first rule
// that sends any to the stable and canary Services ("shop-stable 90%,
// shop-canary 10%"); "" when none does.
func routeTraffic(route *gatewayv1.HTTPRoute) string {
	stable, canary := route.Name+StableSuffix, route.Name+CanarySuffix
	for _, rule := range route.Spec.Rules {
		var parts []string
		for _, ref := range rule.BackendRefs {
			if n := string(ref.Name); ptr.Deref(ref.Kind, "Service") == "Service" && (n == stable || n == canary) {
				parts = append(parts, fmt.Sprintf("%s %d%%", n, ptr.Deref(ref.Weight, 1)))
			}
		}
		if len(parts) > 0 {
			return strings.Join(parts, ", ")
		}
	}
	return ""
}

// trafficNote is the TrafficShifted event's note when the route's
// traffic changed between before and after, "" when it did not.
func trafficNote(before, after *gatewayv1.HTTPRoute) string {
	was, is := routeTraffic(before), routeTraffic(after)
	switch {
	case was == is:
		return ""
	case is == "":
		return fmt.Sprintf("HTTPRoute %s sends all traffic to Service %s again", after.Name, after.Name)
	}
	return fmt.Sprintf("HTTPRoute %s: %s", after.Name, is)
}

// RouteWeightManager is the field manager of the route's weight record on
// the MyDeployment (weights.RouteWeightAnnotation): apart from the
// Application's apply of the MyDeployment, which leaves it out, so that
// an apply never removes it.
const RouteWeightManager = "application-controller-route-weight"

// routeRecord is the route-weight record the MyDeployment should hold
// once s's writes are made: the canary weight the route as it stands
// carries for the canary revision of o's split, when the MyDeployment
// has weight steps, stands and the route names the canary Service; false
// when no record is due (none of those, or the record already says it:
// Record.Same, its time kept).
func routeRecord(o *observation, s synced, now time.Time) (weights.Record, bool) {
	md, _ := o.children[kindMyDeployment].live.(*appsv1beta1.MyDeployment)
	route, _ := s.outcomes[kindHTTPRoute].live.(*gatewayv1.HTTPRoute)
	if o.split == nil || md == nil || !o.children[kindMyDeployment].stands() || route == nil ||
		!s.outcomes[kindHTTPRoute].present || !WeightSteps(md.Annotations) {
		return weights.Record{}, false
	}
	effective, ok := canaryWeight(route, o.app.Name+CanarySuffix)
	if !ok {
		return weights.Record{}, false
	}
	rec := weights.Record{Revision: o.split.Canary, Effective: effective, At: now}
	if o.split.Stated != nil {
		rec.Stated = *o.split.Stated
	}
	if was, ok := weights.RecordOf(md); ok && was.Same(rec) {
		return weights.Record{}, false
	}
	return rec, true
}

// canaryWeight is the weight of the first backendRef to Service canary in
// route's rules; false when none names it.
func canaryWeight(route *gatewayv1.HTTPRoute, canary string) (int32, bool) {
	for _, rule := range route.Spec.Rules {
		for _, ref := range rule.BackendRefs {
			if string(ref.Name) == canary && ptr.Deref(ref.Kind, "Service") == "Service" {
				return ptr.Deref(ref.Weight, 1), true
			}
		}
	}
	return 0, false
}

// recordRouteWeight writes the route-weight record routeRecord says is
// due on the Application's MyDeployment, after the route's write: a merge
// patch of that one annotation under RouteWeightManager, on the
// MyDeployment observed (its UID a precondition: a MyDeployment deleted
// meanwhile is not written, nor one made again under its name).
func (r *Reconciler) recordRouteWeight(ctx context.Context, o *observation, s synced) error {
	rec, ok := routeRecord(o, s, time.Now())
	if !ok {
		return nil
	}
	md := o.children[kindMyDeployment].live
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"uid": md.GetUID(),
		"annotations": map[string]string{weights.RouteWeightAnnotation: rec.String()}}})
	if err != nil {
		return err
	}
	target := &appsv1beta1.MyDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: md.GetNamespace(), Name: md.GetName()}}
	if err := r.Client.Patch(ctx, target, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(RouteWeightManager)); err != nil {
		return fmt.Errorf("recording the route's weight on MyDeployment %s: %w", md.GetName(), err)
	}
	return nil
}
