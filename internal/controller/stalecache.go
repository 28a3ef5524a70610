package controller

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/ownership"
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
// Vetting (vetStart) answers the first, heldByNamesake the second.

// The first sync of each object that existed when this controller started
// watching (its initial list, also what a manager that just became leader
// is handed) reads its pods from the API server (a quorum list) and waits
// until the cache lists every one it controls, as KEP-5647 has a controller
// wait for its cache to reach its last write. Objects created later need
// nothing: every write to their pods was ours, and expected, or came after
// our watch began. The mark is the object's watch notes' (MarkVet); the
// freshness record is not told: these writes are not ours.

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

// vetStart lists s.md's pods from the API server while the object needs
// vetting (marked by noteInitialList): vetted then waits until the cache,
// read after this list, shows each. A sync that finds one missing lists
// again the next time (a pod deleted meanwhile is then not listed). An
// error fails the sync: planning from the cache alone could create a pod
// the previous manager made. A vetting not done within the record's
// timeout is given up, as a leaked expectation is.
func (ob observer) vetStart(ctx context.Context, s *observation) error {
	need, since := s.obj.NeedsVet()
	if !need {
		return nil
	}
	if s.now.Sub(since) >= ob.vetTimeout {
		logf.FromContext(ctx).Info("the cache never listed every pod the API server lists since the controller started; syncing anyway")
		s.obj.Vetted()
		return nil
	}
	names, err := listedPods(ctx, ob.apiReader, s.md, s.selector)
	if err != nil {
		return fmt.Errorf("listing pods from the API server on the first sync since the controller started: %w", err)
	}
	s.vetListed = append(make([]string, 0, len(names)), names...) // non-nil: this sync vets
	return nil
}

// vetted reports whether the cache lists every pod vetStart listed from
// the API server (true when this sync does not vet), and marks the object
// vetted when it does.
func (ob observer) vetted(ctx context.Context, s *observation) bool {
	if s.vetListed == nil {
		return true
	}
	cached := make(map[string]bool, len(s.pods))
	for _, pod := range s.pods {
		cached[pod.Name] = true
	}
	missing := 0
	for _, name := range s.vetListed {
		if !cached[name] {
			missing++
		}
	}
	if missing > 0 {
		logf.FromContext(ctx).V(1).Info("first sync since the controller started: waiting for the cache to list the pods the API server lists",
			"missing", missing)
		return false
	}
	logf.FromContext(ctx).V(1).Info("first sync since the controller started: pods listed from the API server", "pods", len(s.vetListed))
	s.obj.Vetted()
	return true
}

// namesakeWait bounds the wait for a deleted namesake's pods, from the new
// object's creation: the garbage collector releases (or deletes) them
// within seconds; past this, the pods are another's, as they are to a
// Deployment.
const namesakeWait = 30 * time.Second

// heldByNamesake reports whether s.md, created less than namesakeWait ago,
// must wait because the pod cache still shows live pods that a deleted
// object of its name (another UID) controls and its selector matches. The
// garbage collector is releasing them (--cascade=orphan: they become
// orphans, ours to adopt) or deleting them; until the cache says which,
// planning would create their replacements beside them. It reads the
// cache's index by controller name, so it needs no memory of the deleted
// object, and holds after a manager restart too.
func (ob observer) heldByNamesake(ctx context.Context, s *observation) (bool, error) {
	if s.now.Sub(s.md.CreationTimestamp.Time) >= namesakeWait {
		return false, nil
	}
	pods, err := ob.pods.ControlledByName(client.ObjectKeyFromObject(s.md))
	if err != nil {
		return false, fmt.Errorf("listing pods: %w", err)
	}
	held := ownership.HeldByNamesake(s.md.UID, s.selector, pods)
	if len(held) == 0 {
		return false, nil
	}
	logf.FromContext(ctx).V(1).Info("waiting for the cache to show the pods of a deleted namesake released or deleted",
		"pods", held)
	return true, nil
}
