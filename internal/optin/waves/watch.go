package waves

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
)

// Watch knows the nodes' labels, for the MyDeployments that opt into
// waves (built as the drain module's Node watch, which keeps only what
// drains read). Nodes are cluster-scoped and the
// manager's RBAC may not grant them, and controller-runtime waits for
// every source's cache to sync before any controller runs: a Node informer
// in the manager's cache that cannot list would stall every MyDeployment.
// So nodes are watched by an informer of their own, started only once some
// MyDeployment opts in and a SelfSubjectAccessReview says the manager may
// list and watch them; until its informer has synced the domains are
// unknown and every waves rollout holds (a rollout that took every pod for
// one domain would update them all at once), and while access is denied
// the opted-in objects say so (ReplicaFailure WavesAccessDenied). The
// informer keeps only the nodes' names and labels (trimNode). A node whose
// labels change enqueues the opted-in MyDeployments with pods on it.
type Watch struct {
	reader client.Reader // the manager's cache: MyDeployments
	pods   optin.OwnedPods
	config *rest.Config
	// mayWatch asks the API server whether the manager may list and watch Nodes.
	mayWatch func(context.Context) (bool, error)
	poll     time.Duration
	log      logr.Logger
	// events enqueues MyDeployments (a channel source of the controller).
	events chan event.GenericEvent
	// wakeup starts a look at once rather than at the next poll.
	wakeup chan struct{}

	state atomic.Int32
	// nodes is the Node informer's store once it has synced: the
	// informer's cache, no record of our own.
	nodes atomic.Pointer[toolscache.Store]
}

// The states of a Watch.
const (
	nodesIdle     int32 = iota // no MyDeployment opted in yet
	nodesDenied                // one did; the manager may not list and watch Nodes
	nodesWatching              // the informer has synced
)

// nodePoll is how often the watch looks for an opted-in MyDeployment, and
// asks again for access while denied, when nothing wakes it sooner.
const nodePoll = 15 * time.Second

var (
	_ manager.LeaderElectionRunnable = &Watch{}
	_ optin.Watch                    = &Watch{}
)

func newWatch(env optin.BuildEnv) *Watch {
	return &Watch{reader: env.Reader, pods: env.Pods, config: env.Config, mayWatch: mayWatchNodes(env.Writer), poll: nodePoll,
		log: env.Log.WithName("wave-nodes"), events: make(chan event.GenericEvent, 1024), wakeup: make(chan struct{}, 1)}
}

// Events implements optin.Watch: the opted-in MyDeployments to sync again,
// once the watch started or was denied, and those with pods on a node
// whose labels changed.
func (w *Watch) Events() <-chan event.GenericEvent { return w.events }

// NeedLeaderElection: only the leader reconciles, so only it watches.
func (w *Watch) NeedLeaderElection() bool { return true }

// Start looks, at each poll or wake-up, for a MyDeployment that opts in;
// once one does and access is granted, it runs the Node informer until
// ctx ends. An error (no answer to the access check, a failed list) is no
// denial: it tries again after optin.TransientRetry's backoff, not a poll. It
// returns nil: nothing here may stop the manager.
func (w *Watch) Start(ctx context.Context) error {
	ticker := time.NewTicker(w.poll)
	defer ticker.Stop()
	backoff := optin.TransientRetry()
	for {
		started, err := w.try(ctx)
		if started {
			<-ctx.Done()
			return nil
		}
		next := ticker.C
		if err != nil && ctx.Err() == nil {
			after := backoff.Step()
			w.log.Info("starting the node watch failed; trying again", "after", after.String(), "error", err.Error())
			next = time.After(after)
		} else {
			backoff = optin.TransientRetry()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-next:
		case <-w.wakeup:
		}
	}
}

// try starts the informer if some MyDeployment opts in and access is
// granted; it says whether it did.
func (w *Watch) try(ctx context.Context) (bool, error) {
	opted, err := w.optedIn(ctx)
	if err != nil || len(opted) == 0 {
		return false, err
	}
	ok, err := w.mayWatch(ctx)
	if err != nil {
		return false, err
	}
	if !ok {
		if w.state.Swap(nodesDenied) != nodesDenied {
			w.log.Info("the manager may not list and watch Nodes: waves hold (grant config/rbac/node_reader_role.yaml)",
				"optedIn", len(opted))
			w.enqueue(opted...)
		}
		return false, nil
	}
	if err := w.run(ctx); err != nil {
		return false, err
	}
	w.state.Store(nodesWatching)
	w.log.Info("watching Nodes for waves", "optedIn", len(opted))
	w.enqueue(opted...) // plan again, the domains now known
	return true, nil
}

