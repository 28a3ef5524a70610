// Package ownership decides what a MyDeployment owns, as Kubernetes'
// ControllerRefManager decides it for a ReplicaSet or a StatefulSet: which
// of the pods and ControllerRevisions its cache shows are its own, which
// orphans it adopts and which of its own it releases. It reads nothing and
// writes nothing: the controller reads (its observe step, in the order the
// doc of each input names) and writes what a claim says (its act step).
// Every rule of ownership lives here and nowhere else:
//
//   - a pod is ours while we control it and our selector matches it; one
//     that no longer matches is released (a ReplicaSet's selector includes
//     pod-template-hash, so a pod that lost a revision label is released
//     too, though it has left the cache: a stray);
//   - an orphan pod is adopted when the selector matches it, as it will be
//     labelled, and its pod-template-hash is the update revision's;
//   - an orphan ControllerRevision the selector matches is adopted;
//   - a pod that a deleted object of our name still controls holds us back
//     (a namesake's: the garbage collector is releasing or deleting it);
//   - adoption is for the object as it is now (same UID, not being
//     deleted), as RecheckDeletionTimestamp re-reads it;
//   - after a lost reply to an adoption the pod read back tells whether it
//     is ours after all.
package ownership

import (
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/ownerref"
	"github.com/mydeployment-io/mydeployment-operator/internal/revision"
)

// Pods is what a claim of pods says.
type Pods struct {
	// Owned are the pods the owner counts and plans with: those it controls
	// that stay, and the orphans it adopts, labelled as the adoption writes
	// them (of the update revision).
	Owned []*corev1.Pod
	// Adopt are the orphans to adopt, as the cache has them.
	Adopt []*corev1.Pod
	// Release are the pods to release: those the owner controls that its
	// selector no longer matches, cached or strays as read around the cache.
	Release []*corev1.Pod
	// Strays are the strays to remember again for the next sync: their read
	// failed (StrayRead.Err).
	Strays map[types.UID]Stray
}

// Stray is a pod of ours that left the cache (it holds only pods with both
// revision labels), by name, with the UID of the controller its last cached
// state named: remembered from its watch event until a sync reads it around
// the cache.
type Stray struct {
	Name  string
	Owner types.UID
}

// StrayRead is a stray (a pod of ours that left the cache) as read around
// the cache: Pod nil when it is gone, Err when the read failed.
type StrayRead struct {
	UID   types.UID
	Stray Stray
	Pod   *corev1.Pod
	Err   error
}

// PodInput is what a pod claim is made from.
type PodInput struct {
	// Owner is the object claiming; Selector its pod selector.
	Owner    metav1.Object
	Selector labels.Selector
	// Update is the revision orphans are adopted into.
	Update *appsv1.ControllerRevision
	// Orphans are the namespace's cached pods without a controller, and
	// Owned the cached pods Owner controls, read in that order: a pod whose
	// adoption reaches the cache between the two reads is then in Owned
	// (the other way round it would be in neither, and be replaced).
	Orphans, Owned []*corev1.Pod
	// Strays are the strays noted for Owner, read around the cache after
	// both: a pod leaving the cache is noted before the cache drops it, so
	// one that left after the cache was read is a stray by then.
	Strays []StrayRead
}

// ClaimPods claims pods for in.Owner.
func ClaimPods(in PodInput) Pods {
	var c Pods
	var notOurs map[types.UID]bool // most syncs have no stray: no map
	if len(in.Strays) > 0 {
		notOurs = make(map[types.UID]bool, len(in.Strays))
	}
	for _, sr := range in.Strays {
		switch pod := sr.Pod; {
		case sr.Err != nil:
			if c.Strays == nil {
				c.Strays = map[types.UID]Stray{}
			}
			c.Strays[sr.UID] = sr.Stray
		case sr.Stray.Owner != in.Owner.GetUID():
			// A deleted namesake's: the garbage collector's.
		case pod == nil || pod.UID != sr.UID || !controlledBy(pod, in.Owner.GetUID()):
			notOurs[sr.UID] = true // gone, re-created under its name, or another's
		case InCache(pod) && in.Selector.Matches(labels.Set(pod.Labels)):
			// Back in the cache's view: counted from there.
		default:
			notOurs[sr.UID] = true
			c.Release = append(c.Release, pod)
		}
	}
	c.Owned = make([]*corev1.Pod, 0, len(in.Owned))
	for _, pod := range in.Owned {
		switch {
		case notOurs[pod.UID]:
			// Released above, or gone: the cache has not dropped it yet.
		case in.Selector.Matches(labels.Set(pod.Labels)):
			c.Owned = append(c.Owned, pod)
		default:
			c.Release = append(c.Release, pod)
		}
	}
	if len(in.Orphans) == 0 {
		return c // most syncs have no orphan to check: no map of ours
	}
	ours := make(map[types.UID]bool, len(in.Owned))
	for _, pod := range in.Owned {
		ours[pod.UID] = true
	}
	hash := in.Update.Labels[revision.HashLabel]
	for _, pod := range in.Orphans {
		// A pod adopted between the two reads is in both; its orphan copy is stale.
		if !ours[pod.UID] && metav1.GetControllerOfNoCopy(pod) == nil && pod.DeletionTimestamp == nil &&
			pod.Labels[appsv1beta1.PodTemplateHashLabel] == hash && in.Selector.Matches(labels.Set(pod.Labels)) &&
			in.Selector.Matches(Relabelled(pod.Labels, in.Update.Name)) {
			c.Adopt = append(c.Adopt, pod)
			c.Owned = append(c.Owned, AsAdopted(pod, in.Owner, in.Update.Name))
		}
	}
	return c
}

