package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/ownership"
	"github.com/mydeployment-io/mydeployment-operator/internal/revision"
)

// claimed is what the ownership step of a sync found: the claims of
// internal/ownership, the revision decision made on them, and the pods and
// revisions as they will be once the claims are written. Its writes are
// the first phase of act (writeClaims).
type claimed struct {
	// cached are the pods as the cache listed them, before the claim: what
	// status counts when a revision write fails before the pods are claimed.
	cached         []*corev1.Pod
	revisionClaims ownership.Revisions
	podClaims      ownership.Pods
	strays         []ownership.StrayRead
	// revision is the update revision's decision (paused: none).
	revision revision.Decision
	// revisions, current, update and pods are as they will be once
	// writeClaims has written the claims; update is nil before the first
	// revision while paused (or held by the config opt-in).
	revisions       []*appsv1.ControllerRevision
	current, update *appsv1.ControllerRevision
	pods            []*corev1.Pod
	collisionCount  int32
	// newRevision: the update revision is created or renumbered.
	newRevision bool
	// retryAfter, when positive, is when to look again at a revision an
	// opt-in holds (revision.Input.RetryAfter: config access denied).
	retryAfter time.Duration
	// stepsPending are the pods with an in-place step written and not yet
	// in the cache, as the freshness record says once the pods are
	// claimed: not stepped again (rollout.StepsInput.Pending).
	stepsPending map[types.UID]bool
	// mem is the observation's memory with what the claim changed (the
	// revision data, swept); act starts from it (outcome.mem).
	mem memory
}

// claimer is the claim phase: what it reads around the cache (adoption
// re-checks, strays) and the revision history it reads from. It writes
// nothing but the object's possible strays it notes for the next sync.
type claimer struct {
	apiReader client.Reader
	revisions *revision.Store
	// objects holds the namespaces' sweeps; sweepBefore: MyDeployments
	// created before it are swept once (sweep).
	objects     *objects
	sweepBefore time.Time
}

// claim reads what the ownership claims need beyond the pods observe read
// (the orphan revisions, then ours; the strays, around the cache, after
// the pods), claims revisions and pods, and decides the update revision.
// A claim that adopts re-reads the object around the cache first
// (ownership.MayAdopt). Any error means nothing is claimed: the sync
// must stop.
func (cl claimer) claim(ctx context.Context, o *observation) (*claimed, error) {
	c := &claimed{cached: o.pods, pods: o.pods, mem: o.mem}
	if err := cl.readRevisions(ctx, o, c); err != nil {
		return c, err
	}
	if err := cl.decideRevision(o, c); err != nil || c.update == nil {
		return c, err // none: paused before its first revision
	}
	if err := cl.readStrays(ctx, o, c); err != nil {
		return c, err
	}
	claimPods(o, c)
	if len(c.podClaims.Strays) > 0 {
		for uid, st := range c.podClaims.Strays {
			o.obj.NoteStray(uid, st)
		}
		return c, fmt.Errorf("reading %d pod(s) that left the cache failed", len(c.podClaims.Strays))
	}
	if len(c.podClaims.Adopt) > 0 || len(c.revisionClaims.Adopt) > 0 {
		if err := cl.mayAdopt(ctx, o.md); err != nil {
			return c, err
		}
	}
	// What the freshness record says of the claimed pods, read before the
	// plan (which reads the record only through the claims).
	c.stepsPending = stepsPending(o.obj, c.pods, o.now)
	return c, nil
}

// claimPods claims o's pods into c (ownership.ClaimPods) from what observe
// and readStrays read.
func claimPods(o *observation, c *claimed) {
	c.podClaims = ownership.ClaimPods(ownership.PodInput{Owner: o.md, Selector: o.selector, Update: c.update,
		Orphans: o.orphans, Owned: o.pods, Strays: c.strays})
	c.pods = c.podClaims.Owned
}

