package rollout

import "slices"

// planScale scales the update-revision pods to Replicas when no active
// old-revision pod is left (Recreate: none that is not finished), like a
// ReplicaSet does: create the missing, delete the surplus by ranking.
func planScale(s podSet, l limits) Plan {
	switch diff := l.replicas - len(s.updated); {
	case diff > 0:
		return Plan{Create: int32(diff), Reason: ReasonScaleUp}
	case diff < 0:
		return Plan{Delete: s.rank.sorted(s.updated)[:-diff], Reason: ReasonScaleDown}
	default:
		return Plan{Reason: ReasonInSync}
	}
}

// planPaused scales without rolling out, as Deployment's sync/scale does for
// a paused Deployment: no pod is replaced, only the count is corrected.
func planPaused(s podSet, l limits, recreate bool) Plan {
	if missing := l.replicas - s.active(); missing > 0 {
		if recreate && s.oldUnfinished > 0 {
			// Recreate never runs two revisions side by side, paused or not.
			return Plan{Reason: ReasonPaused}
		}
		return Plan{Create: int32(missing), Reason: ReasonPausedScaleUp}
	}
	surplus := s.active() - pausedAllowedSize(s, l, recreate)
	if surplus <= 0 {
		return Plan{Reason: ReasonPaused}
	}
	// Old-revision pods go first: the rollout would remove them anyway.
	victims := slices.Concat(s.rank.sorted(s.old), s.rank.sorted(s.updated))
	return Plan{Delete: victims[:surplus], Reason: ReasonPausedScaleDown}
}

// pausedAllowedSize is how many active pods a paused MyDeployment keeps, as
// in Deployment's scale(): a rolling update caught mid-way (several active
// revisions) keeps its surge, Replicas+MaxSurge; otherwise, or once the
// update revision is saturated (Replicas pods, all available), Replicas.
func pausedAllowedSize(s podSet, l limits, recreate bool) int {
	saturated := len(s.updated) == l.replicas && s.available(s.updated) == l.replicas
	if recreate || saturated || l.replicas == 0 || s.activeRevisions() < 2 {
		return l.replicas
	}
	return l.replicas + l.maxSurge
}
