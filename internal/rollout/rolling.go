package rollout

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// planRolling is one RollingUpdate step while active old-revision pods exist:
// Deployment's reconcileNewReplicaSet and reconcileOldReplicaSets in one go.
// Both halves are computed from the same observed state, so the plan is safe
// in whatever order the caller executes it.
func planRolling(s podSet, l limits) Plan {
	active := s.active()

	create := 0
	if len(s.updated) < l.replicas {
		create = max(0, min(l.replicas+l.maxSurge-active, l.replicas-len(s.updated)))
	}

	// One budget for every available pod this step deletes, whatever its
	// revision. The maxScaledDown arithmetic below already implies it (as in
	// Kubernetes); spelling it out keeps the availability promise evident.
	budget := max(0, s.available(s.updated)+s.available(s.old)-l.minAvailable)

	// Update-revision pods beyond Replicas (a scale-down mid-rollout) go first,
	// as reconcileNewReplicaSet does; unavailable ones cost no availability.
	var deleteUpdated []*corev1.Pod
	updatedUnavailable := len(s.updated) - s.available(s.updated)
	if excess := len(s.updated) - l.replicas; excess > 0 {
		unavailable, available := s.byAvailability(s.updated)
		n := min(excess, len(unavailable))
		m := min(excess-n, budget, len(available))
		deleteUpdated = slices.Concat(unavailable[:n], available[:m])
		updatedUnavailable -= n
		budget -= m
	}

	// reconcileOldReplicaSets: unavailable update-revision pods hold back the
	// scale-down so a crash-looping revision cannot eat the old pods.
	var deleteOld []*corev1.Pod
	maxScaledDown := active - len(deleteUpdated) - l.minAvailable - updatedUnavailable
	if maxScaledDown > 0 {
		unavailable, available := s.byAvailability(s.old)
		// cleanupUnhealthyReplicas: removing unavailable pods costs no availability.
		n := min(maxScaledDown, len(unavailable))
		// scaleDownOldReplicaSetsForRollingUpdate: available ones only within budget.
		m := min(maxScaledDown-n, budget, len(available))
		deleteOld = slices.Concat(unavailable[:n], available[:m])
	}

	p := Plan{
		Create: creation(s.update, create),
		Delete: slices.Concat(deleteOld, deleteUpdated),
		Reason: ReasonRollingUpdate,
	}
	if create == 0 && len(p.Delete) == 0 {
		p.Reason = ReasonRollingUpdateWait
	}
	return p
}
