package rollout

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/inplace"
)

// Removal: the pieces every strategy shares to choose the pods it removes.
//
// Specified delete: an active pod labelled specified-delete (or whose
// in-place update failed: isDoomed) ranks first for every deletion, so a
// scale-down takes it first. Otherwise it does not count towards its
// side's target (except in a scaling-down event: a pod beyond Replicas may
// be its replacement), so a RollingUpdate replaces it: its replacement (of
// the update revision, or of CurrentRevision for a held pod) is created
// first where Replicas+MaxSurge allows, then it is removed within
// MaxUnavailable, before any other pod of its side. Recreate, with no old
// pod left, removes it first and creates its replacement once it is no
// longer active, so that a removal that fails leaves no pod too many.
//
// RespectPDB: the pods a rollout step or a specified delete replaces are
// in Plan.Evict instead of Plan.Delete; scale-downs, surplus and finished
// pods stay in Delete (mergeRemovals makes one list without it).

// maxScaledDown is reconcileOldReplicaSets' bound for removing candidates:
// the pods left after the step, less the unavailable ones that stay, must
// not fall below Replicas-MaxUnavailable.
func (r *remover) maxScaledDown(s podSet, active int, l limits, candidates []*corev1.Pod) int {
	staying := r.left(slices.Concat(s.updated, s.old))
	staying = slices.DeleteFunc(staying, func(p *corev1.Pod) bool { return slices.Contains(candidates, p) })
	return active - len(r.removed) - l.minAvailable - s.unavailable(staying)
}

// splitFunc splits pods by f, each part in the given order.
func splitFunc(pods []*corev1.Pod, f func(*corev1.Pod) bool) (yes, no []*corev1.Pod) {
	for _, p := range pods {
		if f(p) {
			yes = append(yes, p)
		} else {
			no = append(no, p)
		}
	}
	return yes, no
}

// isDoomed says the pod is to be replaced whatever its revision: labelled
// specified-delete ("true", as chosen pods are: the caller passes only its
// own pods), or its in-place update failed.
func isDoomed(pod *corev1.Pod) bool {
	return pod.Labels[appsv1beta1.SpecifiedDeleteLabel] == "true" || inplace.Failed(pod)
}

// splitDoomed splits pods into the doomed ones (ranker.doomed: to go first)
// and the others, each in the given order.
func (s podSet) splitDoomed(pods []*corev1.Pod) (doomed, keep []*corev1.Pod) {
	return splitFunc(pods, s.rank.doomed)
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
	s      podSet
	budget int
	// spare is how many available pods beyond Replicas are left after the
	// removals so far: an available pod on a draining node goes only
	// while it is positive (drain.go).
	spare   int
	removed map[*corev1.Pod]bool
}

// take removes up to n pods of candidates, in their order, skipping those
// already removed, once the budget is spent available ones, and available
// ones on a draining node while no pod is spare.
func (r *remover) take(candidates []*corev1.Pod, n int) []*corev1.Pod {
	return r.takeIf(candidates, n, true)
}

// takeInstead is take without the draining nodes' rule: the pods it
// removes take the place of pods the step removes anyway.
func (r *remover) takeInstead(candidates []*corev1.Pod, n int) []*corev1.Pod {
	return r.takeIf(candidates, n, false)
}

// takeIf is take, with the draining nodes' rule when makeBeforeBreak.
func (r *remover) takeIf(candidates []*corev1.Pod, n int, makeBeforeBreak bool) []*corev1.Pod {
	var out []*corev1.Pod
	for _, pod := range candidates {
		if len(out) >= n {
			break
		}
		if r.removed[pod] {
			continue
		}
		if IsAvailable(pod, r.s.minReadySeconds, r.s.now) {
			if r.budget == 0 || makeBeforeBreak && r.spare <= 0 && r.s.rank.onDrainingNode(pod) {
				continue
			}
			r.budget--
			r.spare--
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

// drainedLeft is the pods of doomed not yet removed that run on a draining
// node, ranked: each may go in place of a pod the step removes anyway
// (takeInstead) rather than wait for a spare pod (drain.go).
func (r *remover) drainedLeft(doomed []*corev1.Pod) []*corev1.Pod {
	return r.s.rank.sorted(r.s.drained(r.left(doomed)))
}

// unavailable counts the pods of pods not available.
func (s podSet) unavailable(pods []*corev1.Pod) int {
	return len(pods) - s.available(pods)
}

// mergeRemovals is Delete and Evict as one Delete list for a plan that
// does not respect budgets: finished pods, then old pods (isOld), then
// update-revision pods (and pods moving to it in place), deletions before
// evictions within each.
func mergeRemovals(del, evict []*corev1.Pod, isOld func(*corev1.Pod) bool) []*corev1.Pod {
	if len(evict) == 0 {
		return del
	}
	group := func(p *corev1.Pod) int {
		switch {
		case isFinished(p):
			return 0
		case isOld(p):
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
