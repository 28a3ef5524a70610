package controller

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/configref"
	"github.com/mydeployment-io/mydeployment-operator/internal/freshness"
	"github.com/mydeployment-io/mydeployment-operator/internal/ownership"
	"github.com/mydeployment-io/mydeployment-operator/internal/revision"
)

// claimed is what the ownership step of a sync found: the claims of
// internal/ownership and the revision decision made on them. Its writes
// are the first phase of act (writeClaims).
type claimed struct {
	// cached are s's pods as the cache listed them, before the claim: what
	// status counts when a revision write fails before the pods are claimed.
	cached    []*corev1.Pod
	revisions ownership.Revisions
	pods      ownership.Pods
	strays    []ownership.StrayRead
	// revision is the update revision's decision (paused: none).
	revision revision.Decision
}

// claim reads what the ownership claims need beyond the pods observe read
// (the orphan revisions, then ours; the strays, around the cache, after
// the pods), claims revisions and pods, and decides the update revision:
// s.revisions, s.current, s.update and s.pods are as they will be once
// writeClaims has written the claims. A claim that adopts re-reads the
// object around the cache first (ownership.MayAdopt). Any error means s
// is not claimed: the sync must stop.
func (r *MyDeploymentReconciler) claim(ctx context.Context, s *scope) error {
	if err := r.readRevisions(ctx, s); err != nil {
		return err
	}
	if err := r.decideRevision(ctx, s); err != nil || s.update == nil {
		return err // none: paused before its first revision
	}
	if err := r.readStrays(ctx, s); err != nil {
		return err
	}
	r.claimPods(s)
	if len(s.claim.pods.Strays) > 0 {
		for uid, st := range s.claim.pods.Strays {
			s.obj.NoteStray(uid, st)
		}
		return fmt.Errorf("reading %d pod(s) that left the cache failed", len(s.claim.pods.Strays))
	}
	if len(s.claim.pods.Adopt) > 0 || len(s.claim.revisions.Adopt) > 0 {
		return r.mayAdopt(ctx, s.md)
	}
	return nil
}

// readRevisions reads s's orphan revisions, then its own, and claims them
// (ownership.ClaimRevisions): a revision whose adoption (an earlier
// sync's) reaches the cache between the two reads is in the second, not
// in neither.
func (r *MyDeploymentReconciler) readRevisions(ctx context.Context, s *scope) error {
	orphans, err := r.Revisions.Orphans(ctx, s.md.Namespace, s.selector)
	if err != nil {
		return err
	}
	owned, err := r.Revisions.List(ctx, s.md.Namespace, s.selector, s.md.UID)
	if err != nil {
		return fmt.Errorf("listing revisions: %w", err)
	}
	s.claim.revisions = ownership.ClaimRevisions(orphans, owned)
	s.revisions = s.claim.revisions.Owned
	return nil
}

