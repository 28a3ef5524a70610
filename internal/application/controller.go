// Package application is the Application controller: it keeps an
// Application's MyDeployment, Services, Ingress, HTTPRoute,
// HorizontalPodAutoscaler and PodDisruptionBudget (named after it, owned
// by it) as its spec says, with server-side apply under one field manager,
// and reports their state in the Application's status.
//
// A sync observes once (observe.go), plans its children's writes as a
// value (plan.go), makes them (apply.go, with drift.go for what other
// managers added) and writes the status computed from what it observed
// and did (status.go). The children's kinds are one table (kinds.go);
// their specs are children.go's, the canary traffic traffic.go's.
package application

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/shard"
)

// SlowRetry is how often an Application looks again at a child that waits
// on something it does not watch: a name taken by an object it does not
// control (not in its cache, as it lacks our label), or a child the API
// server refused as invalid (an admission policy may change).
const SlowRetry = time.Minute

// requeueConflict is when an Application whose status write met a newer
// object is synced again (its watch event may have come already).
const requeueConflict = time.Second

// Reconciler keeps Applications' children and status.
type Reconciler struct {
	client.Client
	// APIReader reads a child the label-filtered cache does not hold, to
	// tell "absent" from "someone else's".
	APIReader client.Reader
	Recorder  events.EventRecorder
	// RoutePoll is how often, while the Gateway API's HTTPRoute is not
	// served, the leader asks discovery whether it is now (see
	// SetupWithManager).
	RoutePoll time.Duration

	// Shards admits the syncs of the namespaces this replica holds (issue
	// 56, shards.go); nil without shards: every namespace.
	Shards *shard.Gate
	// shardQueue is the controller's work queue once it started, for the
	// Applications of a slot taken.
	shardQueue atomic.Pointer[workqueue.TypedRateLimitingInterface[reconcile.Request]]

	// routesServed: HTTPRoute is served and watched; until then an
	// Application's route is an outcome (RouteCRDAbsent), not a request.
	routesServed atomic.Bool
	// wake carries the Applications to sync again once HTTPRoute is served.
	wake chan event.GenericEvent
}

// +kubebuilder:rbac:groups=apps.mydeployment.io,resources=applications,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps.mydeployment.io,resources=applications/status,verbs=patch
// +kubebuilder:rbac:groups=apps.mydeployment.io,resources=applications/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps.mydeployment.io,resources=mydeployments,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=httproutes,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile syncs one Application in three steps and one status write:
// observe reads it and its children once, planWrites plans the children's
// applies and deletes as a value, act makes them (and, with weight steps,
// records on the MyDeployment what the route now carries:
// recordRouteWeight), and the status computed from what was observed and
// done is written once. A child whose name is
// taken by someone else's object, or that the API server refuses as
// invalid, is a condition and an event, looked at again after SlowRetry
// (and on any change of the Application); any other error (quota,
// conflict, a server unavailable) is returned and retried with backoff.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if r.Shards != nil {
		leave, ok := r.Shards.Enter(req.Namespace)
		if !ok {
			return ctrl.Result{}, nil // another replica holds its slot
		}
		defer leave()
	}
	app := &appsv1beta1.Application{}
	if err := r.Get(ctx, req.NamespacedName, app); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if app.DeletionTimestamp != nil {
		return ctrl.Result{}, nil // the garbage collector removes the children
	}
	o, err := r.observe(ctx, app)
	if err != nil {
		return ctrl.Result{}, err
	}
	p := planWrites(o)
	s, err := r.act(ctx, o, p)
	if err != nil {
		return ctrl.Result{}, err
	}
	logf.FromContext(ctx).V(1).Info("children synced", "writes", p.summary(), "outcomes", s.summary())
	recorded := r.recordRouteWeight(ctx, o, s)
	result, err := r.commit(ctx, app, s)
	if err == nil && recorded != nil {
		return ctrl.Result{}, recorded // retried with backoff, the status written
	}
	return result, err
}

// commit writes app's status computed from s, if it changed, and returns
// Reconcile's result. The write is guarded by the resourceVersion read: a
// status computed from an older copy (a cache behind our own last write)
// would undo that write, so it is refused and the sync comes again.
func (r *Reconciler) commit(ctx context.Context, app *appsv1beta1.Application, s synced) (ctrl.Result, error) {
	next := app.DeepCopy()
	next.Status = computeStatus(app, s)
	if !apiequality.Semantic.DeepEqual(app.Status, next.Status) {
		err := r.Status().Patch(ctx, next, client.MergeFromWithOptions(app, client.MergeFromWithOptimisticLock{}))
		if apierrors.IsConflict(err) {
			logf.FromContext(ctx).V(1).Info("status computed from an older Application; syncing again")
			return ctrl.Result{RequeueAfter: requeueConflict}, nil
		}
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("writing status: %w", err)
		}
		r.recordRefusals(app, next)
	}
	return requeue(s.outcomes[:])
}

// requeue is Reconcile's result from the children's outcomes: their write
// errors aggregated (retried with backoff), else a look again after
// SlowRetry when a child waits on something not watched (a name taken by
// an object we do not control, a child refused as invalid), or after
// requeueConflict when a guarded write met a newer child.
func requeue(outcomes []outcome) (ctrl.Result, error) {
	var result ctrl.Result
	var errs []error
	for _, o := range outcomes {
		switch {
		case o.stale:
			result.RequeueAfter = soonest(result.RequeueAfter, requeueConflict)
		case o.notOwned, apierrors.IsInvalid(o.err), apierrors.IsBadRequest(o.err):
			result.RequeueAfter = soonest(result.RequeueAfter, SlowRetry)
		case o.err != nil:
			errs = append(errs, o.err)
		}
	}
	if len(errs) > 0 {
		return ctrl.Result{}, kerrors.NewAggregate(errs)
	}
	return result, nil
}

// soonest is the shorter of two requeue delays, 0 meaning none.
func soonest(a, b time.Duration) time.Duration {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

// recordRefusals emits ChildNotOwned once per change of the Ready
// condition's message, not once per retry.
func (r *Reconciler) recordRefusals(before, after *appsv1beta1.Application) {
	now := meta.FindStatusCondition(after.Status.Conditions, appsv1beta1.ApplicationReady)
	if now == nil || now.Reason != appsv1beta1.ReasonChildNotOwned {
		return
	}
	if was := meta.FindStatusCondition(before.Status.Conditions, appsv1beta1.ApplicationReady); was != nil &&
		was.Reason == now.Reason && was.Message == now.Message {
		return
	}
	r.event(after, nil, corev1.EventTypeWarning, appsv1beta1.EventChildNotOwned, "Apply", now.Message)
}

// event records an event about app (and related, if any) with note as
// its text.
func (r *Reconciler) event(app *appsv1beta1.Application, related runtime.Object, eventType, reason, action, note string) {
	r.Recorder.Eventf(app, related, eventType, reason, action, "%s", note)
}