// run starts the Node informer and waits for it to sync.
func (w *Watch) run(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(w.config)
	if err != nil {
		return fmt.Errorf("node client: %w", err)
	}
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return cs.CoreV1().Nodes().List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return cs.CoreV1().Nodes().Watch(ctx, o)
		},
	}
	inf := toolscache.NewSharedIndexInformer(lw, &corev1.Node{}, 0, toolscache.Indexers{})
	if err := inf.SetTransform(trimNode); err != nil {
		return fmt.Errorf("node informer: %w", err)
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.changed(nil, obj) },
		UpdateFunc: w.changed,
		DeleteFunc: func(obj any) { w.changed(obj, nil) },
	}); err != nil {
		return fmt.Errorf("node informer: %w", err)
	}
	go inf.RunWithContext(ctx)
	if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return fmt.Errorf("node informer: %w", ctx.Err())
	}
	store := toolscache.Store(inf.GetStore())
	w.nodes.Store(&store)
	return nil
}

// changed enqueues the opted-in MyDeployments with pods on a node whose
// labels changed (old nil: added; obj nil: deleted).
func (w *Watch) changed(old, obj any) {
	was, is := nodeOf(old), nodeOf(obj)
	if was != nil && is != nil && maps.Equal(was.Labels, is.Labels) {
		return
	}
	if n := cmp.Or(is, was); n != nil {
		w.enqueueOnNode(n.Name)
	}
}

// nodeOf is the Node an informer event carries, nil for anything else.
func nodeOf(obj any) *corev1.Node {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	node, _ := obj.(*corev1.Node)
	return node
}

// trimNode keeps the labels (and the name and version the informer
// needs): a node's status and images are most of it.
func trimNode(obj any) (any, error) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node.Name, UID: node.UID, ResourceVersion: node.ResourceVersion,
		Labels: node.Labels}}, nil
}

// optedIn lists the MyDeployments that opt into waves, from the cache.
func (w *Watch) optedIn(ctx context.Context) ([]*appsv1beta1.MyDeployment, error) {
	var list appsv1beta1.MyDeploymentList
	if err := w.reader.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing MyDeployments: %w", err)
	}
	var out []*appsv1beta1.MyDeployment
	for i := range list.Items {
		if spec, _ := Module.Parse(&list.Items[i]); spec != nil {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

// enqueueOnNode enqueues the opted-in MyDeployments with a pod on node.
func (w *Watch) enqueueOnNode(node string) {
	opted, err := w.optedIn(context.Background())
	if err != nil {
		w.log.Error(err, "finding the MyDeployments on a node", "node", node)
		return
	}
	for _, md := range opted {
		pods, err := w.pods.Owned(md.UID)
		if err != nil {
			continue
		}
		for _, p := range pods {
			if p.Spec.NodeName == node {
				w.enqueue(md)
				break
			}
		}
	}
}

func (w *Watch) enqueue(mds ...*appsv1beta1.MyDeployment) {
	for _, md := range mds {
		w.events <- event.GenericEvent{Object: md}
	}
}

// snapshot is what a sync of an opted-in MyDeployment reads: the nodes'
// labels (nil until the informer has synced), and whether the manager is
// denied Nodes. It wakes the watch if it has not started: this object
// opts in. A nil watch (a reconciler built without one) knows no node.
func (w *Watch) snapshot() (nodeView, bool) {
	if w == nil {
		return nil, false
	}
	state := w.state.Load()
	if state == nodesIdle {
		select {
		case w.wakeup <- struct{}{}:
		default:
		}
	}
	store := w.nodes.Load()
	if store == nil {
		return nil, state == nodesDenied
	}
	return func(name, key string) (string, bool, bool) {
		obj, ok, _ := (*store).GetByKey(name) // a Node's key is its name
		node, _ := obj.(*corev1.Node)
		if !ok || node == nil {
			return "", false, false
		}
		v, has := node.Labels[key]
		return v, has, true
	}, state == nodesDenied
}

// mayWatchNodes asks, with SelfSubjectAccessReviews, whether the client's
// user may list and watch Nodes.
func mayWatchNodes(c client.Client) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		for _, verb := range []string{"list", "watch"} {
			review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Resource: "nodes"}}}
			if err := c.Create(ctx, review); err != nil {
				return false, fmt.Errorf("asking whether the manager may %s Nodes: %w", verb, err)
			}
			if !review.Status.Allowed {
				return false, nil
			}
		}
		return true, nil
	}
}