// readRevisions reads o's orphan revisions, then its own, and claims them
// (ownership.ClaimRevisions) into c: a revision whose adoption (an earlier
// sync's) reaches the cache between the two reads is in the second, not
// in neither.
func (cl claimer) readRevisions(ctx context.Context, o *observation, c *claimed) error {
	orphans, err := cl.revisions.Orphans(ctx, o.md.Namespace, o.selector)
	if err != nil {
		return err
	}
	owned, err := cl.revisions.List(ctx, o.md.Namespace, o.selector, o.md.UID)
	if err != nil {
		return fmt.Errorf("listing revisions: %w", err)
	}
	c.revisionClaims = ownership.ClaimRevisions(orphans, owned)
	c.revisions = c.revisionClaims.Owned
	return nil
}

// decideRevision finds the update revision (paused: keeps the one in
// status, so a template change does not roll) and the current one
// (revision.Decide); a new or renumbered update revision is written by
// writeClaims. The opt-ins that contribute to it (revision.Contributor)
// may change the template it records (config rollouts: the hashes of the
// config observe read) or hold it (a referenced object missing): held, it
// keeps the update revision status names.
func (cl claimer) decideRevision(o *observation, c *claimed) error {
	md := o.md
	c.collisionCount = ptr.Deref(md.Status.CollisionCount, 0)
	if md.Spec.Paused {
		c.keepStatusRevisions(md)
		return nil
	}
	return cl.decideFromTemplate(o, c)
}

// keepStatusRevisions makes the revisions md's status names the update and
// current ones (no current: the update revision).
func (c *claimed) keepStatusRevisions(md *appsv1beta1.MyDeployment) {
	c.update = named(c.revisions, md.Status.UpdateRevision)
	if c.current = named(c.revisions, md.Status.CurrentRevision); c.current == nil {
		c.current = c.update
	}
}

// decideFromTemplate is decideRevision of an object that is not paused:
// the update revision is the template's (revision.Decide), written by
// writeClaims when new or renumbered; see decideRevision for config.
func (cl claimer) decideFromTemplate(o *observation, c *claimed) error {
	md := o.md
	in := revision.Input{Template: &md.Spec.Template}
	for m := range optin.Each[revision.Contributor](o.optIn) {
		m.RevisionInput(&in)
	}
	if in.Held {
		// No revision can say what the pods would run: plan as if the
		// template were unchanged (the update revision status names).
		c.retryAfter = in.RetryAfter
		c.keepStatusRevisions(md)
		return nil
	}
	data, err := c.mem.revisionDataOf(md, in.Template, in.Key)
	if err != nil {
		return fmt.Errorf("syncing revisions: %w", err)
	}
	owner := cl.revisionOwner(md, data)
	owner.Template = in.Template
	d, err := revision.Decide(owner, c.revisions, md.Status.CurrentRevision, c.collisionCount)
	if err != nil {
		return fmt.Errorf("syncing revisions: %w", err)
	}
	c.revision, c.current, c.update = d, d.Current, d.Update
	if d.Create || d.Renumber {
		c.newRevision = true
		c.revisions = withRevision(c.revisions, d.Update)
	}
	return nil
}

