// Package podwatch is how the MyDeployment controller watches pods: which
// pods its cache holds (Cached) and what of each (Trim), the index that
// reads them by controller without copies (Index), the pods that leave the
// cache's selector told as their event arrives, which pod updates are worth
// a sync (UpdateMatters), and the priority of the events that follow a
// rollout's progress (LowPriority). It holds no state of any MyDeployment:
// what a sync remembers is the controller's.
package podwatch

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/podcontrol"
)

// Cached selects the pods the cache holds: those with both revision labels
// (ours, or orphans a MyDeployment could adopt).
var Cached = func() labels.Selector {
	sel := labels.NewSelector()
	for _, key := range []string{appsv1beta1.RevisionLabel, appsv1beta1.PodTemplateHashLabel} {
		req, err := labels.NewRequirement(key, selection.Exists, nil)
		if err != nil {
			panic(err) // constant keys: cannot fail
		}
		sel = sel.Add(*req)
	}
	return sel
}()

// Controller names the MyDeployment that is pod's controller, if any.
func Controller(pod *corev1.Pod) (types.NamespacedName, bool) {
	ref := podcontrol.ControllerOf(pod)
	if ref == nil || ref.Kind != "MyDeployment" {
		return types.NamespacedName{}, false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || gv.Group != appsv1beta1.GroupVersion.Group {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: pod.Namespace, Name: ref.Name}, true
}

// ByController is the pod informers' index of the UID of each pod's
// controller, or namespace/noController for orphans; a pod a MyDeployment
// controls is also indexed by that MyDeployment's name (namedKey).
const (
	ByController = "mydeployment.io/controller"
	noController = "<none>"
)

// ControllerKeys is ByController's index function.
func ControllerKeys(obj any) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		if owner, ok := Controller(pod); ok {
			return []string{string(ref.UID), namedKey(owner)}, nil
		}
		return []string{string(ref.UID)}, nil
	}
	return []string{OrphanKey(pod.Namespace)}, nil
}

// OrphanKey is ByController's key of namespace's pods without a controller.
func OrphanKey(namespace string) string { return namespace + "/" + noController }

// namedKey indexes the pods of a MyDeployment by its name, whatever its UID:
// a deleted namesake's pods are found by the object that replaced it.
func namedKey(owner types.NamespacedName) string { return "name:" + owner.String() }

// Index reads the cached pods of one controller, or the orphans of a
// namespace, as the informers store them: pointers, no copy. A cache List
// into a PodList copies every pod into a new slice (1,240 bytes of struct
// each); on every sync that was a third of the manager's allocations.
//
// The pods it returns are the cache's own objects and must never be
// modified. MyDeploymentCache installs it in every pod informer the cache makes
// (one for all namespaces, or one per watched namespace).
type Index struct {
	mu      sync.Mutex
	sources []source
	// built: a pod informer was ever added (none at all is a manager whose
	// cache was not built with MyDeploymentCache; none left is a replica
	// of shards that holds no slot).
	built bool
	// left, when set, is told of each pod a pod watch reports deleted while
	// not terminating (it may have left the cache's label selector), before
	// the informer drops it from the index: see leaveWatcher.
	left func(*corev1.Pod)
}

// NotifyLeaves makes the index tell f of each pod that may have left the
// cache's label selector, as its watch event arrives.
func (x *Index) NotifyLeaves(f func(*corev1.Pod)) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.left = f
}

func (x *Index) leaving(pod *corev1.Pod) {
	x.mu.Lock()
	f := x.left
	x.mu.Unlock()
	if f != nil {
		f(pod)
	}
}

// source is one pod informer's store; stopped, when set, says the informer
// has stopped (its shard slot was given up, shardcache): its pods are no
// longer read, and the index lets go of them.
type source struct {
	indexer toolscache.Indexer
	stopped func() bool
}

// NewIndex returns an index with no informer yet; pass it to
// MyDeploymentCache and to SetupMyDeployment.
func NewIndex() *Index { return &Index{} }

// IndexOf returns an index over stores built elsewhere (tests), each
// indexed with ByController.
func IndexOf(indexers ...toolscache.Indexer) *Index {
	x := &Index{built: true}
	for _, idx := range indexers {
		x.sources = append(x.sources, source{indexer: idx})
	}
	return x
}

// NewInformer is the cache's informer constructor: client-go's, with the
// controller index added to pod informers.
func (x *Index) NewInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration,
	indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	if _, isPod := obj.(*corev1.Pod); !isPod {
		return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
	}
	indexers = maps.Clone(indexers)
	if indexers == nil {
		indexers = toolscache.Indexers{}
	}
	indexers[ByController] = ControllerKeys
	inf := toolscache.NewSharedIndexInformer(leaveWatcher{ListerWatcher: lw, index: x}, obj, resync, indexers)
	x.mu.Lock()
	x.sources = append(x.sources, source{indexer: inf.GetIndexer(), stopped: inf.IsStopped})
	x.built = true
	x.mu.Unlock()
	return inf
}

// Owned returns the cached pods whose controller has UID owner.
func (x *Index) Owned(owner types.UID) ([]*corev1.Pod, error) {
	return x.lookup(string(owner))
}

// ControlledByName returns the cached pods that a MyDeployment named owner
// controls, whichever object of that name (UID) it is.
func (x *Index) ControlledByName(owner types.NamespacedName) ([]*corev1.Pod, error) {
	return x.lookup(namedKey(owner))
}