// InCache reports whether pod carries both labels the manager's pod cache
// selects on; a pod of ours without one is a stray.
func InCache(pod *corev1.Pod) bool {
	_, rev := pod.Labels[appsv1beta1.RevisionLabel]
	_, hash := pod.Labels[appsv1beta1.PodTemplateHashLabel]
	return rev && hash
}

// Relabelled is labels with the revision label set to name, as adoption
// writes them (a selector on that label would otherwise release the pod
// it just adopted).
func Relabelled(podLabels map[string]string, name string) labels.Set {
	out := make(labels.Set, len(podLabels)+1)
	for k, v := range podLabels {
		out[k] = v
	}
	out[appsv1beta1.RevisionLabel] = name
	return out
}

// AsAdopted is pod as adopting it into revision updateRevision makes it:
// owner its controller, labelled with the revision. pod is not modified.
func AsAdopted(pod *corev1.Pod, owner metav1.Object, updateRevision string) *corev1.Pod {
	out := pod.DeepCopy()
	out.Labels = Relabelled(pod.Labels, updateRevision)
	out.OwnerReferences = ownerref.WithController(pod.OwnerReferences,
		*metav1.NewControllerRef(owner, appsv1beta1.GroupVersion.WithKind("MyDeployment")))
	return out
}

// Revisions is what a claim of ControllerRevisions says.
type Revisions struct {
	// Owned are the owner's revisions, the orphans it adopts among them,
	// oldest first.
	Owned []*appsv1.ControllerRevision
	// Adopt are the orphans to adopt.
	Adopt []*appsv1.ControllerRevision
}

// ClaimRevisions claims revisions: orphans, the namespace's revisions the
// owner's selector matches without a controller, read before owned, the
// owner's own (a revision adopted between the two reads is then in owned).
func ClaimRevisions(orphans, owned []*appsv1.ControllerRevision) Revisions {
	c := Revisions{Owned: slices.Clone(owned)}
	for _, o := range orphans {
		if !slices.ContainsFunc(owned, func(r *appsv1.ControllerRevision) bool { return r.Name == o.Name }) {
			c.Adopt = append(c.Adopt, o)
			c.Owned = append(c.Owned, o)
		}
	}
	revision.Sort(c.Owned)
	return c
}

// MayAdopt reports whether owner, as re-read around the cache (fresh, nil
// if gone), may adopt: it is the object claimed (same UID, not a deleted
// namesake) and is not being deleted.
func MayAdopt(owner metav1.Object, fresh metav1.Object) bool {
	return fresh != nil && fresh.GetUID() == owner.GetUID() && fresh.GetDeletionTimestamp() == nil
}

// AdoptedAfterAll reads an adoption whose write failed with a conflict or
// a lost reply from the pod read back (fresh): the pod adopted (ours now,
// the same pod, not terminating), gone (nil, false: another's, terminating,
// re-created), or still an orphan (nil, true: the adoption must be retried
// before planning, or the plan would create its replacement).
func AdoptedAfterAll(pod, fresh *corev1.Pod, owner types.UID) (adopted *corev1.Pod, orphan bool) {
	ref := metav1.GetControllerOfNoCopy(fresh)
	switch {
	case fresh.UID != pod.UID || fresh.DeletionTimestamp != nil:
		return nil, false
	case ref == nil:
		return nil, true
	case ref.UID != owner:
		return nil, false
	}
	return fresh, false
}

// HeldByNamesake returns the names of the pods that hold owner back: live
// pods (controlled, per the cache, by an object of owner's name: named)
// whose controller is another object, a deleted namesake, and that
// selector matches. The garbage collector is releasing them
// (--cascade=orphan: they become orphans, ours to adopt) or deleting
// them; until the cache says which, planning would create their
// replacements beside them. The caller bounds the wait.
func HeldByNamesake(owner types.UID, selector labels.Selector, named []*corev1.Pod) []string {
	var held []string
	for _, pod := range named {
		if !controlledBy(pod, owner) && pod.DeletionTimestamp == nil && selector.Matches(labels.Set(pod.Labels)) {
			held = append(held, pod.Name)
		}
	}
	return held
}

func controlledBy(obj metav1.Object, uid types.UID) bool {
	ref := metav1.GetControllerOfNoCopy(obj)
	return ref != nil && ref.UID == uid
}
