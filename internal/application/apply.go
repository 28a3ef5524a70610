package application

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// FieldManager is the server-side apply field manager of every child: the
// fields it sets are the Application's, any other field is left to whoever
// set it.
const FieldManager = "application-controller"

// outcome is what one sync found of a child and did to it.
type outcome struct {
	kind *childKind
	// present: the child exists and is ours; live holds it.
	present bool
	live    client.Object
	// notOwned: an object of that name exists and is not ours.
	notOwned bool
	// crdAbsent: the spec asks for the child and its kind is not served
	// (the Gateway API CRDs, for an HTTPRoute).
	crdAbsent bool
	// err: the API server refused a read or a write, or could not make it.
	err error
	// unwritten: err is no refusal but a write the API server could not
	// make (a webhook it could not call, a timeout, throttling: unwritable)
	// to a child that exists. The child stands as it was read (present,
	// live), so the status goes on reporting it and Ready does not turn on
	// the write; the write is retried with backoff, and observedGeneration
	// waits for it. Closes the race of an operator upgrade under OLM: its
	// new webhook certificate reaches the API server before the new pods
	// serve it, and every Application went Ready=False (ChildApplyFailed)
	// and back while nothing of it changed.
	unwritten bool
	// stale: a write guarded by the resourceVersion read met a newer
	// child (our cache behind it, or someone's edit); synced again.
	stale bool
}

// act makes p's writes in order and returns what the sync found and did:
// a written child's outcome is its write's, any other child's as o
// observed it. Each write is made as its conditions on the outcomes
// before it say (write.given). A failed hand-off of the replicas is
// returned before any other write.
func (r *Reconciler) act(ctx context.Context, o *observation, p plan) (synced, error) {
	s := synced{endpointSlices: o.slices, weight: o.weighed()}
	for i := range kinds {
		s.outcomes[i] = o.outcome(i)
	}
	if p.handOff != nil {
		if err := r.handOff(ctx, o.app, *p.handOff); err != nil {
			return s, err
		}
	}
	for _, w := range p.writes {
		if w, ok := w.given(&s.outcomes); ok {
			s.outcomes[w.kind] = r.write(ctx, o.app, w)
		}
	}
	return s, nil
}

// write makes w (an apply or a delete) and returns its child's outcome.
// It records one event per write or refusal.
func (r *Reconciler) write(ctx context.Context, app *appsv1beta1.Application, w write) outcome {
	if w.op == deleteOp {
		return r.deleteChild(ctx, app, w)
	}
	return r.applyChild(ctx, app, w)
}

// deleteChild deletes w's live child, that exact object (its UID).
func (r *Reconciler) deleteChild(ctx context.Context, app *appsv1beta1.Application, w write) outcome {
	k := &kinds[w.kind]
	out := outcome{kind: k, live: w.live}
	name := w.live.GetName()
	err := r.Client.Delete(ctx, w.live.DeepCopyObject().(client.Object), client.Preconditions{UID: ptr.To(w.live.GetUID())})
	if err != nil && !apierrors.IsNotFound(err) {
		out.err = fmt.Errorf("deleting %s %s: %w", k.name, name, err)
		r.event(app, w.live, corev1.EventTypeWarning, appsv1beta1.EventChildApplyFailed, "Delete", out.err.Error())
		return out
	}
	r.event(app, w.live, corev1.EventTypeNormal, appsv1beta1.EventChildDeleted, "Delete",
		fmt.Sprintf("Deleted %s %s: no longer in the spec", k.name, name))
	return out
}

// applyChild applies w's object. A write guarded by the live child's
// resourceVersion that meets a newer child is stale; an apply refused as
// invalid is tried again once the items another manager added to our
// lists are removed (repairLive); after an apply those items are removed
// (removeForeignItems). A write the API server could not make leaves an
// existing child standing as it was read (outcome.unwritten).
func (r *Reconciler) applyChild(ctx context.Context, app *appsv1beta1.Application, w write) outcome {
	k := &kinds[w.kind]
	out := outcome{kind: k, live: w.live}
	name := w.object.GetName()
	u, err := r.apply(ctx, w.object)
	if apierrors.IsConflict(err) && w.object.GetResourceVersion() != "" {
		out.stale, out.present = true, true
		return out
	}
	if apierrors.IsInvalid(err) && w.live != nil {
		// Perhaps refused for an item another manager added (their port 81
		// named http beside our 80): remove those, then apply again.
		if removed, rerr := r.repairLive(ctx, w.object); rerr != nil {
			err = fmt.Errorf("%w (and %v)", err, rerr)
		} else if removed {
			u, err = r.apply(ctx, w.object)
		}
	}
	if err == nil {
		_, err = r.removeForeignItems(ctx, u, w.object)
	}
	if err != nil {
		out.err = fmt.Errorf("applying %s %s: %w", k.name, name, err)
		r.event(app, nil, corev1.EventTypeWarning, appsv1beta1.EventChildApplyFailed, "Apply", out.err.Error())
		out.present = w.live != nil && unwritable(err)
		out.unwritten = out.present
		return out
	}
	applied := k.newObject()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, applied); err != nil {
		out.err = fmt.Errorf("reading the applied %s %s: %w", k.name, name, err)
		return out
	}
	out.present, out.live = true, applied
	r.recordApplied(app, k, w.live, applied)
	return out
}