// decideRevision finds the update revision (paused: keeps the one in
// status, so a template change does not roll) and the current one
// (revision.Decide); a new or renumbered update revision is written by
// writeClaims. Opted into rollouts on config changes, the template it
// records carries the hashes of the config it reads (config.go); with a
// referenced object missing it keeps the update revision status names.
func (r *MyDeploymentReconciler) decideRevision(ctx context.Context, s *scope) error {
	md := s.md
	s.collisionCount = ptr.Deref(md.Status.CollisionCount, 0)
	if md.Spec.Paused {
		s.update = named(s.revisions, md.Status.UpdateRevision)
		if s.current = named(s.revisions, md.Status.CurrentRevision); s.current == nil {
			s.current = s.update
		}
		return nil
	}
	template, config := &md.Spec.Template, ""
	if s.optIn.RolloutOnConfigChange {
		var err error
		if config, s.configHold, err = r.configOf(ctx, s.config, md); err != nil {
			return fmt.Errorf("syncing revisions: %w", err)
		}
		if s.configHold != nil {
			if s.configHold.Reason == appsv1beta1.ReasonConfigAccessDenied {
				// Look again once the watch asks for access again: nothing
				// else syncs this object when a grant appears.
				s.retryAfter = r.config.poll
			}
			// No revision can say what the pods would read: plan as if the
			// template were unchanged (the update revision status names).
			s.update = named(s.revisions, md.Status.UpdateRevision)
			if s.current = named(s.revisions, md.Status.CurrentRevision); s.current == nil {
				s.current = s.update
			}
			return nil
		}
		if config != "" { // nothing referenced: the template as it is
			template = configref.WithHash(template, config)
		}
	}
	data, err := s.obj.revisionDataOf(md, template, config)
	if err != nil {
		return fmt.Errorf("syncing revisions: %w", err)
	}
	owner := r.revisionOwner(md, data)
	owner.Template = template
	d, err := revision.Decide(owner, s.revisions, md.Status.CurrentRevision, s.collisionCount)
	if err != nil {
		return fmt.Errorf("syncing revisions: %w", err)
	}
	s.claim.revision, s.current, s.update = d, d.Current, d.Update
	if d.Create || d.Renumber {
		s.newRevision = true
		s.revisions = withRevision(s.revisions, d.Update)
	}
	return nil
}

// revisionOwner is md as revision records its template (data: its patch).
func (r *MyDeploymentReconciler) revisionOwner(md *appsv1beta1.MyDeployment, data []byte) revision.Owner {
	owner := revision.Owner{
		Object:   md,
		GVK:      appsv1beta1.GroupVersion.WithKind("MyDeployment"),
		Selector: md.Spec.Selector,
		Template: &md.Spec.Template,
		Data:     data,
	}
	if cause, ok := md.Annotations[appsv1beta1.ChangeCauseAnnotation]; ok {
		owner.Annotations = map[string]string{appsv1beta1.ChangeCauseAnnotation: cause}
	}
	return owner
}

// withRevision is revs with rev in place of the revision of its name.
func withRevision(revs []*appsv1.ControllerRevision, rev *appsv1.ControllerRevision) []*appsv1.ControllerRevision {
	out := make([]*appsv1.ControllerRevision, 0, len(revs)+1)
	for _, r := range revs {
		if r.Name != rev.Name {
			out = append(out, r)
		}
	}
	out = append(out, rev)
	revision.Sort(out)
	return out
}

// claimPods claims s's pods (ownership.ClaimPods) from what observe and
// readStrays read.
func (r *MyDeploymentReconciler) claimPods(s *scope) {
	s.claim.cached = s.pods
	s.claim.pods = ownership.ClaimPods(ownership.PodInput{Owner: s.md, Selector: s.selector, Update: s.update,
		Orphans: s.orphans, Owned: s.pods, Strays: s.claim.strays})
	s.pods = s.claim.pods.Owned
}

// errStaleObject is mayAdopt's answer for a copy of a MyDeployment that is
// no longer the object: deleted, being deleted, or replaced by a namesake.
// A sync of it must stop: planning without the orphans it may not adopt
// would create their replacements.
var errStaleObject = errors.New("the MyDeployment was deleted or re-created since the cache read it: not syncing the stale copy")

// mayAdopt re-reads md around the cache: nil if it may adopt
// (ownership.MayAdopt), errStaleObject or the read's error if not.
func (r *MyDeploymentReconciler) mayAdopt(ctx context.Context, md *appsv1beta1.MyDeployment) error {
	fresh := &appsv1beta1.MyDeployment{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(md), fresh); err != nil {
		if apierrors.IsNotFound(err) {
			return errStaleObject
		}
		return fmt.Errorf("re-reading before adoption: %w", err)
	}
	if !ownership.MayAdopt(md, fresh) {
		return errStaleObject
	}
	return nil
}

// errChangedWhileClaiming stops a sync whose adoption found the pod taken
// or gone: the plan counted it as ours.
var errChangedWhileClaiming = errors.New("a pod changed while it was adopted: planning again")

