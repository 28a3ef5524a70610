package controller

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/freshness"
	"github.com/mydeployment-io/mydeployment-operator/internal/managercache"
	"github.com/mydeployment-io/mydeployment-operator/internal/metrics"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/modules"
	"github.com/mydeployment-io/mydeployment-operator/internal/ownership"
	"github.com/mydeployment-io/mydeployment-operator/internal/podcontrol"
	"github.com/mydeployment-io/mydeployment-operator/internal/podwatch"
	"github.com/mydeployment-io/mydeployment-operator/internal/revision"
	"github.com/mydeployment-io/mydeployment-operator/internal/shard"
)

// MyDeploymentControllerName is the MyDeployment controller's name: its
// event source and log name.
const MyDeploymentControllerName = "mydeployment-controller"

// MyDeploymentCache is what the MyDeployment controller needs of the
// manager's cache: MyDeployments and ControllerRevisions whole, and pods
// only if they carry both revision labels (ours, or orphans we could
// adopt), trimmed to the fields the controller reads (podwatch.Trim), and
// the objects of the modules' own kinds they select (optin.Owner). Pod
// informers carry pods' index by controller, read without copies through
// pods, which SetupMyDeployment must then be given.
func MyDeploymentCache(pods *podwatch.Index) managercache.Needs {
	objects := map[client.Object]cache.ByObject{
		&appsv1beta1.MyDeployment{}:  {},
		&appsv1.ControllerRevision{}: {},
		&corev1.Pod{}:                {Label: podwatch.Cached, Transform: podwatch.Trim},
	}
	for _, o := range modules.Owners {
		// A module's own objects (the hooks module's Jobs), as it selects them.
		obj, by := o.Owns()
		objects[obj] = by
	}
	return managercache.Needs{Controller: MyDeploymentControllerName, Objects: objects, NewInformer: pods.NewInformer}
}

// MyDeploymentOptions are the MyDeployment controller's knobs that
// cmd/main.go exposes as flags.
type MyDeploymentOptions struct {
	// Workers is how many MyDeployments are reconciled in parallel.
	Workers int
	// StatusBatchPeriod is the least time between two status writes of one
	// MyDeployment that only count a rollout's pods (see memory.paceStatus); 0
	// writes every change at once.
	StatusBatchPeriod time.Duration
	// Pods is the index the manager's cache was built with (MyDeploymentCache).
	Pods *podwatch.Index
	// InPlaceTimeout is how long an in-place update may take before the
	// pod is replaced; 0 means DefaultInPlaceTimeout.
	InPlaceTimeout time.Duration
	// Shards is this replica's membership of active-active shards: the
	// controller syncs only the namespaces of the slots it holds, on every
	// replica, not the leader alone. nil: one leader syncs every namespace.
	Shards *shard.Membership
}

// DefaultStatusBatchPeriod is the manager's --status-batch-period default.
const DefaultStatusBatchPeriod = time.Second

// SetupMyDeployment builds the MyDeployment reconciler with its real
// collaborators and registers it with mgr, whose cache must have been
// composed with MyDeploymentCache(opts.Pods). It fails if the revision
// index, a module's part or the controller cannot be registered.
func SetupMyDeployment(ctx context.Context, mgr ctrl.Manager, opts MyDeploymentOptions) (*MyDeploymentReconciler, error) {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &appsv1.ControllerRevision{}, revision.OwnerIndex,
		revision.OwnerIndexValues); err != nil {
		return nil, fmt.Errorf("indexing revisions by owner: %w", err)
	}
	recorder := mgr.GetEventRecorder(MyDeploymentControllerName)
	r := &MyDeploymentReconciler{
		Client:            mgr.GetClient(),
		APIReader:         mgr.GetAPIReader(),
		PodIndex:          opts.Pods,
		Recorder:          recorder,
		Pods:              metrics.InstrumentPods(&podcontrol.Real{Client: mgr.GetClient(), Recorder: recorder}),
		Revisions:         &revision.Store{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), ByOwner: true},
		Metrics:           metrics.NewRecorder(),
		Clock:             clock.RealClock{},
		Workers:           opts.Workers,
		StatusBatchPeriod: opts.StatusBatchPeriod,
		InPlaceTimeout:    opts.InPlaceTimeout,
		objects:           newObjects(freshness.DefaultTimeout),
		parts:             map[string]optin.Part{},
	}
	if opts.Shards != nil {
		r.Shards = opts.Shards.Gate()
		opts.Shards.Tell(shardHolder{r})
		metrics.SetShardCounts(func() metrics.ShardCounts { return r.ShardCounts(ctx) })
	}
	env := optin.BuildEnv{Reader: mgr.GetClient(), Indexer: mgr.GetFieldIndexer(), Writer: mgr.GetClient(), Pods: opts.Pods,
		Config: mgr.GetConfig(), Log: mgr.GetLogger(), Shared: optin.NewShared(), EveryReplica: opts.Shards != nil}
	for _, m := range modules.Builders {
		p, err := m.Build(ctx, env)
		if err != nil {
			return nil, fmt.Errorf("the %s module: %w", m.Name(), err)
		}
		if run, ok := p.(manager.Runnable); ok {
			if err := mgr.Add(run); err != nil {
				return nil, fmt.Errorf("adding the %s module's watch: %w", m.Name(), err)
			}
		}
		r.parts[m.Name()] = p
	}
	return r, r.SetupWithManager(ctx, mgr)
}