// recordApplied records the event of an apply that created the child
// (before is nil) or changed it: Created, or Updated unless the kind names
// the change itself (kind.updated).
func (r *Reconciler) recordApplied(app *appsv1beta1.Application, k *childKind, before, after client.Object) {
	name := after.GetName()
	switch {
	case before == nil:
		r.event(app, after, corev1.EventTypeNormal, appsv1beta1.EventChildCreated, "Create",
			fmt.Sprintf("Created %s %s", k.name, name))
	case changed(before, after):
		reason, note := appsv1beta1.EventChildUpdated, fmt.Sprintf("Updated %s %s", k.name, name)
		if k.updated != nil {
			if rs, n := k.updated(before, after); rs != "" {
				reason, note = rs, n
			}
		}
		r.event(app, after, corev1.EventTypeNormal, reason, "Update", note)
	}
}

// apply applies desired with the Application's field manager, taking
// fields another manager set, and returns the object as applied.
func (r *Reconciler) apply(ctx context.Context, desired client.Object) (*unstructured.Unstructured, error) {
	u, err := applyObject(r.Scheme(), desired)
	if err != nil {
		return nil, err
	}
	return u, r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(FieldManager), client.ForceOwnership)
}

// applyObject is obj as a server-side apply body: its apiVersion and kind,
// metadata (name, namespace, labels, owner references) and spec only, so
// nothing left at its zero value is claimed.
func applyObject(scheme *runtime.Scheme, obj client.Object) (*unstructured.Unstructured, error) {
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		return nil, err
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("converting %s: %w", gvk.Kind, err)
	}
	delete(m, "status")
	unstructured.RemoveNestedField(m, "metadata", "creationTimestamp")
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

// changed reports whether what the Application writes (spec, labels,
// annotations, owner references) differs between two versions of a child;
// status and bookkeeping changes do not count.
func changed(before, after client.Object) bool {
	b, errB := runtime.DefaultUnstructuredConverter.ToUnstructured(before)
	a, errA := runtime.DefaultUnstructuredConverter.ToUnstructured(after)
	if errB != nil || errA != nil {
		return true
	}
	if !apiequality.Semantic.DeepEqual(b["spec"], a["spec"]) {
		return true
	}
	for _, f := range []string{"labels", "annotations", "ownerReferences"} {
		bv, _, _ := unstructured.NestedFieldNoCopy(b, "metadata", f)
		av, _, _ := unstructured.NestedFieldNoCopy(a, "metadata", f)
		if !apiequality.Semantic.DeepEqual(bv, av) {
			return true
		}
	}
	return false
}

// ReplicasHandoffManager holds a MyDeployment's replicas, at the value they
// had, when its Application gains autoscaling: our apply then leaves
// replicas out, and, owned by nobody, they would fall back to the
// MyDeployment's default (1) until the HPA's next sync. The HPA's first
// scale takes them from this manager.
const ReplicasHandoffManager = "application-controller-replicas-handoff"

// handOff applies replicas, the MyDeployment's current value, under
// ReplicasHandoffManager (observe found our apply still owns them while
// the Application has autoscaling), before the apply without them.
func (r *Reconciler) handOff(ctx context.Context, app *appsv1beta1.Application, replicas int32) error {
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": app.Name, "namespace": app.Namespace},
		"spec":     map[string]any{"replicas": int64(replicas)},
	}}
	u.SetGroupVersionKind(appsv1beta1.GroupVersion.WithKind("MyDeployment"))
	if err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(ReplicasHandoffManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("handing MyDeployment %s's replicas to its HPA: %w", app.Name, err)
	}
	return nil
}

// unwritable reports whether err is a write the API server could not make,
// not one it refused: a webhook it could not call (InternalError), a
// timeout, throttling, a server unavailable, or no answer at all. Refusals
// (invalid, forbidden by a policy or a quota, a conflict, a missing
// object) are what the spec or the cluster must change for.
func unwritable(err error) bool {
	switch {
	case apierrors.IsInternalError(err), apierrors.IsServiceUnavailable(err), apierrors.IsTimeout(err),
		apierrors.IsServerTimeout(err), apierrors.IsTooManyRequests(err), apierrors.IsUnexpectedServerError(err):
		return true
	}
	var status apierrors.APIStatus
	return !errors.As(err, &status) // no answer: the connection failed
}