// writeClaims writes what the claims decided, the first phase of act:
// the orphan revisions adopted, the update revision created or
// renumbered, then the pods released and adopted. A failed revision write
// leaves s counting its pods against the revisions status names (as if
// nothing were claimed); a failed pod write leaves s unclaimed (no status
// is written from it: counted without the orphans it failed to adopt, it
// would say 0 replicas beside running pods). Either way act stops.
func (r *MyDeploymentReconciler) writeClaims(ctx context.Context, s *scope) error {
	if err := r.writeRevisions(ctx, s); err != nil {
		s.current, s.update = named(s.revisions, s.md.Status.CurrentRevision), named(s.revisions, s.md.Status.UpdateRevision)
		s.pods, s.planned, s.newRevision = s.claim.cached, false, false
		return err
	}
	if err := r.writePodClaims(ctx, s); err != nil {
		s.unclaimed = true
		return err
	}
	return nil
}

// writeRevisions adopts the orphan revisions, then writes the update
// revision (revision.Store.Apply). A name taken by another revision is
// recorded under a new collision count, and the sync plans again.
func (r *MyDeploymentReconciler) writeRevisions(ctx context.Context, s *scope) error {
	owner := revision.Owner{Object: s.md, GVK: appsv1beta1.GroupVersion.WithKind("MyDeployment")}
	var errs []error
	for _, rev := range s.claim.revisions.Adopt {
		// Gone: nothing to adopt. Anything else (changed since the cache saw
		// it, a failed write) retries the sync: going on could record a
		// colliding revision under another name while the orphan, whose
		// pods carry its hash, waits to be adopted.
		if _, err := r.Revisions.Adopt(ctx, owner, rev); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("adopting revisions: %w", kerrors.NewAggregate(errs))
	}
	d := s.claim.revision
	if !d.Create && !d.Renumber {
		return nil
	}
	planned := d.Update.Name
	update, err := r.Revisions.Apply(ctx, d, &s.collisionCount)
	if err != nil {
		return fmt.Errorf("syncing revisions: %w", err)
	}
	s.revisions = withRevision(s.revisions, update)
	if s.current.Name == update.Name {
		s.current = update
	}
	s.update = update
	r.Recorder.Eventf(s.md, update, corev1.EventTypeNormal, EventNewRevision, "Rollout",
		"Revision %q is now revision %d", update.Name, update.Revision)
	if update.Name != planned {
		return fmt.Errorf("revision name %s taken: recorded as %s, planning again", planned, update.Name)
	}
	return nil
}

// writePodClaims releases and adopts the pods the claim names. An
// adoption that met a conflict or a lost reply is read back
// (ownership.AdoptedAfterAll); one that did not end ours stops the sync.
// A stray whose release failed is noted again.
func (r *MyDeploymentReconciler) writePodClaims(ctx context.Context, s *scope) error {
	var errs []error
	for _, pod := range s.claim.pods.Release {
		if err := r.Pods.Release(ctx, s.md, pod); err != nil {
			if !ownership.InCache(pod) {
				s.obj.NoteStray(pod.UID, freshness.Stray{Name: pod.Name, Owner: s.md.UID})
			}
			errs = append(errs, err)
		}
	}
	if len(s.claim.pods.Adopt) > 0 {
		logf.FromContext(ctx).V(1).Info("adopting orphans", "uid", s.md.UID, "pods", klog.KObjSlice(s.claim.pods.Adopt))
	}
	for _, pod := range s.claim.pods.Adopt {
		_, err := r.Pods.Adopt(ctx, s.md, pod, s.update)
		if apierrors.IsConflict(err) || outcomeUnknown(err) {
			// Changed since the cache saw it, maybe by our own earlier
			// adoption whose reply was lost.
			err = r.adoptedAfterAll(ctx, s, pod, err)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return kerrors.NewAggregate(errs)
}
