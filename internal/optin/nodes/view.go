package nodes

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
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

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
)

// View is the manager's one Node informer, which the modules that read
// Nodes share (drain and waves, each through its Watch). Nodes are
// cluster-scoped and the manager's RBAC may not grant them, and
// controller-runtime waits for every source's cache to sync before any
// controller runs: a Node informer in the manager's cache that cannot
// list would stall every MyDeployment. So the view runs an informer of its
// own, started only once some MyDeployment opts into a module that reads
// it and a SelfSubjectAccessReview says the manager may list and watch
// Nodes. Until it has synced no node is seen; while access is denied the
// opted-in objects' syncs see Denied and say so (DrainAccessDenied,
// WavesAccessDenied). The informer keeps only what the modules read
// (trimNode).
type View struct {
	reader client.Reader // the manager's cache: MyDeployments
	pods   optin.OwnedPods
	config *rest.Config
	// mayWatch asks the API server whether the manager may list and watch Nodes.
	mayWatch func(context.Context) (bool, error)
	poll     time.Duration
	log      logr.Logger
	// wakeup starts a look at once rather than at the next poll.
	wakeup chan struct{}

	// started closes the race of the modules' parts: each is a runnable of
	// the manager and each Start starts the view, but only the first runs
	// it, so a manager runs one informer and one access check however many
	// modules read Nodes.
	started atomic.Bool
	state   atomic.Int32
	// nodes is the Node informer's store once it has synced, indexed by
	// drainingIndex: the informer's cache, no record of our own.
	nodes atomic.Pointer[toolscache.Indexer]

	mu sync.Mutex
	// watches are the modules' parts that read the view (For), added at
	// setup, before the manager starts.
	watches []*Watch
}

// drainingIndex indexes the Node informer's store by drainingNow: the
// nodes being drained are those under "true".
const drainingIndex = "draining"

// The states of a View.
const (
	nodesIdle     int32 = iota // no MyDeployment opted in yet
	nodesDenied                // one did; the manager may not list and watch Nodes
	nodesWatching              // the informer has synced
)

// nodePoll is how often the view looks for an opted-in MyDeployment, and
// asks again for access while denied, when nothing wakes it sooner.
const nodePoll = 15 * time.Second

func newView(env optin.BuildEnv) *View {
	return &View{reader: env.Reader, pods: env.Pods, config: env.Config, mayWatch: mayWatchNodes(env.Writer), poll: nodePoll,
		log: env.Log.WithName("nodes"), wakeup: make(chan struct{}, 1)}
}

// add makes w one of the view's readers.
func (v *View) add(w *Watch) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.watches = append(v.watches, w)
}

// all are the view's readers.
func (v *View) all() []*Watch {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Clone(v.watches)
}

// Start looks, at each poll or wake-up, for a MyDeployment that opts into
// a module of the view; once one does and access is granted, it runs the
// Node informer until ctx ends. An error (no answer to the access check, a
// failed list) is no denial: it tries again after optin.TransientRetry's
// backoff, not a poll. A second Start (another module's part) only waits
// for ctx. It returns nil: nothing here may stop the manager.
func (v *View) Start(ctx context.Context) error {
	if !v.started.CompareAndSwap(false, true) {
		<-ctx.Done()
		return nil
	}
	ticker := time.NewTicker(v.poll)
	defer ticker.Stop()
	backoff := optin.TransientRetry()
	for {
		started, err := v.try(ctx)
		if started {
			<-ctx.Done()
			return nil
		}
		next := ticker.C
		if err != nil && ctx.Err() == nil {
			after := backoff.Step()
			v.log.Info("starting the node watch failed; trying again", "after", after.String(), "error", err.Error())
			next = time.After(after)
		} else {
			backoff = optin.TransientRetry()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-next:
		case <-v.wakeup:
		}
	}
}

// try starts the informer if some MyDeployment opts in and access is
// granted; it says whether it did. Each module's opted-in objects are
// enqueued once access is denied, and again once the informer synced.
func (v *View) try(ctx context.Context) (bool, error) {
	watches := v.all()
	opted, err := v.optedIn(ctx, watches)
	if err != nil || !slices.ContainsFunc(opted, func(mds []*appsv1beta1.MyDeployment) bool { return len(mds) > 0 }) {
		return false, err
	}
	ok, err := v.mayWatch(ctx)
	if err != nil {
		return false, err
	}
	if !ok {
		if v.state.Swap(nodesDenied) != nodesDenied {
			v.log.Info("the manager may not list and watch Nodes: the opted-in objects say so (grant config/rbac/node_reader_role.yaml)",
				counts(watches, opted)...)
			enqueue(watches, opted)
		}
		return false, nil
	}
	if err := v.run(ctx); err != nil {
		return false, err
	}
	v.state.Store(nodesWatching)
	v.log.Info("watching Nodes", counts(watches, opted)...)
	enqueue(watches, opted) // plan again, the nodes now known
	return true, nil
}

