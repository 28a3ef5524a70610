package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/inplace"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/ownership"
	"github.com/mydeployment-io/mydeployment-operator/internal/podcontrol"
	"github.com/mydeployment-io/mydeployment-operator/internal/podwatch"
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
	return decideFromTemplate(o, c)
}

// keepStatusRevisions makes the revisions md's status names the update and
// current ones (no current: the update revision).
func (c *claimed) keepStatusRevisions(md *appsv1beta1.MyDeployment) {
	c.update = named(c.revisions, md.Status.UpdateRevision)
	if c.current = named(c.revisions, md.Status.CurrentRevision); c.current == nil {
		c.current = c.update
	}
}

// decideFromTemplate is decideRevision of an object that is not paused
// (and of a hand-over's, paused or not): the update revision is the
// template's (revision.Decide), written by act when new or renumbered;
// see decideRevision for config. Pure: it reads c and the observation.
func decideFromTemplate(o *observation, c *claimed) error {
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
	owner := revisionOwner(md, data)
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
func revisionOwner(md *appsv1beta1.MyDeployment, data []byte) revision.Owner {
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

// stepsPending are the gated pods with an in-place step written that the
// cache does not show yet (freshness.Record.StepPending): read by claim,
// so that the plan reads the record only through the claims.
func stepsPending(obj *object, pods []*corev1.Pod, now time.Time) map[types.UID]bool {
	var pending map[types.UID]bool
	for _, pod := range pods {
		if inplace.HasGate(pod) && obj.StepPending(pod, now) {
			if pending == nil {
				pending = map[types.UID]bool{}
			}
			pending[pod.UID] = true
		}
	}
	return pending
}
