package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/podcontrol"
)

// A stray is a pod a MyDeployment controls that left the manager's pod
// cache while it still exists: the cache holds only pods with both
// revision labels (MyDeploymentCache), so a pod that lost one of them (or all
// its labels) vanishes from view. Left alone, a stray stays owned forever:
// never counted, never released, and garbage-collected with the
// MyDeployment although it no longer belongs to it. So the sync reads each
// possible stray around the cache and releases it if it no longer matches,
// as a ReplicaSet's ControllerRefManager releases a pod its selector (which
// includes pod-template-hash) no longer matches.
//
// Which DELETE events name possible strays: a label-selected watch reports
// a pod that left the selector as deleted, carrying the pod as it was
// before (k8s.io/apiserver cache_watcher.go convertToWatchEvent and
// etcd3/watcher.go send the previous object), so the event's labels do not
// tell a leave from a deletion. Its deletion timestamp mostly does: a pod
// deleted gracefully (any pod bound to a node: our scale-downs and
// rollouts, evictions, the garbage collector) was terminating in its last
// state, a pod that left was not (or is terminating anyway). So only the
// DELETE events of pods not terminating cost a read: leaves, and pods
// deleted at once (never scheduled, or forced).
//
// Covered: pods that leave while the manager watches, and watch gaps the
// informer closes with a tombstone (DeleteStateUnknown: deleted or left,
// the uncached read tells). After a restart the cache never held a pod
// that left while no manager ran (or before a killed manager released
// it), so no event names it: the first sync of each MyDeployment older
// than the manager (sweep) takes its pods from a metadata-only list,
// around the cache, of the namespace's pods that lack a revision label,
// made once per namespace per manager run.
type strays struct {
	mu sync.Mutex
	// byOwner: per MyDeployment key, the stray pods' names by UID, with
	// the UID of the controller they named (a namesake's are dropped).
	byOwner map[types.NamespacedName]map[types.UID]stray
	// since: MyDeployments created before this (the controller's setup,
	// plus sweepMargin) are swept once, the UID recorded in swept.
	since time.Time
	swept map[types.NamespacedName]types.UID
	// namespaces holds each namespace's sweep, listed once.
	namespaces map[string]*namespaceSweep
}

// namespaceSweep is one namespace's listing of possible strays.
type namespaceSweep struct {
	mu    sync.Mutex
	done  bool
	found map[types.UID]map[types.UID]stray // by controller UID, then pod UID
}

// sweepMargin widens the sweep to MyDeployments created shortly after the
// controller was set up: the API server's clock may differ from ours, and
// the pod cache starts after the setup.
const sweepMargin = 10 * time.Second

type stray struct {
	name  string
	owner types.UID
}

// noteStrays wraps the pod watch's handler h: a DELETE event for a pod of
// ours that may still exist (see mayHaveLeft) remembers it for its owner's
// next sync before h enqueues that owner.
func (x *strays) noteStrays(h handler.EventHandler) handler.EventHandler {
	x.mu.Lock()
	x.since = time.Now().Add(sweepMargin)
	x.mu.Unlock()
	return strayHandler{EventHandler: h, strays: x}
}

type strayHandler struct {
	handler.EventHandler
	strays *strays
}

func (h strayHandler) Delete(ctx context.Context, e event.DeleteEvent, q queue) {
	if pod, ok := e.Object.(*corev1.Pod); ok && mayHaveLeft(e, pod) {
		h.strays.note(pod)
	}
	h.EventHandler.Delete(ctx, e, q)
}

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

// note remembers pod if a MyDeployment controls it.
func (x *strays) note(pod *corev1.Pod) {
	if key, ok := controllingMyDeployment(pod); ok {
		x.keep(key, pod.UID, stray{name: pod.Name, owner: podcontrol.ControllerOf(pod).UID})
	}
}

// take removes and returns the strays remembered for key.
func (x *strays) take(key types.NamespacedName) map[types.UID]stray {
	x.mu.Lock()
	defer x.mu.Unlock()
	s := x.byOwner[key]
	delete(x.byOwner, key)
	return s
}

// keep remembers a stray of key (again, when it could not be dealt with).
func (x *strays) keep(key types.NamespacedName, uid types.UID, s stray) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.byOwner == nil {
		x.byOwner = map[types.NamespacedName]map[types.UID]stray{}
	}
	if x.byOwner[key] == nil {
		x.byOwner[key] = map[types.UID]stray{}
	}
	x.byOwner[key][uid] = s
}

// forget drops what is remembered for a MyDeployment that is gone.
func (x *strays) forget(key types.NamespacedName) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.byOwner, key)
	delete(x.swept, key)
}

// toSweep reports whether md is to be swept now (older than the
// controller, not swept yet in this run), and marks it swept.
func (x *strays) toSweep(md *appsv1beta1.MyDeployment) bool {
	key := client.ObjectKeyFromObject(md)
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.swept[key] == md.UID || !md.CreationTimestamp.Time.Before(x.since) {
		return false
	}
	if x.swept == nil {
		x.swept = map[types.NamespacedName]types.UID{}
	}
	x.swept[key] = md.UID
	return true
}