// podDeletes wraps the pod event handler. A pod's delete event, before its
// MyDeployment is enqueued:
//   - observes whatever the MyDeployment expected of the pod, as the
//     ReplicaSet controller's deletePod does: a pod created and deleted
//     before a sync listed it would otherwise hold the MyDeployment's syncs
//     until its expectation timed out;
//   - notes the pod as a stray when it may still exist (mayHaveLeft): it
//     left the cache's label selector, or the event is a tombstone.
type podDeletes struct {
	handler.EventHandler
	r *MyDeploymentReconciler
}

var _ handler.EventHandler = podDeletes{}

func (h podDeletes) Delete(ctx context.Context, e event.DeleteEvent, q podwatch.Queue) {
	if pod, ok := e.Object.(*corev1.Pod); ok {
		if _, ours := podwatch.Controller(pod); ours {
			if obj := h.r.objects.lookup(podcontrol.ControllerOf(pod).UID); obj != nil {
				obj.Gone(pod.Name)
			}
			if mayHaveLeft(e, pod) {
				h.r.noteStray(pod)
			}
		}
	}
	h.EventHandler.Delete(ctx, e, q)
}

// sweepMargin widens the sweep to MyDeployments created shortly after the
// controller was set up: the API server's clock may differ from ours, and
// the pod cache starts after the setup.
const sweepMargin = 10 * time.Second

// mayHaveLeft reports whether the DELETE event e for pod may be for a pod
// that still exists: it was missed (a tombstone), or the pod was not
// terminating.
func mayHaveLeft(e event.DeleteEvent, pod *corev1.Pod) bool {
	return e.DeleteStateUnknown || pod.DeletionTimestamp == nil
}

// leftCache reports whether pod lacks a label the manager's pod cache
// selects on: it is not (or no longer) in the cache.
func leftCache(pod *corev1.Pod) bool {
	_, rev := pod.Labels[appsv1beta1.RevisionLabel]
	_, hash := pod.Labels[appsv1beta1.PodTemplateHashLabel]
	return !rev || !hash
}

// noteStray remembers pod in its MyDeployment's record if one controls it
// (not a deleted namesake: its pods are the garbage collector's).
func (r *MyDeploymentReconciler) noteStray(pod *corev1.Pod) {
	key, ok := podwatch.Controller(pod)
	if !ok {
		return
	}
	owner := podcontrol.ControllerOf(pod).UID
	if obj := r.objects.ofPod(key, owner); obj != nil {
		obj.NoteStray(pod.UID, ownership.Stray{Name: pod.Name, Owner: owner})
	}
}

