package controller

import (
	"context"
	"fmt"

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
// Revisions of other controllers are never touched. Adopted revisions join
// s.revisions.
func (r *MyDeploymentReconciler) claimRevisions(ctx context.Context, s *scope) error {
	orphans, err := r.Revisions.Orphans(ctx, s.md.Namespace, s.selector)
	if err != nil || len(orphans) == 0 {
		return err
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

// mayAdopt re-reads md around the cache and reports whether it may adopt:
// it is the object we synced (same UID, not a deleted namesake) and is not
// being deleted, as the ControllerRefManager's RecheckDeletionTimestamp.
func (r *MyDeploymentReconciler) mayAdopt(ctx context.Context, md *appsv1beta1.MyDeployment) (bool, error) {
	fresh := &appsv1beta1.MyDeployment{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(md), fresh); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("re-reading before adoption: %w", err)
	}
	return fresh.UID == md.UID && fresh.DeletionTimestamp == nil, nil
}
