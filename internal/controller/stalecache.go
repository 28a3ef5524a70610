package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// Expectations cover the pod writes of this process only. Two writes they
// cannot cover reach a sync through a pod cache that may lag behind them,
// and each made the chaos suite's controller create a pod too many (the
// stale-cache duplicates of kubernetes#129795):
//
//   - a previous manager's creates: a manager started (or made leader)
//     right after another was killed planned from a pod cache that did not
//     list the last pod the killed one had made;
//   - a deleted namesake's pods: an object deleted with --cascade=orphan and
//     created again under its name was synced while the pod cache still
//     showed one of its pods controlled by the deleted object (the garbage
//     collector had released it before the old object went, but the pod
//     watch had not said so yet), so it was neither ours nor an orphan.
//
// startVetting answers the first, namesakes the second.

// startVetting makes the first sync of each object that existed when this
// controller started watching (its initial list, also what a manager that
// just became leader is handed) read its pods from the API server once (a
// quorum list) and expect every one it controls, so the sync waits until
// the cache lists them all, as KEP-5647 has a controller wait for its cache
// to reach its last write. Objects created later need nothing: every write
// to their pods was ours, and expected, or came after our watch began.
type startVetting struct {
	mu      sync.Mutex
	pending map[types.UID]struct{}
}

// existed records an object of the initial list.
func (v *startVetting) existed(uid types.UID) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.pending == nil {
		v.pending = map[types.UID]struct{}{}
	}
	v.pending[uid] = struct{}{}
}

// needed reports whether uid's pods must be listed from the API server
// before its sync may plan.
func (v *startVetting) needed(uid types.UID) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	_, ok := v.pending[uid]
	return ok
}

func (v *startVetting) done(uid types.UID) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.pending, uid)
}

// noteInitialList is a predicate that lets every event through and records
// the objects of the initial list for vetting. It must come first among the
// watch's predicates (a predicate that refuses stops the others).
func (v *startVetting) noteInitialList() predicate.Predicate {
	return predicate.Funcs{CreateFunc: func(e event.CreateEvent) bool {
		if e.IsInInitialList {
			v.existed(e.Object.GetUID())
		}
		return true
	}}
}

// vetStart lists s.md's pods from the API server once after the controller
// started, if it existed then (startVetting), and expects each one it
// controls. An error leaves it unvetted, and the sync fails: planning from
// the cache alone could create a pod the previous manager made.
func (r *MyDeploymentReconciler) vetStart(ctx context.Context, s *scope) error {
	if !r.vetting.needed(s.md.UID) {
		return nil
	}
	n, err := r.expectListedPods(ctx, s)
	if err != nil {
		return fmt.Errorf("listing pods from the API server on the first sync since the controller started: %w", err)
	}
	logf.FromContext(ctx).V(1).Info("first sync since the controller started: pods listed from the API server", "pods", n)
	r.vetting.done(s.md.UID)
	return nil
}

// namesakes remembers the UID each MyDeployment key was last synced with,
// so that the first syncs of an object re-created under its name know
// their predecessor and can wait while the pod cache still shows pods
// controlled by it (see heldByNamesake).
type namesakes struct {
	mu   sync.Mutex
	last map[string]types.UID
	// gone: keys whose object was found deleted, and when; their last UID
	// is kept for namesakeWait, then dropped.
	gone map[string]time.Time
	// predecessors: keys synced with a new UID, the old one and since when.
	predecessors map[string]predecessor
}

type predecessor struct {
	uid   types.UID
	since time.Time
}

// namesakeWait bounds the wait for a deleted namesake's pods: the garbage
// collector releases (or deletes) them within seconds; past this, the pods
// are another's, as they are to a Deployment.
const namesakeWait = 30 * time.Second

// synced records that key was synced as uid at now and returns the UID of
// the object it replaced, if that was within namesakeWait.
func (n *namesakes) synced(key string, uid types.UID, now time.Time) types.UID {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.last == nil {
		n.last, n.gone, n.predecessors = map[string]types.UID{}, map[string]time.Time{}, map[string]predecessor{}
	}
	if last, ok := n.last[key]; ok && last != uid {
		n.predecessors[key] = predecessor{uid: last, since: now}
	}
	n.last[key] = uid
	delete(n.gone, key)
	p, ok := n.predecessors[key]
	if !ok {
		return ""
	}
	if now.Sub(p.since) >= namesakeWait {
		delete(n.predecessors, key)
		return ""
	}
	return p.uid
}

// released drops key's predecessor: none of its pods are left in the cache.
func (n *namesakes) released(key string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.predecessors, key)
}

// deleted records that key's object was found deleted at now, and drops
// what it remembers of keys deleted more than namesakeWait ago.
func (n *namesakes) deleted(key string, now time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.last == nil {
		return
	}
	delete(n.predecessors, key)
	if _, ok := n.last[key]; ok {
		n.gone[key] = now
	}
	for k, at := range n.gone {
		if now.Sub(at) >= namesakeWait {
			delete(n.gone, k)
			delete(n.last, k)
		}
	}
}

// heldByNamesake reports whether s.md, created again under the name of an
// object deleted moments ago, must wait: the pod cache still shows pods
// controlled by the deleted object and not terminating. The garbage
// collector is releasing them (--cascade=orphan: they become orphans, ours
// to adopt) or deleting them; until the cache says which, planning would
// create their replacements beside them.
func (r *MyDeploymentReconciler) heldByNamesake(ctx context.Context, s *scope) (bool, error) {
	prev := r.namesakes.synced(s.key, s.md.UID, s.now)
	if prev == "" {
		return false, nil
	}
	pods, err := r.PodIndex.Owned(prev)
	if err != nil {
		return false, fmt.Errorf("listing pods: %w", err)
	}
	var held []string
	for _, pod := range pods {
		if pod.DeletionTimestamp == nil && s.selector.Matches(labels.Set(pod.Labels)) {
			held = append(held, pod.Name)
		}
	}
	if len(held) == 0 {
		logf.FromContext(ctx).V(1).Info("the cache shows no live pod of a deleted namesake", "namesake", prev, "pods", len(pods))
		r.namesakes.released(s.key)
		return false, nil
	}
	logf.FromContext(ctx).V(1).Info("waiting for the cache to show the pods of a deleted namesake released or deleted",
		"pods", held, "namesake", prev)
	return true, nil
}
