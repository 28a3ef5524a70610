package rollout

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Input is everything the planner needs.
type Input struct {
	// Replicas is the desired number of pods; negative counts as 0.
	Replicas int32
	// Recreate selects the Recreate strategy; otherwise RollingUpdate.
	Recreate bool
	// MaxSurge and MaxUnavailable are absolute counts, already resolved (see
	// ResolveFenceposts); ignored by Recreate. Negative counts as 0,
	// MaxUnavailable is clamped to Replicas, and 0/0 counts as 0/1 so a
	// rollout can never stall on its own settings.
	MaxSurge       int32
	MaxUnavailable int32
	// MinReadySeconds is how long a pod must be Ready to count as available.
	MinReadySeconds int32
	// Paused stops the rollout; scaling still happens (see Compute).
	Paused bool
	// UpdateRevision is the ControllerRevision name new pods are created
	// from; pods whose controller-revision-hash label differs are "old".
	UpdateRevision string
	// Pods are all pods the MyDeployment owns, including terminating ones
	// (DeletionTimestamp set) and finished ones (phase Succeeded/Failed).
	// Nil entries are ignored; order does not matter.
	Pods []*corev1.Pod
	// Now is the reference time for availability (minReadySeconds).
	Now time.Time
}

// Plan is what to do now. Executing it in any order (creates before, after or
// among deletes) keeps the promises stated on Compute.
type Plan struct {
	// Create is how many pods of Input.UpdateRevision to create now; never negative.
	Create int32
	// Delete lists the pods to delete now, in this order, each at most once,
	// each taken from Input.Pods and none already terminating: finished pods
	// first, then old-revision pods, then update-revision pods.
	Delete []*corev1.Pod
	// RequeueAfter, when positive, is when the next ready pod becomes
	// available (MinReadySeconds); requeue then rather than poll.
	RequeueAfter time.Duration
	// Reason names the step, for logs and events.
	Reason Reason
}

// Reason is a short machine-readable name of the step a Plan takes.
type Reason string

// Steps a plan can take.
const (
	// ReasonInSync: the active pods match the spec; nothing but cleanup of finished pods to do.
	ReasonInSync Reason = "InSync"
	// ReasonScaleUp / ReasonScaleDown: plain scaling, no old-revision pod involved.
	ReasonScaleUp   Reason = "ScaleUp"
	ReasonScaleDown Reason = "ScaleDown"
	// ReasonRollingUpdate: a RollingUpdate step creates and/or deletes pods.
	ReasonRollingUpdate Reason = "RollingUpdate"
	// ReasonRollingUpdateWait: old pods remain but maxSurge/maxUnavailable allow no step until more pods become available.
	ReasonRollingUpdateWait Reason = "RollingUpdate:WaitForAvailability"
	// ReasonRecreateDeleteOld: Recreate deletes every active old-revision pod.
	ReasonRecreateDeleteOld Reason = "Recreate:DeleteOldPods"
	// ReasonRecreateWait: Recreate waits for terminating old-revision pods to be gone before creating.
	ReasonRecreateWait Reason = "Recreate:WaitForOldPodsGone"
	// ReasonPausedScaleUp / ReasonPausedScaleDown: scaling while paused; no rollout step.
	ReasonPausedScaleUp   Reason = "Paused:ScaleUp"
	ReasonPausedScaleDown Reason = "Paused:ScaleDown"
	// ReasonPaused: paused with the right number of pods (or creation withheld by Recreate).
	ReasonPaused Reason = "Paused"
)

// Compute plans the next step for the MyDeployment described by in. It is
// deterministic, reads no clock and does not modify its input.
//
// Always: finished pods that are not terminating are deleted (they never run
// again; like a ReplicaSet the planner replaces them, unlike it, it does not
// leave them to pod garbage collection) and never count as replicas;
// terminating pods never count towards Replicas+MaxSurge; a finished or
// terminating pod is never available.
//
// RollingUpdate, not paused, with active old-revision pods (Deployment's
// rolloutRolling): pods of the update revision are created up to
// min(Replicas+MaxSurge-active, Replicas-updated); old pods are deleted as
// reconcileOldReplicaSets does, unavailable ones first; update-revision pods
// beyond Replicas are deleted, unavailable ones first. Promises: active pods
// plus Create never exceed Replicas+MaxSurge unless they already did before
// (then Create is 0), and the available pods deleted never bring availability
// below Replicas-MaxUnavailable (none is deleted if it already was below).
//
// Recreate, not paused (rolloutRecreate): while any old-revision pod that is
// not finished exists, active or terminating, the active ones are deleted and
// nothing is created; update-revision pods beyond Replicas are deleted.
//
// Paused: no rollout step, only scaling, as Deployment's sync does. Pods
// missing up to Replicas are created (of the update revision; under Recreate
// only once no old pod may run). Surplus pods are deleted old-revision first,
// then by ranking, where the allowed size is Replicas+MaxSurge for a
// RollingUpdate caught mid-way (several active revisions, update revision not
// yet saturated with Replicas available pods) and Replicas otherwise; so
// pausing never deletes an available old pod to make room for a new one.
//
// Otherwise (no active old pods, or Recreate with no old pod left) the
// update-revision pods are scaled to Replicas as a ReplicaSet would: the
// surplus goes by ranking alone, whatever MaxUnavailable says.
//
// Within a group, victims are chosen by the package's deletion ranking;
// RollingUpdate takes unavailable pods before available ones whatever their
// rank, so that the availability budget is spent only when needed.
func Compute(in Input) Plan {
	s := newPodSet(in)
	l := newLimits(in)
	var p Plan
	switch {
	case in.Paused:
		p = planPaused(s, l, in.Recreate)
	case in.Recreate && s.oldUnfinished > 0:
		p = planRecreate(s, l)
	case !in.Recreate && len(s.old) > 0:
		p = planRolling(s, l)
	default:
		p = planScale(s, l)
	}
	p.Delete = slices.Concat(s.finished, p.Delete)
	p.RequeueAfter = s.requeueAfter()
	return p
}

// limits are the Input's numbers, normalized and widened so sums cannot overflow.
type limits struct {
	replicas       int
	maxSurge       int
	maxUnavailable int
	minAvailable   int
}

// newLimits applies the normalization documented on Input.
func newLimits(in Input) limits {
	replicas := max(int(in.Replicas), 0)
	surge := max(int(in.MaxSurge), 0)
	unavailable := max(int(in.MaxUnavailable), 0)
	if surge == 0 && unavailable == 0 {
		unavailable = 1 // same rule as ResolveFenceposts, for callers that skipped it
	}
	unavailable = min(unavailable, replicas) // deploymentutil.MaxUnavailable clamps too
	return limits{
		replicas:       replicas,
		maxSurge:       surge,
		maxUnavailable: unavailable,
		minAvailable:   replicas - unavailable,
	}
}
