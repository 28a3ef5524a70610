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
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/ownership"
	"github.com/mydeployment-io/mydeployment-operator/internal/podcontrol"
	"github.com/mydeployment-io/mydeployment-operator/internal/podwatch"
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
//
// What is remembered lives in each object's freshness record (NoteStray,
// TakeStrays); the namespace sweeps in objects.sweeps.

// namespaceSweep is one namespace's listing of possible strays.
type namespaceSweep struct {
	mu    sync.Mutex
	done  bool
	found map[types.UID]map[types.UID]ownership.Stray // by controller UID, then pod UID
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

// toSweep reports whether o's object is to be swept now (older than the
// controller, not swept yet in this run), and marks it swept.
func (cl claimer) toSweep(o *observation, c *claimed) bool {
	if c.mem.swept || !o.md.CreationTimestamp.Time.Before(cl.sweepBefore) {
		return false
	}
	c.mem.swept = true
	return true
}

// namespaceStrays returns what list finds in ns, listing once per manager
// run: the first MyDeployment of ns to be swept lists for all of them.
// A failed list is tried again by the next.
func (cl claimer) namespaceStrays(ns string, list func() (map[types.UID]map[types.UID]ownership.Stray, error)) (map[types.UID]map[types.UID]ownership.Stray, error) {
	sw := cl.objects.namespaceSweep(ns)
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

// sweep notes as strays the pods md controls that lack a revision label:
// those that left the cache while no manager ran, whatever their labels now
// (a manager killed between a pod's DELETE event and its release leaves one
// behind too). Once per MyDeployment older than the manager; the pods of
// its namespace are listed once for all of them (namespaceStrays).
func (cl claimer) sweep(ctx context.Context, o *observation, c *claimed) error {
	if !cl.toSweep(o, c) {
		return nil
	}
	found, err := cl.namespaceStrays(o.md.Namespace, func() (map[types.UID]map[types.UID]ownership.Stray, error) {
		return cl.listStrays(ctx, o.md.Namespace)
	})
	if err != nil {
		c.mem.swept = false // the next sync tries again
		return err
	}
	for uid, st := range found[o.md.UID] {
		o.obj.NoteStray(uid, st)
	}
	return nil
}

// listStrays lists, around the cache and metadata only, the pods of ns
// that lack a revision label and that a MyDeployment controls: by
// controller UID, each pod's stray by its UID. Two label-selected lists;
// pods of other controllers come back too (a Deployment's lack
// controller-revision-hash), but only once per namespace per manager run.
func (cl claimer) listStrays(ctx context.Context, ns string) (map[types.UID]map[types.UID]ownership.Stray, error) {
	found := map[types.UID]map[types.UID]ownership.Stray{}
	for _, key := range []string{appsv1beta1.RevisionLabel, appsv1beta1.PodTemplateHashLabel} {
		missing, err := labels.NewRequirement(key, selection.DoesNotExist, nil)
		if err != nil {
			return nil, err // constant key: cannot happen
		}
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
		if err := cl.apiReader.List(ctx, list, client.InNamespace(ns),
			client.MatchingLabelsSelector{Selector: labels.NewSelector().Add(*missing)}); err != nil {
			return nil, fmt.Errorf("listing pods without %s: %w", key, err)
		}
		for i := range list.Items {
			pod := &corev1.Pod{ObjectMeta: list.Items[i].ObjectMeta}
			if _, ok := podwatch.Controller(pod); !ok {
				continue
			}
			owner := podcontrol.ControllerOf(pod).UID
			if found[owner] == nil {
				found[owner] = map[types.UID]ownership.Stray{}
			}
			found[owner][pod.UID] = ownership.Stray{Name: pod.Name, Owner: owner}
		}
	}
	return found, nil
}

// readStrays reads each stray remembered for o's MyDeployment around the
// cache (after the cache's pods: see ownership.PodInput), sweeping first
// if it is the object's first sync since the start. ownership.ClaimPods
// decides what each read means: released if still ours and no longer
// belonging (labels the selector does not match, or a revision label
// missing); forgotten if gone, re-created under its name, another's, or
// back in shape (and so back in the cache); noted again if its read failed.
func (cl claimer) readStrays(ctx context.Context, o *observation, c *claimed) error {
	if err := cl.sweep(ctx, o, c); err != nil {
		return err
	}
	c.strays = nil
	for uid, st := range o.obj.TakeStrays() {
		read := ownership.StrayRead{UID: uid, Stray: st}
		if st.Owner == o.md.UID {
			pod := &corev1.Pod{}
			err := cl.apiReader.Get(ctx, types.NamespacedName{Namespace: o.md.Namespace, Name: st.Name}, pod)
			switch {
			case err == nil:
				read.Pod = pod
			case !apierrors.IsNotFound(err):
				read.Err = fmt.Errorf("reading pod %s that left the cache: %w", st.Name, err)
			}
		}
		c.strays = append(c.strays, read)
	}
	return nil
}
