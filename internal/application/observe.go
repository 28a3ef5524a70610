package application

import (
	"bytes"
	"context"
	"fmt"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// observation is what one sync reads before it writes anything: the
// Application, each child as it stands, and what the children's writes
// and the status are computed from. plan and act read it and never change
// it.
type observation struct {
	app *appsv1beta1.Application
	// routesServed: the Gateway API's HTTPRoute is served (and watched).
	routesServed bool
	// children are the children as read, by their kind's index in kinds.
	children [numKinds]seen
	// split is the MyDeployment's canary traffic split (TrafficSplit), its
	// weight not set: nil unless the Application asks for a route,
	// HTTPRoute is served and the MyDeployment stands.
	split *Split
	// ready are the ready endpoints of the stable and canary Services, read
	// while a split wants them (weighed).
	ready [2]int32
	// slices are the EndpointSlices of the Application's Service.
	slices []discoveryv1.EndpointSlice
	// ownedReplicas, with autoscaling, are the MyDeployment's replicas
	// while our apply still owns them (see handOff); nil otherwise.
	ownedReplicas *int32
}

// seen is one child as observe read it.
type seen struct {
	// wanted: the Application's spec (and the split) asks for the child.
	wanted bool
	// live is the child, nil when absent or not read.
	live client.Object
	// ours: live is controlled by the Application.
	ours bool
	// unserved: the kind is not served (HTTPRoute without the Gateway
	// API); nothing was read.
	unserved bool
	// err: the child, or what its write is computed from (the revision
	// Services' EndpointSlices, for the route), could not be read.
	err error
}

// stands: the child exists, is ours and is wanted.
func (s seen) stands() bool { return s.live != nil && s.ours && s.wanted }

// written: the Application's status says each child was written for its
// current generation (observedGeneration moves only then). Until it does,
// every child it wants is applied even if it looks as the spec asks: a
// field the spec no longer sets is still in the live child, and only an
// apply removes it.
func (o *observation) written() bool {
	return o.app.Status.ObservedGeneration == o.app.Generation
}

// outcome is the outcome of kind i's child when no write is made to it:
// as it was read (not present when what its write needs could not be).
func (o *observation) outcome(i int) outcome {
	s := o.children[i]
	return outcome{kind: &kinds[i], live: s.live, err: s.err, present: s.stands() && s.err == nil,
		notOwned: s.live != nil && !s.ours && s.wanted, crdAbsent: s.unserved && s.wanted}
}

// observe reads what one sync of app needs, the MyDeployment first: its
// canary decides whether the revision Services are wanted. A failed read
// of a child is kept in its seen (reported as that child's); a failed read
// of the Service's EndpointSlices, or of the MyDeployment's managed
// fields, is returned.
func (r *Reconciler) observe(ctx context.Context, app *appsv1beta1.Application) (*observation, error) {
	o := &observation{app: app, routesServed: r.routesServed.Load()}
	o.children[kindMyDeployment] = r.readChild(ctx, o, kindMyDeployment)
	if md := o.children[kindMyDeployment]; md.stands() && app.Spec.Route != nil && o.routesServed {
		o.split = TrafficSplit(md.live.(*appsv1beta1.MyDeployment))
	}
	for i := kindMyDeployment + 1; i < numKinds; i++ {
		o.children[i] = r.readChild(ctx, o, i)
	}
	if o.mayStand(kindService) {
		slices, err := r.serviceSlices(ctx, app.Namespace, app.Name)
		if err != nil {
			return nil, err
		}
		o.slices = slices
	}
	if o.split != nil && o.mayStand(kindStableService) && o.mayStand(kindCanaryService) {
		for i, name := range []string{app.Name + StableSuffix, app.Name + CanarySuffix} {
			slices, err := r.serviceSlices(ctx, app.Namespace, name)
			if err != nil {
				o.children[kindHTTPRoute].err = err
				break
			}
			o.ready[i] = readyEndpoints(slices)
		}
	}
	if app.Spec.Autoscaling != nil {
		replicas, err := r.ownedReplicas(ctx, app)
		if err != nil {
			return nil, err
		}
		o.ownedReplicas = replicas
	}
	return o, nil
}

// readChild reads kind i's child from the cache and, when the child is
// wanted and the cache has none, from the API server: the cache holds
// Services and Ingresses only with ApplicationNameLabel (one without it is
// not ours, and must be seen to be left alone), and may not have seen a
// child created moments ago (it would be reported created twice).
func (r *Reconciler) readChild(ctx context.Context, o *observation, i int) seen {
	k := &kinds[i]
	s := seen{wanted: k.desired(o.app, o.split) != nil}
	if k.gatewayAPI && !o.routesServed {
		s.unserved = true
		return s
	}
	name := o.app.Name + k.suffix
	key := types.NamespacedName{Namespace: o.app.Namespace, Name: name}
	live := k.newObject()
	err := r.Client.Get(ctx, key, live)
	if apierrors.IsNotFound(err) && s.wanted {
		err = r.APIReader.Get(ctx, key, live)
	}
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		s.err = fmt.Errorf("reading %s %s: %w", k.name, name, err)
	default:
		s.live, s.ours = live, metav1.IsControlledBy(live, o.app)
	}
	return s
}

// serviceSlices lists, from the cache, the EndpointSlices of Service name
// in ns.
func (r *Reconciler) serviceSlices(ctx context.Context, ns, name string) ([]discoveryv1.EndpointSlice, error) {
	slices := &discoveryv1.EndpointSliceList{}
	if err := r.List(ctx, slices, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelServiceName: name}); err != nil {
		return nil, fmt.Errorf("listing the EndpointSlices of Service %s: %w", name, err)
	}
	return slices.Items, nil
}

// ownedReplicas are the replicas of app's MyDeployment while our apply
// still owns them, read from the API server (the cache strips
// managedFields); nil when it does not, or the MyDeployment is absent, not
// ours, or has none.
func (r *Reconciler) ownedReplicas(ctx context.Context, app *appsv1beta1.Application) (*int32, error) {
	md := &appsv1beta1.MyDeployment{}
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: app.Namespace, Name: app.Name}, md)
	if apierrors.IsNotFound(err) || (err == nil && !metav1.IsControlledBy(md, app)) || (err == nil && md.Spec.Replicas == nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading MyDeployment %s: %w", app.Name, err)
	}
	replicas := fieldpath.MakePathOrDie("spec", "replicas")
	owned := false
	for _, mf := range md.ManagedFields {
		if mf.Manager != FieldManager || mf.Operation != metav1.ManagedFieldsOperationApply || mf.FieldsV1 == nil {
			continue
		}
		s := &fieldpath.Set{}
		if err := s.FromJSON(bytes.NewReader(mf.FieldsV1.Raw)); err != nil {
			return nil, fmt.Errorf("reading the fields of manager %s: %w", mf.Manager, err)
		}
		owned = owned || s.Has(replicas)
	}
	if !owned {
		return nil, nil
	}
	return md.Spec.Replicas, nil
}

// weighed is the split with its weight from the ready endpoints
// (Weighed): what the route is planned to carry, and what the status
// reports of it.
func (o *observation) weighed() *Split {
	return Weighed(o.split, o.ready[0], o.ready[1])
}
