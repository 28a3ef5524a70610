package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/revision"
)

// claimRevisions adopts the orphan ControllerRevisions that s's selector
// matches, as StatefulSet's ControllerRefManager.ClaimControllerRevisions
// does, so the history of an object deleted with --cascade=orphan and
// applied again is its own again: its revision name is free (no hash
// collision) and its pods, which carry that revision's hash, are adopted.
// Revisions of other controllers are never touched.
//
// It reads s.revisions, after the orphans, as claimPods reads the pods: a
// revision whose adoption (an earlier sync's) reaches the cache between
// the two reads is in the second, not in neither. Adopted revisions join
// them.
func (r *MyDeploymentReconciler) claimRevisions(ctx context.Context, s *scope) error {
	orphans, err := r.Revisions.Orphans(ctx, s.md.Namespace, s.selector)
	if err != nil {
		return err
	}
	if s.revisions, err = r.Revisions.List(ctx, s.md.Namespace, s.selector, s.md.UID); err != nil {
		return fmt.Errorf("listing revisions: %w", err)
	}
	orphans = slices.DeleteFunc(orphans, func(o *appsv1.ControllerRevision) bool { return named(s.revisions, o.Name) != nil })
	if len(orphans) == 0 {
		return nil
	}
	if ok, err := r.mayAdopt(ctx, s.md); !ok {
		return err
	}
	owner := revision.Owner{Object: s.md, GVK: appsv1beta1.GroupVersion.WithKind("MyDeployment")}
	var errs []error
	for _, rev := range orphans {
		adopted, err := r.Revisions.Adopt(ctx, owner, rev)
		if err != nil {
			// Gone: nothing to adopt. Anything else (changed since the cache
			// saw it, a failed write) retries the sync: going on could record
			// a colliding revision under another name while the orphan, whose
			// pods carry its hash, waits to be adopted.
			if !apierrors.IsNotFound(err) {
				errs = append(errs, err)
			}
			continue
		}
		s.revisions = append(s.revisions, adopted)
	}
	revision.Sort(s.revisions)
	return kerrors.NewAggregate(errs)
}

// errStaleObject is mayAdopt's answer for a copy of a MyDeployment that is
// no longer the object: deleted, being deleted, or replaced by a namesake.
// A sync of it must stop: planning without the orphans it may not adopt
// would create their replacements.
var errStaleObject = errors.New("the MyDeployment was deleted or re-created since the cache read it: not syncing the stale copy")

// mayAdopt re-reads md around the cache and reports whether it may adopt:
// it is the object we synced (same UID, not a deleted namesake) and is not
// being deleted, as the ControllerRefManager's RecheckDeletionTimestamp.
// When it may not, the error is errStaleObject (or the read's error), so
// callers fail the sync rather than go on without the orphans.
func (r *MyDeploymentReconciler) mayAdopt(ctx context.Context, md *appsv1beta1.MyDeployment) (bool, error) {
	fresh := &appsv1beta1.MyDeployment{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(md), fresh); err != nil {
		if apierrors.IsNotFound(err) {
			return false, errStaleObject
		}
		return false, fmt.Errorf("re-reading before adoption: %w", err)
	}
	if fresh.UID != md.UID || fresh.DeletionTimestamp != nil {
		return false, errStaleObject
	}
	return true, nil
}
