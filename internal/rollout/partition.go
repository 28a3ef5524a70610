package rollout

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// Partition (RollingUpdate, Partition > 0, CurrentRevision neither empty
// nor UpdateRevision): the rolling step has two sides with a target
// each, Replicas-held pods of the update revision and held pods of old
// revisions, held = Partition (only the old pods that exist if
// CurrentRevision is not in Revisions). Each side short of its target gets
// pods created (the held side of CurrentRevision), within
// Replicas+MaxSurge; each side beyond it has pods removed as old pods are
// above, within the same availability budget, held back by the other
// side's unavailable pods. So lowering the partition moves pods forward,
// raising it moves updated pods back, and no step takes the held side
// below its target. Old pods of revisions other than CurrentRevision go
// first. A scaling-down event keeps the partition's meaning instead of
// Deployment's proportional scaling: each side is brought to its share,
// old pods first, to Replicas in all, ignoring MaxUnavailable as a scale
// does; a scaling-up event is the rolling step creating towards the shares.
// Once both sides are at their targets the plan is empty
// (ReasonPartitionHeld). Paused, the proportional scaling above applies.

// heldTarget is how many active old-revision pods the partition holds:
// Input.Partition, or the canary step's (s.canary), at most Replicas, when
// pods of CurrentRevision can be created; only as many unlabelled old pods
// as exist when they cannot; none
// without a partition, under Recreate, or when there is nothing to hold
// back from (no current revision, or it is the update revision).
func (s podSet) heldTarget(in Input) int {
	partition := min(max(int(in.Partition), 0), max(int(in.Replicas), 0))
	if in.Canary != nil {
		partition = 0
		if s.canary != nil {
			partition = min(max(int(s.canary.Held), 0), max(int(in.Replicas), 0))
		}
	}
	switch {
	case partition == 0 || in.Strategy == Recreate || in.CurrentRevision == "" || in.CurrentRevision == in.UpdateRevision:
		return 0
	case s.currentCreatable:
		return partition
	default:
		_, keep := s.splitDoomed(s.old)
		return min(partition, len(keep))
	}
}

// scaleOrder is rollingOrder without the availability split: a scale
// ignores availability, as a ReplicaSet's does.
func (s podSet) scaleOrder(pods []*corev1.Pod, held bool) []*corev1.Pod {
	out := s.rank.sorted(pods)
	if held {
		out = stableFirst(out, func(p *corev1.Pod) bool { return s.rank.doomed(p) || revisionOf(p) != s.current })
	}
	return out
}

// planPartitionScale is a scale-down while partitioned (a scaling event,
// not paused): instead of Deployment's proportional scaling, each side is
// brought down towards its share, Replicas-held updated pods and held old
// ones, old pods first, to Replicas in all, ignoring availability as a
// scale does; labelled pods go first. A scale-up is left to the rolling
// step, which creates towards the same shares within maxSurge. It returns
// false when there is nothing to remove; what the pods are sized for stays
// as recorded while a step is cut by MaxBurst.
func planPartitionScale(s podSet, l limits) (Plan, *Size, bool) {
	remove := s.active() - l.replicas
	if int(l.sizedFor.Replicas) < l.replicas || remove <= 0 {
		return Plan{}, nil, false
	}
	target := l.replicas - s.held
	fromOld := min(remove, max(0, len(s.old)-s.held))
	fromNew := min(remove-fromOld, max(0, len(s.updated)-target))
	if fromOld+fromNew == 0 {
		return Plan{}, nil, false
	}
	p := Plan{
		Delete: slices.Concat(s.scaleOrder(s.old, true)[:fromOld], s.rank.sorted(s.updated)[:fromNew]),
		Reason: ReasonPartitionScaleDown,
	}
	var sized *Size
	if fromOld+fromNew > l.deleteBurst {
		sized = l.sizedFor
	}
	return p, sized, true
}
