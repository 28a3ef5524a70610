package application

import (
	"context"
	"fmt"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/managercache"
	"github.com/mydeployment-io/mydeployment-operator/internal/shard"
)

// Name is the controller's name: its event source.
const Name = "application-controller"

// CRDPoll is how often a manager started without the Application CRD asks
// discovery whether it is installed now (see SetupWhenServed): one small
// request, made by the leader only.
const CRDPoll = 10 * time.Second

// Cache is what the Application controller needs of the manager's cache:
// Applications and MyDeployments whole, and Services, Ingresses,
// EndpointSlices, HorizontalPodAutoscalers and PodDisruptionBudgets only
// when they carry ApplicationNameLabel (ours, and our Services' slices,
// which inherit the Service's labels), so the operator does not hold every
// Service and EndpointSlice of the cluster. HTTPRoutes are not listed:
// their kind may not be served when the manager starts, and the cache
// refuses a setting for a kind it cannot map; once served, it holds the
// HTTPRoutes of the watched namespaces whole.
func Cache() managercache.Needs {
	req, err := labels.NewRequirement(appsv1beta1.ApplicationNameLabel, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant key: cannot fail
	}
	ours := labels.NewSelector().Add(*req)
	return managercache.Needs{
		Controller: Name,
		Objects: map[client.Object]cache.ByObject{
			&appsv1beta1.Application{}:               {},
			&appsv1beta1.MyDeployment{}:              {},
			&corev1.Service{}:                        {Label: ours},
			&networkingv1.Ingress{}:                  {Label: ours},
			&discoveryv1.EndpointSlice{}:             {Label: ours},
			&autoscalingv2.HorizontalPodAutoscaler{}: {Label: ours},
			&policyv1.PodDisruptionBudget{}:          {Label: ours},
		},
	}
}

// Options are the Application controller's settings that cmd/main.go
// passes.
type Options struct {
	// Shards is this replica's membership of active-active shards: the
	// controller syncs only the namespaces of the slots it holds, on every
	// replica. nil: the leader syncs every namespace.
	Shards *shard.Membership
}

// Setup builds the reconciler and registers it with mgr, whose cache must
// have been composed with Cache. It fails if the controller cannot be
// registered (the Application kind not served among them).
func Setup(mgr ctrl.Manager, opts Options) (*Reconciler, error) {
	r := &Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder(Name),
		RoutePoll: CRDPoll}
	if opts.Shards != nil {
		r.Shards = opts.Shards.Gate()
		opts.Shards.Tell(shardHolder{r})
	}
	return r, r.SetupWithManager(mgr)
}

// SetupWhenServed registers the controller with mgr now if the API server
// serves the Application kind; otherwise it adds a runnable that asks
// discovery every poll and registers the controller, with a log line, once
// the kind is served (its CRD installed after the manager started). So a
// manager run with only the MyDeployment CRD serves MyDeployments alone
// until then, rather than failing to start. It returns Setup's error, or
// the lookup's when discovery fails at start; the runnable logs a failed
// lookup and tries again at the next poll, and ends the manager if Setup
// then fails.
func SetupWhenServed(mgr ctrl.Manager, poll time.Duration, opts Options) error {
	served, err := Served(mgr.GetRESTMapper())
	if err != nil {
		return err
	}
	if served {
		_, err := Setup(mgr, opts)
		return err
	}
	log := mgr.GetLogger().WithName(Name)
	log.Info("the Application kind is not served: the Application controller starts when its CRD is installed",
		"poll", poll)
	return whenServed(mgr, poll, Served, "Application", opts.Shards != nil, func(context.Context) error {
		log.Info("the Application CRD is installed: starting the Application controller")
		if _, err := Setup(mgr, opts); err != nil {
			return fmt.Errorf("starting the Application controller: %w", err)
		}
		return nil
	})
}

// whenServed adds a runnable to mgr that waits until kind is served
// (awaitServed) and then runs then and ends (its error ends the manager).
// It runs on the leader only, or on every replica when every replica
// reconciles (shards).
func whenServed(mgr ctrl.Manager, poll time.Duration, served func(meta.RESTMapper) (bool, error), kind string,
	everyReplica bool, then func(context.Context) error) error {
	log := mgr.GetLogger().WithName(Name)
	return mgr.Add(replicaRunnable{everyReplica: everyReplica, RunnableFunc: func(ctx context.Context) error {
		ask := func() (bool, error) { return served(mgr.GetRESTMapper()) }
		if !awaitServed(ctx, poll, ask, func(err error) { log.Error(err, "looking for the "+kind+" kind") }) {
			return nil
		}
		return then(ctx)
	}})
}

// replicaRunnable is a runnable that needs leader election unless every
// replica reconciles.
type replicaRunnable struct {
	manager.RunnableFunc
	everyReplica bool
}

func (r replicaRunnable) NeedLeaderElection() bool { return !r.everyReplica }