// counts are log key-values: each module's name and how many objects opt in.
func counts(watches []*Watch, opted [][]*appsv1beta1.MyDeployment) []any {
	var kv []any
	for i, w := range watches {
		kv = append(kv, w.module.Name(), len(opted[i]))
	}
	return kv
}

// run starts the Node informer and waits for it to sync.
func (v *View) run(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(v.config)
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
	inf := toolscache.NewSharedIndexInformer(lw, &corev1.Node{}, 0, toolscache.Indexers{drainingIndex: func(obj any) ([]string, error) {
		node, _ := obj.(*corev1.Node)
		return []string{strconv.FormatBool(drainingNow(node))}, nil
	}})
	if err := inf.SetTransform(trimNode); err != nil {
		return fmt.Errorf("node informer: %w", err)
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { v.changed(nil, obj) },
		UpdateFunc: v.changed,
		DeleteFunc: func(obj any) { v.changed(obj, nil) },
	}); err != nil {
		return fmt.Errorf("node informer: %w", err)
	}
	go inf.RunWithContext(ctx)
	if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return fmt.Errorf("node informer: %w", ctx.Err())
	}
	indexer := inf.GetIndexer()
	v.nodes.Store(&indexer)
	return nil
}

// changed enqueues, for each module the change matters to, its opted-in
// MyDeployments with pods on the node (old nil: added; obj nil: deleted).
func (v *View) changed(old, obj any) {
	was, is := nodeOf(old), nodeOf(obj)
	n := cmp.Or(is, was)
	if n == nil {
		return
	}
	var which []*Watch
	for _, w := range v.all() {
		if w.matters(was, is) {
			which = append(which, w)
		}
	}
	if len(which) > 0 {
		v.enqueueOnNode(n.Name, which)
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

// trimNode keeps what the modules read (and the name and version the
// informer needs): the labels (waves), the deletion, cordon and taints
// (drain). A node's status and images are most of it.
func trimNode(obj any) (any, error) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: node.Name, UID: node.UID, ResourceVersion: node.ResourceVersion,
			DeletionTimestamp: node.DeletionTimestamp, Labels: node.Labels},
		Spec: corev1.NodeSpec{Unschedulable: node.Spec.Unschedulable, Taints: node.Spec.Taints},
	}, nil
}

// optedIn lists, from the cache, the MyDeployments that opt into each
// watch's module, in the order of watches.
func (v *View) optedIn(ctx context.Context, watches []*Watch) ([][]*appsv1beta1.MyDeployment, error) {
	var list appsv1beta1.MyDeploymentList
	if err := v.reader.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing MyDeployments: %w", err)
	}
	out := make([][]*appsv1beta1.MyDeployment, len(watches))
	for i := range list.Items {
		for j, w := range watches {
			if spec, _ := w.module.Parse(&list.Items[i]); spec != nil {
				out[j] = append(out[j], &list.Items[i])
			}
		}
	}
	return out, nil
}

// enqueueOnNode enqueues, for each of watches, its opted-in MyDeployments
// with a pod on node.
func (v *View) enqueueOnNode(node string, watches []*Watch) {
	opted, err := v.optedIn(context.Background(), watches)
	if err != nil {
		v.log.Error(err, "finding the MyDeployments on a node", "node", node)
		return
	}
	for i, w := range watches {
		for _, md := range opted[i] {
			if v.hasPodOn(md, node) {
				w.events <- event.GenericEvent{Object: md}
			}
		}
	}
}

// hasPodOn says md has a pod on node, in the cache.
func (v *View) hasPodOn(md *appsv1beta1.MyDeployment, node string) bool {
	pods, err := v.pods.Owned(md.UID)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(pods, func(p *corev1.Pod) bool { return p.Spec.NodeName == node })
}

// enqueue enqueues each watch's opted-in objects on its own Events.
func enqueue(watches []*Watch, opted [][]*appsv1beta1.MyDeployment) {
	for i, w := range watches {
		for _, md := range opted[i] {
			w.events <- event.GenericEvent{Object: md}
		}
	}
}

// seen is what a sync reads now; it wakes the view if it has not started.
func (v *View) seen() Seen {
	state := v.state.Load()
	if state == nodesIdle {
		select {
		case v.wakeup <- struct{}{}:
		default:
		}
	}
	s := Seen{Denied: state == nodesDenied}
	if indexer := v.nodes.Load(); indexer != nil {
		s.nodes = *indexer
	}
	return s
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
