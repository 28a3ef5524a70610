package application

import (
	"slices"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// plan is every write one sync makes, in the order act makes them,
// computed from the observation alone (planWrites). Its order is kinds'
// (a child before the children that point at it: the Services before the
// Ingress and the route, the MyDeployment before its autoscaler), with the
// revision Services no longer wanted last. What act may not know before
// it writes (whether a write went through) is a condition of the write
// that needs it, not a read between writes.
type plan struct {
	// handOff, when set, are the MyDeployment's replicas to apply under
	// ReplicasHandoffManager before any other write (handOff); the
	// MyDeployment's apply without them follows in writes.
	handOff *int32
	// writes are the children's applies and deletes.
	writes []write
}

// op is what a write does to its child.
type op int

const (
	// keep: nothing to write, the child already is what the spec asks.
	// Only the first choice of a write with a condition keeps.
	keep op = iota
	// applyOp applies object, the child the spec asks for.
	applyOp
	// deleteOp deletes live, a child of ours the spec no longer asks for.
	deleteOp
)

// write is one child's apply or delete, and the outcomes of earlier
// writes it depends on (see given).
type write struct {
	// kind is the child's index in kinds.
	kind int
	op   op
	// object is what applyOp applies: the spec's child, fitted to the live
	// one (kind.adapt).
	object client.Object
	// live is the child as observed, nil when absent.
	live client.Object
	// ifStanding are kinds whose children must stand (present: there and
	// ours) once their own writes are made; when one does not, otherwise is
	// made in this write's place (nil: nothing). The route names the
	// revision Services only then.
	ifStanding []int
	otherwise  *write
	// ifWritten are kinds whose write must have gone through (no error, no
	// conflict); when one did not, this write is not made. A revision
	// Service goes only after the route was written without it.
	ifWritten []int
}

// planWrites plans the writes that make o's children what the
// Application's spec asks for: each child it wants applied unless it
// already is that (holds, once its status says the generation was
// written: observation.written), each of ours it no longer wants deleted,
// and none to a child someone else controls, that could not be read, or
// whose kind is not served. An observation that already matches the spec
// plans no write.
func planWrites(o *observation) plan {
	p := plan{handOff: o.ownedReplicas}
	var retired []write
	for i := range kinds {
		w, ok := planChild(o, i)
		switch {
		case !ok:
		case kinds[i].backend && w.op == deleteOp:
			w.ifWritten = []int{kindHTTPRoute}
			retired = append(retired, w)
		default:
			p.writes = append(p.writes, w)
		}
	}
	p.writes = append(p.writes, retired...)
	return p
}

// planChild is the write kind i's child needs, false when none.
func planChild(o *observation, i int) (write, bool) {
	if !o.writable(i) {
		return write{}, false
	}
	if i == kindHTTPRoute {
		return planRoute(o)
	}
	// The hand-off of the replicas is completed by the apply without them.
	return childWrite(o, i, o.split, i == kindMyDeployment && o.ownedReplicas != nil)
}

// writable: kind i's child may be written: it was read, its kind is
// served, and it is absent or ours.
func (o *observation) writable(i int) bool {
	s := o.children[i]
	return s.err == nil && !s.unserved && (s.live == nil || s.ours)
}

// childWrite is the write that makes kind i's child the one the spec asks
// for with split, false when none is needed: an apply, unless the child
// holds it already (and force is not set), or the delete of a child of
// ours the spec does not ask for.
func childWrite(o *observation, i int, split *Split, force bool) (write, bool) {
	live := o.children[i].live
	desired := kinds[i].desired(o.app, split)
	if desired == nil {
		return write{kind: i, op: deleteOp, live: live}, live != nil
	}
	if live != nil && kinds[i].adapt != nil {
		kinds[i].adapt(o.app, split, desired, live)
	}
	if live != nil && !force && o.written() && holds(desired, live) {
		return write{kind: i, op: keep, object: desired, live: live}, false
	}
	return write{kind: i, op: applyOp, object: desired, live: live}, true
}

// planRoute plans the route's write. With a split whose revision Services
// have ready endpoints (Weighed), the route names them at their weights;
// while a write of either Service is planned, only if both stand once
// written, and otherwise it points at the one Service: it never names a
// Service that is not there or not ours.
func planRoute(o *observation) (write, bool) {
	one, oneOK := childWrite(o, kindHTTPRoute, nil, false)
	weighed := o.weighed()
	if weighed == nil || !o.mayStand(kindStableService) || !o.mayStand(kindCanaryService) {
		return one, oneOK
	}
	w, ok := childWrite(o, kindHTTPRoute, weighed, false)
	if !o.planned(kindStableService) && !o.planned(kindCanaryService) {
		return w, ok // both stand as they are
	}
	if !ok && !oneOK {
		return write{}, false
	}
	w.ifStanding = []int{kindStableService, kindCanaryService}
	if oneOK {
		w.otherwise = &one
	}
	return w, true
}

// mayStand: kind i's child is wanted and may stand once written (it is
// absent or ours, and was read).
func (o *observation) mayStand(i int) bool {
	return o.children[i].wanted && o.writable(i)
}

// planned: a write of kind i's child is planned.
func (o *observation) planned(i int) bool {
	_, ok := childWrite(o, i, o.split, false)
	return ok
}

// given is the write to make once the writes before it have their
// outcomes (out), false when none: w, or its otherwise when a child in
// ifStanding does not stand; none when a write in ifWritten did not go
// through.
func (w write) given(out *[numKinds]outcome) (write, bool) {
	for _, k := range w.ifWritten {
		if out[k].err != nil || out[k].stale {
			return write{}, false
		}
	}
	for _, k := range w.ifStanding {
		if !out[k].present {
			if w.otherwise == nil {
				return write{}, false
			}
			return *w.otherwise, w.otherwise.op != keep
		}
	}
	return w, w.op != keep
}

// String names the write for logs and tests: "apply Service shop-stable",
// with its conditions.
func (w write) String() string {
	obj := w.object
	if obj == nil {
		obj = w.live
	}
	app := obj.GetLabels()[appsv1beta1.ApplicationNameLabel]
	s := [...]string{keep: "keep", applyOp: "apply", deleteOp: "delete"}[w.op] + " " + kinds[w.kind].name + " " + obj.GetName()
	if route, ok := obj.(*gatewayv1.HTTPRoute); ok && w.op == applyOp {
		if traffic := routeTraffic(route); traffic != "" {
			s += " (" + traffic + ")"
		} else {
			s += " (to Service " + obj.GetName() + ")"
		}
	}
	if len(w.ifStanding) > 0 {
		s += " if " + kindNames(w.ifStanding, app) + " stand, else "
		if w.otherwise == nil {
			s += "nothing"
		} else {
			s += w.otherwise.String()
		}
	}
	if len(w.ifWritten) > 0 {
		s += " once " + kindNames(w.ifWritten, app) + " went through"
	}
	return s
}

// kindNames names the children of kinds ks of Application app ("Service
// shop-stable and Service shop-canary").
func kindNames(ks []int, app string) string {
	var names []string
	for _, k := range ks {
		names = append(names, kinds[k].name+" "+app+kinds[k].suffix)
	}
	return strings.Join(names, " and ")
}

// summary names the plan's writes, for the log.
func (p plan) summary() []string {
	var s []string
	if p.handOff != nil {
		s = append(s, "hand the MyDeployment's replicas to "+ReplicasHandoffManager)
	}
	for _, w := range p.writes {
		s = append(s, w.String())
	}
	return s
}

// holds reports whether live already has what an apply of desired sets:
// desired's labels and annotations among live's, each of its owner
// references among live's, and its spec within live's (within). What
// desired leaves out is not looked at: the API server's defaults, other
// managers' fields, and a field an earlier apply set that desired no
// longer does (observation.written covers that one).
func holds(desired, live client.Object) bool {
	d, errD := runtime.DefaultUnstructuredConverter.ToUnstructured(desired)
	l, errL := runtime.DefaultUnstructuredConverter.ToUnstructured(live)
	if errD != nil || errL != nil {
		return false
	}
	field := func(obj map[string]any, f string) any {
		v, _, _ := unstructured.NestedFieldNoCopy(obj, "metadata", f)
		return v
	}
	for _, f := range []string{"labels", "annotations"} {
		if v := field(d, f); v != nil && !within(v, field(l, f)) {
			return false
		}
	}
	refs, _ := field(l, "ownerReferences").([]any)
	wanted, _ := field(d, "ownerReferences").([]any)
	for _, ref := range wanted {
		if !slices.ContainsFunc(refs, func(r any) bool { return within(ref, r) }) {
			return false
		}
	}
	return within(d["spec"], l["spec"])
}

// within reports whether d, a value desired sets, is in l, the live value
// at its place: a map's keys each within l's, a list as long as l's with
// each item within l's item at its index (an item another manager added
// is one to remove), a null where l has nothing, any other value equal.
func within(d, l any) bool {
	switch d := d.(type) {
	case nil:
		return l == nil
	case map[string]any:
		lm, _ := l.(map[string]any)
		for k, v := range d {
			if !within(v, lm[k]) {
				return false
			}
		}
		return true
	case []any:
		ll, _ := l.([]any)
		if len(ll) != len(d) {
			return false
		}
		for i := range d {
			if !within(d[i], ll[i]) {
				return false
			}
		}
		return true
	default:
		return apiequality.Semantic.DeepEqual(d, l)
	}
}
