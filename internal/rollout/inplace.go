package rollout

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/mydeployment-io/mydeployment-operator/internal/inplace"
)

// In place (Input.InPlace) is how a RollingUpdate step moves the old pods
// that leave their side: those that can move in place (their revision is
// listed, they carry the gate) are updated in place rather than replaced.
// No pod is created for them, so they need no surge, and starting one
// spends the availability budget as removing it would (it is unavailable
// until it runs the new template), so at most MaxUnavailable are under way
// at once, held back by unavailable update-revision pods as removals are.
// With MaxUnavailable 0 no pod may become unavailable, so one pod of the
// update revision is created first (within MaxSurge), pods move one at a
// time, and the last old pod is removed rather than moved (the surge pod
// took its place); under a
// partition it replaces the pods instead (surge pods would crowd the
// updated side's share). A pod whose in-place update failed
// (inplace.Failed) is replaced as a specified-delete pod is.
//
// A start is one write, the pod's gate False; the pod keeps the labels of
// its old revision until the controller's next write to it, the spec
// patch that carries the new images and the new revision's labels at once
// (so its labels say what it runs at every moment). Between the two, the
// pod is on its way (underWay): newPodSet puts it on the updated side,
// where it counts as an update-revision pod that is not available. So it
// is not started again, it is not removed as an "unavailable old pod
// first", no surge pod is created for it, and it holds back further
// starts and removals as any unavailable updated pod does. If the update
// revision changes meanwhile, it is on its way to the new one as long as
// its revision can reach that one in place; otherwise it is an old pod
// again, and the controller ends its update where it stands (the gate
// True again, nothing restarted) unless the step removes it. Paused, no
// pod is on its way: an update begun ends the same way (the pod's spec
// was not touched), and the rollout goes on from there once resumed.
//
// planRolling asks this file three things: which leaving pods move
// (splitLeaving), how many surge pods moving needs (inPlaceSurge), and
// which moves start within the budget (startInPlace); newPodSet asks a
// fourth, which old pods are already on their way (underWay).

// splitLeaving splits the old pods leaving their side into those that move
// in place and those replaced by new pods. keepNew is how many pods the
// updated side keeps, target its share.
func (s podSet) splitLeaving(l limits, leaving []*corev1.Pod, keepNew, target int) (moving, replaced []*corev1.Pod) {
	switch {
	case l.maxUnavailable == 0 && s.held > 0:
		// No pod may become unavailable, and surge pods (inPlaceSurge)
		// would crowd the updated side's share: replace them.
		return nil, leaving
	case keepNew >= target:
		// The updated side is full (with maxUnavailable 0, the surge pod
		// made it so): the old pods left are surplus and are removed.
		// Moving one would only make an updated pod beyond Replicas,
		// removed in turn.
		return nil, leaving
	}
	return splitFunc(leaving, s.movable)
}

// inPlaceSurge is how many pods of the update revision a step must create
// for moving pods to start: none, unless MaxUnavailable is 0. Then no pod
// may become unavailable, not even to restart in place: one surge pod
// makes the room, pods move one at a time, and the last old pod is removed
// rather than moved, the surge pod having taken its place (splitLeaving).
// (More surge pods would only be removed again, unused.) room is what Replicas+MaxSurge leaves; keepNew
// the updated side's pods that stay, target its share.
func inPlaceSurge(l limits, room, keepNew, moving, target int) int {
	if l.maxUnavailable > 0 || moving == 0 {
		return 0
	}
	return min(room, 1-(keepNew+moving-target))
}

// startInPlace takes up to n of the moving pods to start now, in rolling
// order, each spending the availability budget as a removal does, and no
// more than room, what the updated side's share (target) leaves beside the
// keepNew pods it has: a pod moved beyond it would be removed as surplus.
func (r *remover) startInPlace(moving []*corev1.Pod, n, keepNew, target int) []*corev1.Pod {
	n = min(n, target-keepNew, len(moving))
	if n <= 0 {
		return nil
	}
	return r.take(r.s.rollingOrder(moving, false), n)
}

// movable says an old pod can move to the update revision in place: its
// revision is one Input.InPlace lists and it carries the readiness gate.
func (s podSet) movable(pod *corev1.Pod) bool {
	return s.inPlace[revisionOf(pod)] && inplace.HasGate(pod)
}

// underWay says an old pod is on its way to the update revision in place:
// its update began (inplace.UnderWay: the gate False, reason
// InPlaceUpdate, not yet failed) and its revision can reach the update
// revision in place (movable; never while paused or under Recreate, when
// s.inPlace is nil). Its next write is the spec patch to the update
// revision (Plan.MovingInPlace).
func (s podSet) underWay(pod *corev1.Pod) bool {
	return s.movable(pod) && inplace.UnderWay(pod)
}

// leavingOrder is the order in which old pods leave their side: rollingOrder
// (unavailable before available; on the held side of a partition, pods of
// revisions other than the current one first, so the held pods converge
// on it), and within that, pods that can move in place first (they need
// no surge). With nothing movable it is rollingOrder.
func (s podSet) leavingOrder(pods []*corev1.Pod, held bool) []*corev1.Pod {
	unavailable, available := s.byAvailability(pods)
	order := func(pods []*corev1.Pod) []*corev1.Pod {
		pods = stableFirst(pods, s.movable)
		if held {
			pods = stableFirst(pods, func(p *corev1.Pod) bool { return revisionOf(p) != s.current })
		}
		return pods
	}
	return slices.Concat(order(unavailable), order(available))
}