// revisionOwner is md as revision records its template (data: its patch).
func (cl claimer) revisionOwner(md *appsv1beta1.MyDeployment, data []byte) revision.Owner {
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

// named is the revision of revs named name, nil if none.
func named(revs []*appsv1.ControllerRevision, name string) *appsv1.ControllerRevision {
	for _, r := range revs {
		if r.Name == name {
			return r
		}
	}
	return nil
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

// errStaleObject is mayAdopt's answer for a copy of a MyDeployment that is
// no longer the object: deleted, being deleted, or replaced by a namesake.
// A sync of it must stop: planning without the orphans it may not adopt
// would create their replacements.
var errStaleObject = errors.New("the MyDeployment was deleted or re-created since the cache read it: not syncing the stale copy")

// mayAdopt re-reads md around the cache: nil if it may adopt
// (ownership.MayAdopt), errStaleObject or the read's error if not.
func (cl claimer) mayAdopt(ctx context.Context, md *appsv1beta1.MyDeployment) error {
	fresh := &appsv1beta1.MyDeployment{}
	if err := cl.apiReader.Get(ctx, client.ObjectKeyFromObject(md), fresh); err != nil {
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
// leaves out counting the pods against the revisions status names (as if
// nothing were claimed: out.revisionsFailed); a failed pod write leaves
// out unclaimed (no status is written from it: counted without the
// orphans it failed to adopt, it would say 0 replicas beside running
// pods). Either way act stops.
func (a actor) writeClaims(ctx context.Context, p *syncPlan, out *outcome) error {
	update, err := a.writeRevisions(ctx, p.md, p.claims, &out.collisionCount)
	if update != nil {
		out.update = update
	}
	if err != nil {
		out.revisionsFailed, out.planned = true, false
		return err
	}
	if err := a.writePodClaims(ctx, p, out); err != nil {
		out.unclaimed = true
		return err
	}
	return nil
}

// writeRevisions adopts the orphan revisions of c, then writes the update
// revision (revision.Store.Apply) and returns it as written (nil: none
// written). A name taken by another revision is recorded under a new
// collision count (*collisionCount), and the sync plans again.
func (a actor) writeRevisions(ctx context.Context, md *appsv1beta1.MyDeployment, c *claimed,
	collisionCount *int32) (*appsv1.ControllerRevision, error) {
	owner := revision.Owner{Object: md, GVK: appsv1beta1.GroupVersion.WithKind("MyDeployment")}
	var errs []error
	for _, rev := range c.revisionClaims.Adopt {
		// Gone: nothing to adopt. Anything else (changed since the cache saw
		// it, a failed write) retries the sync: going on could record a
		// colliding revision under another name while the orphan, whose
		// pods carry its hash, waits to be adopted.
		if _, err := a.revisions.Adopt(ctx, owner, rev); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("adopting revisions: %w", kerrors.NewAggregate(errs))
	}
	d := c.revision
	if !d.Create && !d.Renumber {
		return nil, nil
	}
	planned := d.Update.Name
	update, err := a.revisions.Apply(ctx, d, collisionCount)
	if err != nil {
		return nil, fmt.Errorf("syncing revisions: %w", err)
	}
	a.recorder.Eventf(md, update, corev1.EventTypeNormal, EventNewRevision, "Rollout",
		"Revision %q is now revision %d", update.Name, update.Revision)
	if update.Name != planned {
		return update, fmt.Errorf("revision name %s taken: recorded as %s, planning again", planned, update.Name)
	}
	return update, nil
}

// writePodClaims releases and adopts the pods the claims name. An
// adoption that met a conflict or a lost reply is read back
// (ownership.AdoptedAfterAll); one that did not end ours stops the sync.
// A stray whose release failed is noted again.
func (a actor) writePodClaims(ctx context.Context, p *syncPlan, out *outcome) error {
	var errs []error
	md, claims := p.md, p.claims.podClaims
	for _, pod := range claims.Release {
		if err := a.pods.Release(ctx, md, pod); err != nil {
			if !ownership.InCache(pod) {
				p.obj.NoteStray(pod.UID, ownership.Stray{Name: pod.Name, Owner: md.UID})
			}
			errs = append(errs, err)
		}
	}
	if len(claims.Adopt) == 0 {
		return kerrors.NewAggregate(errs)
	}
	logf.FromContext(ctx).V(1).Info("adopting orphans", "uid", md.UID, "pods", klog.KObjSlice(claims.Adopt))
	update := out.revision(p, p.update.Name)
	for _, pod := range claims.Adopt {
		_, err := a.pods.Adopt(ctx, md, pod, update)
		if apierrors.IsConflict(err) || outcomeUnknown(err) {
			// Changed since the cache saw it, maybe by our own earlier
			// adoption whose reply was lost.
			err = a.adoptedAfterAll(ctx, md, pod, err)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return kerrors.NewAggregate(errs)
}