// awaitServed asks served every poll until it says true (then true) or
// ctx ends (false). A failed lookup is no answer: failed is told, and it
// asks again after a short backoff (from 100 ms, doubling, at most the
// poll), not at the next poll.
func awaitServed(ctx context.Context, poll time.Duration, served func() (bool, error), failed func(error)) bool {
	ticker := time.NewTicker(poll)
	defer ticker.Stop()
	retry := func() wait.Backoff {
		return wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Jitter: 0.2, Steps: 100, Cap: poll}
	}
	backoff, next := retry(), ticker.C
	for {
		select {
		case <-ctx.Done():
			return false
		case <-next:
		}
		ok, err := served()
		switch {
		case err != nil:
			failed(err)
			next = time.After(backoff.Step())
		case ok:
			return true
		default:
			backoff, next = retry(), ticker.C
		}
	}
}

// RoutesServed reports whether the API server serves the Gateway API's
// HTTPRoute (gateway.networking.k8s.io/v1), as Served does for the
// Application kind.
func RoutesServed(mapper meta.RESTMapper) (bool, error) {
	return served(mapper, gatewayv1.SchemeGroupVersion.WithKind("HTTPRoute"))
}

// Served reports whether the API server serves the Application kind, as
// mapper (the manager's, which asks discovery again on a miss) finds it:
// false when the CRD is not installed (a cluster given only the
// MyDeployment CRD, or the manager run under a release that had only that
// one). Any other lookup error is returned.
func Served(mapper meta.RESTMapper) (bool, error) {
	return served(mapper, appsv1beta1.GroupVersion.WithKind("Application"))
}

// served reports whether mapper finds gvk served (see Served).
func served(mapper meta.RESTMapper, gvk schema.GroupVersionKind) (bool, error) {
	_, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	switch {
	case err == nil:
		return true, nil
	case meta.IsNoMatchError(err):
		return false, nil
	default:
		return false, fmt.Errorf("looking up %s: %w", gvk, err)
	}
}

// SetupWithManager registers the controller: Applications, the children
// they control, and the EndpointSlices of their Services (labelled with the
// Application's name, copied from the Service by the EndpointSlice
// controller). HTTPRoutes are watched from the start if the Gateway API
// CRDs are installed; otherwise a runnable asks discovery every RoutePoll
// (the leader only; one small request) and, once HTTPRoute is served,
// watches it and syncs again every Application that asks for a route. It
// fails if the lookup or the registration fails.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	routes, err := RoutesServed(mgr.GetRESTMapper())
	if err != nil {
		return err
	}
	r.wake = make(chan event.GenericEvent)
	ownedRoutes := func() source.Source {
		return source.Kind(mgr.GetCache(), &gatewayv1.HTTPRoute{}, handler.TypedEnqueueRequestForOwner[*gatewayv1.HTTPRoute](
			mgr.GetScheme(), mgr.GetRESTMapper(), &appsv1beta1.Application{}, handler.OnlyControllerOwner()))
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&appsv1beta1.Application{}).
		Owns(&appsv1beta1.MyDeployment{}).
		Owns(&corev1.Service{}).
		Owns(&networkingv1.Ingress{}).
		Owns(&autoscalingv2.HorizontalPodAutoscaler{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Watches(&discoveryv1.EndpointSlice{}, handler.EnqueueRequestsFromMapFunc(
			func(_ context.Context, o client.Object) []reconcile.Request {
				name, ok := o.GetLabels()[appsv1beta1.ApplicationNameLabel]
				if !ok {
					return nil
				}
				return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: name}}}
			})).
		WatchesRawSource(source.Channel(r.wake, &handler.EnqueueRequestForObject{}))
	if routes {
		b = b.WatchesRawSource(ownedRoutes())
		r.routesServed.Store(true)
	}
	if r.Shards != nil {
		// Every replica syncs the slots it holds; a slot taken brings its
		// Applications through the queue (shardHolder.Taken).
		b = b.WatchesRawSource(source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
			r.shardQueue.Store(&q)
			return nil
		})).WithOptions(controller.Options{NeedLeaderElection: ptr.To(false)})
	}
	c, err := b.Named("application").Build(r)
	if err != nil || routes {
		return err
	}
	log := mgr.GetLogger().WithName(Name)
	log.Info("the Gateway API's HTTPRoute is not served: Applications' routes are made when its CRDs are installed", "poll", r.RoutePoll)
	return whenServed(mgr, r.RoutePoll, RoutesServed, "HTTPRoute", r.Shards != nil, func(ctx context.Context) error {
		log.Info("the Gateway API's HTTPRoute is served: watching routes")
		if err := c.Watch(ownedRoutes()); err != nil {
			return fmt.Errorf("watching HTTPRoutes: %w", err)
		}
		r.routesServed.Store(true)
		return r.wakeRoutes(ctx)
	})
}

// wakeRoutes syncs again every Application that asks for a route.
func (r *Reconciler) wakeRoutes(ctx context.Context) error {
	apps := &appsv1beta1.ApplicationList{}
	if err := r.List(ctx, apps); err != nil {
		return fmt.Errorf("listing Applications: %w", err)
	}
	for i := range apps.Items {
		if apps.Items[i].Spec.Route == nil {
			continue
		}
		select {
		case r.wake <- event.GenericEvent{Object: &apps.Items[i]}:
		case <-ctx.Done():
			return nil
		}
	}
	return nil
}
