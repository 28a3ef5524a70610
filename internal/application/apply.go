package application

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// FieldManager is the server-side apply field manager of every child: the
// fields it sets are the Application's, any other field is left to whoever
// set it.
const FieldManager = "application-controller"

// child is one object the Application may own.
type child struct {
	kind *childKind
	// live is an empty object of the child's type, filled by sync with the
	// object as the API server last returned it.
	live client.Object
	// desired is the object to apply (typed, metadata and spec only), nil
	// when the spec does not want this child.
	desired client.Object
	// split is the canary's traffic split desired was made for.
	split *Split
}

// outcome is what syncing one child found and did.
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

// syncChild makes the child match the spec: applied when wanted, deleted
// when not (only if ours), never touched when someone else controls it. It
// records one event per write or refusal.
func (r *Reconciler) syncChild(ctx context.Context, app *appsv1beta1.Application, c child) outcome {
	out := outcome{kind: c.kind, live: c.live}
	name := app.Name + c.kind.suffix
	key := types.NamespacedName{Namespace: app.Namespace, Name: name}
	err := r.Client.Get(ctx, key, c.live)
	if apierrors.IsNotFound(err) && c.desired != nil {
		// Read a miss again from the API server: the cache holds Services and
		// Ingresses only with ApplicationNameLabel (one without it is not
		// ours, and must be seen to be left alone), and may not have seen a
		// child created moments ago (it would be reported created twice).
		err = r.APIReader.Get(ctx, key, c.live)
	}
	exists := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		out.err = fmt.Errorf("reading %s %s: %w", c.kind.name, name, err)
		return out
	}
	if exists && !metav1.IsControlledBy(c.live, app) {
		out.notOwned = c.desired != nil
		return out
	}
	if c.desired == nil {
		if !exists {
			return out
		}
		err := r.Client.Delete(ctx, c.live, client.Preconditions{UID: ptr.To(c.live.GetUID())})
		if err != nil && !apierrors.IsNotFound(err) {
			out.err = fmt.Errorf("deleting %s %s: %w", c.kind.name, name, err)
			r.event(app, c.live, corev1.EventTypeWarning, appsv1beta1.EventChildApplyFailed, "Delete", out.err.Error())
			return out
		}
		r.event(app, c.live, corev1.EventTypeNormal, appsv1beta1.EventChildDeleted, "Delete",
			fmt.Sprintf("Deleted %s %s: no longer in the spec", c.kind.name, name))
		return out
	}

	if exists && c.kind.adapt != nil {
		c.kind.adapt(app, c.split, c.desired, c.live)
	}
	u, err := r.apply(ctx, c.desired)
	if apierrors.IsConflict(err) && c.desired.GetResourceVersion() != "" {
		out.stale, out.present = true, true
		return out
	}
	if apierrors.IsInvalid(err) && exists {
		// Perhaps refused for an item another manager added (their port 81
		// named http beside our 80): remove those, then apply again.
		if removed, rerr := r.repairLive(ctx, c.desired); rerr != nil {
			err = fmt.Errorf("%w (and %v)", err, rerr)
		} else if removed {
			u, err = r.apply(ctx, c.desired)
		}
	}
	if err == nil {
		_, err = r.removeForeignItems(ctx, u, c.desired)
	}
	if err != nil {
		out.err = fmt.Errorf("applying %s %s: %w", c.kind.name, name, err)
		r.event(app, nil, corev1.EventTypeWarning, appsv1beta1.EventChildApplyFailed, "Apply", out.err.Error())
		out.present = exists && unwritable(err)
		out.unwritten = out.present
		return out
	}
	before := c.live.DeepCopyObject().(client.Object)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, c.live); err != nil {
		out.err = fmt.Errorf("reading the applied %s %s: %w", c.kind.name, name, err)
		return out
	}
	out.present = true
	r.recordApplied(app, c, exists, before)
	return out
}

// recordApplied records the event of an apply of c that created the child
// (it did not exist) or changed it (from before): Created, or Updated
// unless the kind names the change itself (kind.updated).
func (r *Reconciler) recordApplied(app *appsv1beta1.Application, c child, existed bool, before client.Object) {
	name := c.live.GetName()
	switch {
	case !existed:
		r.event(app, c.live, corev1.EventTypeNormal, appsv1beta1.EventChildCreated, "Create",
			fmt.Sprintf("Created %s %s", c.kind.name, name))
	case changed(before, c.live):
		reason, note := appsv1beta1.EventChildUpdated, fmt.Sprintf("Updated %s %s", c.kind.name, name)
		if c.kind.updated != nil {
			if rs, n := c.kind.updated(before, c.live); rs != "" {
				reason, note = rs, n
			}
		}
		r.event(app, c.live, corev1.EventTypeNormal, reason, "Update", note)
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

// handOffReplicas, for an Application with autoscaling whose MyDeployment's
// replicas our apply still owns, applies them at their current value under
// ReplicasHandoffManager, before the apply without them. It reads the
// MyDeployment from the API server (the cache strips managedFields); an
// absent MyDeployment, or one not ours, needs nothing.
func (r *Reconciler) handOffReplicas(ctx context.Context, app *appsv1beta1.Application) error {
	md := &appsv1beta1.MyDeployment{}
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: app.Namespace, Name: app.Name}, md)
	if apierrors.IsNotFound(err) || (err == nil && !metav1.IsControlledBy(md, app)) || (err == nil && md.Spec.Replicas == nil) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading MyDeployment %s: %w", app.Name, err)
	}
	replicas := fieldpath.MakePathOrDie("spec", "replicas")
	owned := false
	for _, mf := range md.ManagedFields {
		if mf.Manager != FieldManager || mf.Operation != metav1.ManagedFieldsOperationApply || mf.FieldsV1 == nil {
			continue
		}
		s := &fieldpath.Set{}
		if err := s.FromJSON(bytes.NewReader(mf.FieldsV1.Raw)); err != nil {
			return fmt.Errorf("reading the fields of manager %s: %w", mf.Manager, err)
		}
		owned = owned || s.Has(replicas)
	}
	if !owned {
		return nil
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": app.Name, "namespace": app.Namespace},
		"spec":     map[string]any{"replicas": int64(*md.Spec.Replicas)},
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
