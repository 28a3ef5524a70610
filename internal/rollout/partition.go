package rollout

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/mydeployment-io/mydeployment-operator/internal/inplace"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
)

// heldTarget is how many active old-revision pods the partition holds:
// Input.Partition (at most Replicas) when pods of CurrentRevision can be
// created; only as many unlabelled old pods as exist when they cannot; none
// without a partition, under Recreate, or when there is nothing to hold
// back from (no current revision, or it is the update revision).
func (s podSet) heldTarget(in Input) int {
	partition := min(max(int(in.Partition), 0), max(int(in.Replicas), 0))
	switch {
	case partition == 0 || in.Strategy == Recreate || in.CurrentRevision == "" || in.CurrentRevision == in.UpdateRevision:
		return 0
	case s.currentCreatable:
		return partition
	default:
		_, keep := specified(s.old)
		return min(partition, len(keep))
	}
}

// isDoomed says the pod is to be replaced whatever its revision: labelled
// specified-delete, or its in-place update failed.
func isDoomed(pod *corev1.Pod) bool {
	return optin.SpecifiedDelete(pod) || inplace.Failed(pod)
}

// specified splits pods into the doomed ones (isDoomed: to go first) and
// the others, each in the given order.
func specified(pods []*corev1.Pod) (doomed, keep []*corev1.Pod) {
	return splitFunc(pods, isDoomed)
}

// rollingOrder is the order in which a rolling step removes pods of one
// side: unavailable before available (removing those costs no
// availability), each most deletable first; on the held side of a
// partition, pods of revisions other than the current one before those of
// it, so that the held pods converge on the current revision.
func (s podSet) rollingOrder(pods []*corev1.Pod, held bool) []*corev1.Pod {
	unavailable, available := s.byAvailability(pods)
	if held {
		notCurrent := func(p *corev1.Pod) bool { return revisionOf(p) != s.current }
		unavailable = stableFirst(unavailable, notCurrent)
		available = stableFirst(available, notCurrent)
	}
	return slices.Concat(unavailable, available)
}

// scaleOrder is rollingOrder without the availability split: a scale
// ignores availability, as a ReplicaSet's does.
func (s podSet) scaleOrder(pods []*corev1.Pod, held bool) []*corev1.Pod {
	out := s.rank.sorted(pods)
	if held {
		out = stableFirst(out, func(p *corev1.Pod) bool { return isDoomed(p) || revisionOf(p) != s.current })
	}
	return out
}

// stableFirst moves the pods for which first is true to the front, keeping
// the order within each part.
func stableFirst(pods []*corev1.Pod, first func(*corev1.Pod) bool) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(pods))
	for _, p := range pods {
		if first(p) {
			out = append(out, p)
		}
	}
	for _, p := range pods {
		if !first(p) {
			out = append(out, p)
		}
	}
	return out
}

// remover picks the pods a rolling step removes, spending one budget of
// available pods for the whole step.
type remover struct {
	s       podSet
	budget  int
	removed map[*corev1.Pod]bool
}

// take removes up to n pods of candidates, in their order, skipping those
// already removed and, once the budget is spent, available ones.
func (r *remover) take(candidates []*corev1.Pod, n int) []*corev1.Pod {
	var out []*corev1.Pod
	for _, pod := range candidates {
		if len(out) >= n {
			break
		}
		if r.removed[pod] {
			continue
		}
		if IsAvailable(pod, r.s.minReadySeconds, r.s.now) {
			if r.budget == 0 {
				continue
			}
			r.budget--
		}
		r.removed[pod] = true
		out = append(out, pod)
	}
	return out
}

// left is pods minus those removed so far.
func (r *remover) left(pods []*corev1.Pod) []*corev1.Pod {
	return slices.DeleteFunc(slices.Clone(pods), func(p *corev1.Pod) bool { return r.removed[p] })
}

// unavailable counts the pods of pods not available.
func (s podSet) unavailable(pods []*corev1.Pod) int {
	return len(pods) - s.available(pods)
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

// mergeRemovals is Delete and Evict as one Delete list for a plan that
// does not respect budgets: finished pods, then old-revision pods, then
// update-revision pods, deletions before evictions within each.
func mergeRemovals(del, evict []*corev1.Pod, update string) []*corev1.Pod {
	if len(evict) == 0 {
		return del
	}
	group := func(p *corev1.Pod) int {
		switch {
		case isFinished(p):
			return 0
		case revisionOf(p) != update:
			return 1
		default:
			return 2
		}
	}
	out := make([]*corev1.Pod, 0, len(del)+len(evict))
	for g := range 3 {
		for _, list := range [][]*corev1.Pod{del, evict} {
			for _, p := range list {
				if group(p) == g {
					out = append(out, p)
				}
			}
		}
	}
	return out
}