// SetupWithManager registers the controller: MyDeployments, the pods,
// revisions and modules' objects they own, and orphan pods they could adopt.
func (r *MyDeploymentReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if r.PodIndex == nil {
		return fmt.Errorf("no pod index: build the manager's cache with MyDeploymentCache and pass its pod index")
	}
	// A pod that leaves the cache's selector is a stray before the cache
	// drops it (podwatch.Index.NotifyLeaves); the handler below notes tombstones.
	r.PodIndex.NotifyLeaves(r.noteStray)
	r.sweepBefore = time.Now().Add(sweepMargin)
	b := ctrl.NewControllerManagedBy(mgr)
	for _, p := range r.parts {
		// The MyDeployments a module's watch names (drain: those with pods
		// on a node that starts or stops draining; config rollouts: those
		// that read a config object that changed).
		if w, ok := p.(optin.Watch); ok {
			b = b.WatchesRawSource(source.Channel(w.Events(), &handler.EnqueueRequestForObject{}))
		}
	}
	for _, o := range modules.Owners {
		// A module's own objects (a hook's Job) sync the object that controls them.
		obj, _ := o.Owns()
		b = b.Watches(obj, handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(),
			&appsv1beta1.MyDeployment{}, handler.OnlyControllerOwner()))
	}
	opts := controller.Options{MaxConcurrentReconciles: max(1, r.Workers)}
	if r.Shards != nil {
		// Every replica syncs the slots it holds; a slot taken brings its
		// objects through the queue (TookSlots).
		b = b.WatchesRawSource(r.shardSource())
		opts.NeedLeaderElection = ptr.To(false)
	}
	return b.
		// Spec changes and new objects first; updates that leave the spec
		// alone (our own status and annotation writes) at low priority.
		// The objects of the initial list are vetted on their first sync (observer.vetStart).
		For(&appsv1beta1.MyDeployment{}, builder.WithPredicates(r.noteInitialList(), podwatch.SpecChanged(true))).
		Watches(&appsv1beta1.MyDeployment{}, podwatch.LowPriority(&handler.EnqueueRequestForObject{}),
			builder.WithPredicates(podwatch.SpecChanged(false))).
		// A revision's resync (an update with nothing changed) would sync its
		// owner again beside the owner's own resync: once a period is enough.
		Watches(&appsv1.ControllerRevision{}, podwatch.LowPriority(handler.EnqueueRequestForOwner(mgr.GetScheme(),
			mgr.GetRESTMapper(), &appsv1beta1.MyDeployment{}, handler.OnlyControllerOwner())),
			builder.WithPredicates(predicate.ResourceVersionChangedPredicate{})).
		Watches(&corev1.Pod{}, podwatch.LowPriority(podDeletes{handler.EnqueueRequestsFromMapFunc(r.podOwners), r}),
			builder.WithPredicates(podwatch.UpdateMatters())).
		WithOptions(opts).
		Named("mydeployment").
		Complete(r)
}

// podOwners maps a pod to the MyDeployment that controls it or, for a pod
// with no controller, to the MyDeployments whose selector matches it, so
// they can adopt it. One handler reading the controller reference directly:
// Owns() looked up a REST mapping on every pod event (7% of the manager's CPU).
func (r *MyDeploymentReconciler) podOwners(ctx context.Context, obj client.Object) []ctrl.Request {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil
	}
	if podcontrol.ControllerOf(pod) != nil {
		if owner, ok := podwatch.Controller(pod); ok {
			return []ctrl.Request{{NamespacedName: owner}}
		}
		return nil
	}
	if pod.DeletionTimestamp != nil {
		return nil
	}
	var list appsv1beta1.MyDeploymentList
	if err := r.List(ctx, &list, client.InNamespace(pod.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		logf.FromContext(ctx).Error(err, "listing MyDeployments for an orphan pod", "pod", klog.KObj(pod))
		return nil
	}
	var reqs []ctrl.Request
	for i := range list.Items {
		if sel, err := selectorOf(&list.Items[i]); err == nil && sel.Matches(labels.Set(pod.Labels)) {
			reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}

// noteInitialList is a predicate that lets every event through and marks
// the objects of the initial list for vetting. It must come first among the
// watch's predicates (a predicate that refuses stops the others).
func (r *MyDeploymentReconciler) noteInitialList() predicate.Predicate {
	return predicate.Funcs{CreateFunc: func(e event.CreateEvent) bool {
		if md, ok := e.Object.(*appsv1beta1.MyDeployment); ok && e.IsInInitialList {
			r.objects.get(md).MarkVet(time.Now())
		}
		return true
	}}
}