// Orphans returns the cached pods of namespace that have no controller.
func (x *Index) Orphans(namespace string) ([]*corev1.Pod, error) {
	return x.lookup(OrphanKey(namespace))
}

func (x *Index) lookup(key string) ([]*corev1.Pod, error) {
	sources, err := x.live()
	if err != nil {
		return nil, err
	}
	var pods []*corev1.Pod
	for _, src := range sources {
		objs, err := src.indexer.ByIndex(ByController, key)
		if err != nil {
			return nil, err
		}
		if pods == nil {
			pods = make([]*corev1.Pod, 0, len(objs))
		}
		for _, o := range objs {
			if pod, ok := o.(*corev1.Pod); ok {
				pods = append(pods, pod)
			}
		}
	}
	return pods, nil
}

// Count counts the cached pods: all of them, and those whose namespace in
// says (without copying a pod, as a List from the cache would: the shard
// series read it at every scrape).
func (x *Index) Count(in func(namespace string) bool) (matching, all int, err error) {
	sources, err := x.live()
	if err != nil {
		return 0, 0, err
	}
	for _, src := range sources {
		for _, o := range src.indexer.List() {
			all++
			if pod, ok := o.(*corev1.Pod); ok && in(pod.Namespace) {
				matching++
			}
		}
	}
	return matching, all, nil
}

// live are the sources of informers still running; the stopped ones are
// dropped.
func (x *Index) live() ([]source, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.built {
		return nil, fmt.Errorf("no pod informer: the manager's cache was not built with MyDeploymentCache")
	}
	for i, src := range x.sources {
		if src.stopped != nil && src.stopped() {
			// A copy: a lookup in flight may range over the slice it was given.
			live := append(make([]source, 0, len(x.sources)-1), x.sources[:i]...)
			for _, rest := range x.sources[i+1:] {
				if rest.stopped == nil || !rest.stopped() {
					live = append(live, rest)
				}
			}
			x.sources = live
			break
		}
	}
	return x.sources, nil
}

// leaveWatcher is a pod informer's ListerWatcher that tells the index of
// each DELETE event for a pod not terminating as the event arrives, before
// the informer's store (and so the index) drops the pod. Such an event is a
// pod that left the cache's label selector (or was deleted at once): a pod
// we may still control. Noted only by the event handler, which runs after
// the store has dropped the pod, it was for a moment in neither the index
// nor the strays, and a sync in that moment created its replacement while
// it was still ours (found by the chaos suite's label surgery).
type leaveWatcher struct {
	toolscache.ListerWatcher
	index *Index
}

func (w leaveWatcher) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	return toolscache.ToListerWithContext(w.ListerWatcher).ListWithContext(ctx, opts)
}

func (w leaveWatcher) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	wi, err := toolscache.ToWatcherWithContext(w.ListerWatcher).WatchWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	return w.noteLeaves(wi), nil
}

// Watch is the deprecated form, kept for callers that use it.
func (w leaveWatcher) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	wi, err := w.ListerWatcher.Watch(opts)
	if err != nil {
		return nil, err
	}
	return w.noteLeaves(wi), nil
}

func (w leaveWatcher) noteLeaves(wi watch.Interface) watch.Interface {
	rw := newRelayWatch(wi)
	go rw.loop(func(e watch.Event) bool {
		if pod, isPod := e.Object.(*corev1.Pod); isPod && e.Type == watch.Deleted && pod.DeletionTimestamp == nil {
			w.index.leaving(pod)
		}
		return rw.send(e)
	})
	return rw
}

// relayWatch passes a watch's events on through its own goroutine, so that
// something can be done with each on the way (see leaveWatcher). Unlike
// watch.Filter, a stopped watch's goroutine never waits on a reader that is
// gone.
type relayWatch struct {
	inner  watch.Interface
	result chan watch.Event
	done   chan struct{}
	stop   sync.Once
}

func newRelayWatch(inner watch.Interface) *relayWatch {
	return &relayWatch{inner: inner, result: make(chan watch.Event), done: make(chan struct{})}
}

func (w *relayWatch) ResultChan() <-chan watch.Event { return w.result }

func (w *relayWatch) Stop() {
	w.stop.Do(func() { close(w.done) })
	w.inner.Stop()
}

// send passes e on; false if the watch was stopped.
func (w *relayWatch) send(e watch.Event) bool {
	select {
	case w.result <- e:
		return true
	case <-w.done:
		return false
	}
}

// loop hands each event of the inner watch to relay until the inner watch
// ends, the watch is stopped, or relay returns false; then it closes the
// result channel.
func (w *relayWatch) loop(relay func(watch.Event) bool) {
	defer close(w.result)
	for {
		select {
		case e, ok := <-w.inner.ResultChan():
			if !ok || !relay(e) {
				return
			}
		case <-w.done:
			return
		}
	}
}

// IsWatchListSemanticsUnSupported passes on the wrapped client's answer, so
// the reflector streams its initial list exactly when it would without us.
func (w leaveWatcher) IsWatchListSemanticsUnSupported() bool {
	u, ok := w.ListerWatcher.(interface{ IsWatchListSemanticsUnSupported() bool })
	return ok && u.IsWatchListSemanticsUnSupported()
}
