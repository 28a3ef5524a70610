package rollout

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// planRolling is one RollingUpdate step while pods are to be replaced:
// Deployment's reconcileNewReplicaSet and reconcileOldReplicaSets in one
// go, generalized to two sides with a target each. The updated side
// targets Replicas-held pods of the update revision, the held side held
// pods of old revisions (0 without a partition, so every old pod goes);
// a pod labelled specified-delete does not count towards its side, so it
// is replaced. Both halves are computed from the same observed state, so
// the plan is safe in whatever order the caller executes it.
func planRolling(s podSet, l limits) Plan {
	active := s.active()
	doomedNew, keepNew := s.splitDoomed(s.updated)
	doomedOld, keepOld := s.splitDoomed(s.old)
	target := l.replicas - s.held

	// Old pods beyond the held share (a wave's: its domain's only,
	// waves.go) leave their side: those that can move in place
	// (inplace.go) become updated ones, the others are replaced.
	leaving := s.leaving(l, keepOld)
	moving, replaced := s.splitLeaving(l, leaving, len(keepNew), target)

	create, createHeld := s.rollingCreates(l, active, len(keepNew), len(keepOld), len(moving), target)

	// One budget for every available pod this step removes, whatever its
	// revision. The maxScaledDown arithmetic below already implies it (as in
	// Kubernetes); spelling it out keeps the availability promise evident.
	available := s.available(s.updated) + s.available(s.old)
	r := remover{s: s, removed: map[*corev1.Pod]bool{},
		budget: max(0, available-l.minAvailable), spare: available - l.replicas}

	// Update-revision pods beyond Replicas (a scale-down mid-rollout) go first,
	// as reconcileNewReplicaSet does; unavailable ones cost no availability.
	// A scale: deleted, never evicted; labelled pods first. Outside a
	// scaling-down event labelled pods do not count: a pod more than
	// Replicas may be the replacement of one.
	excess := len(keepNew) - l.replicas
	if l.scalingDown() {
		excess = len(s.updated) - l.replicas
	}
	var scaled []*corev1.Pod
	if excess > 0 {
		scaled = r.take(slices.Concat(s.rank.sorted(doomedNew), s.rollingOrder(keepNew, false)), excess)
	}
	updatedUnavailable := s.unavailable(r.left(s.updated))

	// reconcileOldReplicaSets: unavailable update-revision pods hold back the
	// scale-down so a crash-looping revision cannot eat the old pods.
	// Labelled old pods first, then old pods beyond the held share:
	// cleanupUnhealthyReplicas (unavailable ones, free) then
	// scaleDownOldReplicaSetsForRollingUpdate (available ones, within budget).
	maxScaledDown := active - len(scaled) - l.minAvailable - updatedUnavailable
	var replacedOld []*corev1.Pod
	if maxScaledDown > 0 && s.mayReplace(doomedOld, keepOld, s.held, createHeld) {
		replacedOld = r.take(s.drainingLast(doomedOld), maxScaledDown)
	}
	var replacedNew []*corev1.Pod
	if s.mayReplace(doomedNew, keepNew, target, create) {
		candidates := r.left(doomedNew)
		replacedNew = r.take(s.drainingLast(candidates), r.maxScaledDown(s, active, l, candidates))
	}
	// In place first: no pod needs creating before it. Each one started
	// spends the same bound as a removal (it is unavailable until done).
	inPlace := r.startInPlace(moving, maxScaledDown-len(replacedOld), len(keepNew), target)
	if n := min(len(replaced), maxScaledDown-len(replacedOld)-len(inPlace)); n > 0 {
		// An old pod on a draining node that waits for a spare pod goes
		// first in place of one the step removes anyway (drain.go).
		instead := r.drainedLeft(doomedOld)
		replacedOld = append(replacedOld, r.takeInstead(slices.Concat(instead, s.rollingOrder(replaced, s.held > 0)), n)...)
	}
	// A raised partition: updated pods beyond the updated side's share go
	// back, as old pods go forward, held back by unavailable held pods.
	// An updated pod on a draining node that waits for a spare pod goes
	// first in place of one of them, as an old one does above.
	if surplus := min(len(r.left(keepNew)), l.replicas) - target; surplus > 0 {
		instead := r.drainedLeft(doomedNew)
		candidates := slices.Concat(instead, s.rollingOrder(r.left(keepNew), false)[:surplus])
		n := min(surplus, r.maxScaledDown(s, active, l, candidates))
		replacedNew = append(replacedNew, r.takeInstead(candidates, n)...)
	}

	p := Plan{
		Create:        slices.Concat(creation(s.update, create), creation(s.current, createHeld)),
		Delete:        scaled,
		Evict:         slices.Concat(replacedOld, replacedNew),
		UpdateInPlace: inPlace,
	}
	p.Reason = s.rollingReason(p, len(keepNew) == target && len(keepOld) == s.held && active == l.replicas)
	return p
}

// rollingCreates is how many pods a rolling step creates, within
// Replicas+MaxSurge: of the update revision for the updated side (keepNew
// pods and moving ones short of target), then of the current revision for
// a held side short of its share (a raised partition, a labelled held pod).
func (s podSet) rollingCreates(l limits, active, keepNew, keepOld, moving, target int) (create, createHeld int) {
	room := l.replicas + s.drainSurge(l) - active
	if keepNew+moving < target {
		create = max(0, min(room, target-keepNew-moving))
	}
	create = max(create, inPlaceSurge(l, room, keepNew, moving, target))
	if keepOld < s.held && s.currentCreatable {
		createHeld = max(0, min(room-create, s.held-keepOld))
	}
	return create, createHeld
}

// rollingReason names a rolling step: one that acts, one held by a
// partition with both sides at their shares (atShares), or a wait.
func (s podSet) rollingReason(p Plan, atShares bool) Reason {
	switch acted := len(p.Create) > 0 || p.Removes() > 0 || len(p.UpdateInPlace) > 0; {
	case acted && len(s.old) == 0 && s.held == 0 && s.draining > 0:
		return ReasonDrain
	case acted && len(s.old) == 0 && s.held == 0:
		return ReasonSpecifiedDelete
	case acted:
		return ReasonRollingUpdate
	case s.held > 0 && atShares:
		return ReasonPartitionHeld
	default:
		return ReasonRollingUpdateWait
	}
}

// mayReplace says whether the labelled pods of a side (doomed) may be
// removed in this step: a new pod first where maxSurge allows, so not while
// this step creates the side's missing pods; once the side has its share,
// or when no room is left to create first, within maxUnavailable.
func (s podSet) mayReplace(doomed, keep []*corev1.Pod, target, creating int) bool {
	return len(doomed) > 0 && (len(keep) >= target || creating == 0)
}
