package rollout

// The planner's strategies, each a file, behind one dispatch (step):
//
//   - scale.go: planScale, a ReplicaSet's scale when no old pod is left;
//     planScalingEvent and planPaused, Deployment's proportional scale();
//   - rolling.go: planRolling, a RollingUpdate step over two sides, each
//     with a target (the updated pods, the pods held on old revisions);
//   - partition.go: the held side's target (heldTarget) and
//     planPartitionScale, a scale-down that keeps the partition's meaning;
//   - inplace.go: which old pods leaving their side move in place rather
//     than being replaced, and what that costs the step;
//   - recreate.go: planRecreate, Deployment's rolloutRecreate;
//   - removal.go: what every strategy shares to choose what it removes
//     (the availability budget, specified delete, RespectPDB);
//   - abort.go: planAbort, an aborted rollout planned towards the current
//     revision (Compute dispatches to it before classifying the pods).
//   - drain.go: pods on draining nodes (Input.DrainingNodes), doomed as
//     specified-delete pods, with at least one pod of surge, and removed
//     only while Replicas pods stay available.
//
// Adding a strategy: a strategy either picks the step (a new case in step,
// its planner in a new file, returning a Plan whose Reason is its own) or
// sets one of the rolling step's targets or moves (a new input read in
// newPodSet, like Partition's held target or InPlace's movable revisions,
// and the function that reads it in its own file). Partition took the
// second way: Input.Partition and Input.CurrentRevision, partition.go,
// podSet.held, and the two-sided rolling step (rolling.go) it generalised.
// Its tables are partition_test.go in internal/controller (envtest) and
// optin_test.go and optin_simulation_test.go here; every strategy must also
// keep the invariants of invariants_test.go, which the simulations and the
// fuzz test check for every plan.

// step is the dispatch: it plans one step with the strategy the pods'
// state calls for. A scale comes first (Deployment's sync scales before it
// rolls); scaled says it took the step. sized is what the pods are sized
// for when not l.size() (a scale cut by MaxBurst, a proportional scale);
// rolling says the rolling step planned it.
//
// RollingUpdate in a scaling event (SizedFor.Replicas differs from
// Replicas), not paused: first Deployment's scale(). With several active
// revisions and the update revision not saturated (Replicas pods, all
// available), the active pods are scaled proportionally: towards
// Replicas+MaxSurge (0 for Replicas 0), each revision by its share
// round(pods*(Replicas+MaxSurge)/SizedFor.MaxReplicas), taken in order of
// size, bigger first (ties: newer first when growing, older first when
// shrinking), the rounding leftover to the first; no revision shrinks in a
// scale-up or grows in a scale-down. An old revision that is
// the only one with active pods is scaled to Replicas. Scaling ignores
// MaxUnavailable, as Deployment's does. When scaling changes nothing, the
// rolling step is planned at once.
//
// Paused: no rollout step, only scaling, as Deployment's sync does.
// RollingUpdate: the scale() above, whether or not a scaling event is on,
// and with the update revision saturated its old pods are deleted. Recreate:
// pods missing up to Replicas are created of the update revision once no old
// pod may run, surplus pods deleted old-revision first.
//
// Recreate, not paused (rolloutRecreate): while any old-revision pod that is
// not finished exists, active or terminating, the active ones are deleted and
// nothing is created; update-revision pods beyond Replicas are deleted.
//
// RollingUpdate, not paused, with active old-revision pods (Deployment's
// rolloutRolling): pods of the update revision are created up to
// min(Replicas+MaxSurge-active, Replicas-updated); old pods are deleted as
// reconcileOldReplicaSets does, unavailable ones first; update-revision pods
// beyond Replicas are deleted, unavailable ones first. Promises: active pods
// plus Create never exceed Replicas+MaxSurge unless they already did before
// (then Create is empty), and the available pods deleted never bring
// availability below Replicas-MaxUnavailable (none is deleted if it already
// was below).
//
// Otherwise (no active old pods, or Recreate with no old pod left) the
// update-revision pods are scaled to Replicas as a ReplicaSet would: the
// surplus goes by ranking alone, whatever MaxUnavailable says.
func step(in Input, s podSet, l limits) (p Plan, sized *Size, scaled, rolling bool) {
	switch {
	case in.Paused:
		p, sized = planPaused(s, l)
		return p, sized, true, false
	case l.scalingEvent && s.held > 0:
		p, sized, scaled = planPartitionScale(s, l)
	case l.scalingEvent:
		p, sized, scaled = planScalingEvent(s, l)
	}
	switch {
	case scaled:
		return p, sized, true, false
	case l.recreate && s.oldUnfinished > 0:
		return planRecreate(s, l), sized, false, false
	case !l.recreate && (len(s.old) > 0 || s.specified > 0 || s.held > 0):
		return planRolling(s, l), sized, false, true
	default:
		return planScale(s, l), sized, false, false
	}
}