// namespaceStrays returns what list finds in ns, listing once per manager
// run: the first MyDeployment of ns to be swept lists for all of them.
// A failed list is tried again by the next.
func (x *strays) namespaceStrays(ns string, list func() (map[types.UID]map[types.UID]stray, error)) (map[types.UID]map[types.UID]stray, error) {
	x.mu.Lock()
	if x.namespaces == nil {
		x.namespaces = map[string]*namespaceSweep{}
	}
	sw := x.namespaces[ns]
	if sw == nil {
		sw = &namespaceSweep{}
		x.namespaces[ns] = sw
	}
	x.mu.Unlock()
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if !sw.done {
		found, err := list()
		if err != nil {
			return nil, err
		}
		sw.found, sw.done = found, true
	}
	return sw.found, nil
}

// unsweep undoes toSweep after a failed sweep, so the next sync tries again.
func (x *strays) unsweep(key types.NamespacedName) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.swept, key)
}

// sweep notes as strays the pods md controls that lack a revision label:
// those that left the cache while no manager ran, whatever their labels now
// (a manager killed between a pod's DELETE event and its release leaves one
// behind too). Once per MyDeployment older than the manager; the pods of
// its namespace are listed once for all of them (namespaceStrays).
func (r *MyDeploymentReconciler) sweep(ctx context.Context, s *scope) error {
	if !r.strays.toSweep(s.md) {
		return nil
	}
	found, err := r.strays.namespaceStrays(s.md.Namespace, func() (map[types.UID]map[types.UID]stray, error) {
		return r.listStrays(ctx, s.md.Namespace)
	})
	if err != nil {
		r.strays.unsweep(client.ObjectKeyFromObject(s.md))
		return err
	}
	for uid, st := range found[s.md.UID] {
		r.strays.keep(client.ObjectKeyFromObject(s.md), uid, st)
	}
	return nil
}

// listStrays lists, around the cache and metadata only, the pods of ns
// that lack a revision label and that a MyDeployment controls: by
// controller UID, each pod's stray by its UID. Two label-selected lists;
// pods of other controllers come back too (a Deployment's lack
// controller-revision-hash), but only once per namespace per manager run.
func (r *MyDeploymentReconciler) listStrays(ctx context.Context, ns string) (map[types.UID]map[types.UID]stray, error) {
	found := map[types.UID]map[types.UID]stray{}
	for _, key := range []string{appsv1beta1.RevisionLabel, appsv1beta1.PodTemplateHashLabel} {
		missing, err := labels.NewRequirement(key, selection.DoesNotExist, nil)
		if err != nil {
			return nil, err // constant key: cannot happen
		}
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
		if err := r.APIReader.List(ctx, list, client.InNamespace(ns),
			client.MatchingLabelsSelector{Selector: labels.NewSelector().Add(*missing)}); err != nil {
			return nil, fmt.Errorf("listing pods without %s: %w", key, err)
		}
		for i := range list.Items {
			pod := &corev1.Pod{ObjectMeta: list.Items[i].ObjectMeta}
			if _, ok := controllingMyDeployment(pod); !ok {
				continue
			}
			owner := podcontrol.ControllerOf(pod).UID
			if found[owner] == nil {
				found[owner] = map[types.UID]stray{}
			}
			found[owner][pod.UID] = stray{name: pod.Name, owner: owner}
		}
	}
	return found, nil
}

// releaseStrays reads each stray remembered for s's MyDeployment around the
// cache and releases it if it is still ours and no longer belongs: labels
// the selector does not match, or a revision label missing. A pod gone,
// re-created under its name, controlled by another, or back in shape (and
// so back in the cache) is forgotten. A stray whose read or release failed
// is kept for the next sync, and the errors returned.
//
// It returns the strays that are not ours (any more): released now, gone,
// or another's. The cache may still list one for a moment (a stray is
// noted before the cache drops it); the sync must not count it, nor delete
// a pod it has just given back.
func (r *MyDeploymentReconciler) releaseStrays(ctx context.Context, s *scope) (notOurs map[types.UID]bool, err error) {
	key := client.ObjectKeyFromObject(s.md)
	var errs []error
	if err := r.sweep(ctx, s); err != nil {
		errs = append(errs, err)
	}
	notOur := func(uid types.UID) {
		if notOurs == nil {
			notOurs = map[types.UID]bool{}
		}
		notOurs[uid] = true
	}
	for uid, st := range r.strays.take(key) {
		if st.owner != s.md.UID {
			continue // a deleted namesake's: the garbage collector's
		}
		pod := &corev1.Pod{}
		if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: s.md.Namespace, Name: st.name}, pod); err != nil {
			if !apierrors.IsNotFound(err) {
				r.strays.keep(key, uid, st)
				errs = append(errs, fmt.Errorf("reading pod %s that left the cache: %w", st.name, err))
				continue
			}
			notOur(uid)
			continue
		}
		ref := podcontrol.ControllerOf(pod)
		if pod.UID != uid || ref == nil || ref.UID != s.md.UID {
			notOur(uid)
			continue
		}
		if !leftCache(pod) && s.selector.Matches(labels.Set(pod.Labels)) {
			continue // back in the cache's view: claimPods sees it
		}
		if err := r.Pods.Release(ctx, s.md, pod); err != nil {
			r.strays.keep(key, uid, st)
			errs = append(errs, err)
			continue
		}
		notOur(uid)
	}
	return notOurs, kerrors.NewAggregate(errs)
}
