package rollout

import "slices"

// Abort (Input.Aborted, RollingUpdate, CurrentRevision listed in Revisions
// and not UpdateRevision): the rollout to UpdateRevision exceeded its
// progress deadline and every pod goes back to CurrentRevision, the stable
// revision held pods run. That is a partition raised to all replicas;
// rather than a held side of Replicas pods with the rolling step's
// updated side emptied, the step is planned towards CurrentRevision, with
// the aborted revision one old revision among the others (towardsStable).
// So everything the rolling step promises holds for the way back: pods of
// the aborted revision are removed and pods of the stable one created
// within MaxSurge and MaxUnavailable, unavailable ones first (a pod that
// never became ready costs no availability), the stable side's
// unavailable pods holding back further removals; a scale mid-abort is
// Deployment's proportional scale; and the pods the controller can move
// back in place (Input.InPlace, computed towards Target) move in place,
// as a forward rollout's do. The partition holds nothing while aborted:
// every pod is held. Pods on their way in place to the aborted revision
// (their gate False, their labels still the stable revision's) are on the
// stable side: the controller ends their update where it stands, their
// spec untouched. The plan's reason is ReasonAbortRollBack while pods
// are off the stable revision, ReasonAborted once all are back; a scale
// or a pause keeps its own.
//
// Without CurrentRevision's ControllerRevision there is nothing to go
// back to: Aborted is ignored and the rollout goes on as Deployment's
// would (the controller's status still says it failed).

// aborting says the step goes back to CurrentRevision (see above).
func (in Input) aborting() bool {
	return in.Aborted && in.Strategy != Recreate && in.CurrentRevision != "" &&
		in.CurrentRevision != in.UpdateRevision && slices.Contains(in.Revisions, in.CurrentRevision)
}

// Target is the revision the planner moves pods to: UpdateRevision, or
// CurrentRevision while the rollout is aborted. Input.InPlace names the
// revisions whose pods can reach Target in place, Plan.UpdateInPlace and
// Plan.MovingInPlace are pods on their way to it, and the controller's
// in-place steps patch them to it.
func (in Input) Target() string {
	if in.aborting() {
		return in.CurrentRevision
	}
	return in.UpdateRevision
}

// towardsStable is in with CurrentRevision in the update revision's place
// and the aborted revision the newest of the old ones: no partition, no
// canary steps, not aborted.
func (in Input) towardsStable() Input {
	out := in
	out.UpdateRevision = in.CurrentRevision
	out.Revisions = append(slices.DeleteFunc(slices.Clone(in.Revisions), func(name string) bool {
		return name == in.CurrentRevision
	}), in.UpdateRevision)
	out.Partition = 0
	out.Canary = nil // the way back is no canary: every pod goes at once, within the bounds
	out.Aborted = false
	return out
}

// planAbort plans the step of an aborted rollout: the rolling step towards
// the stable revision (Compute of towardsStable), named as an abort.
func planAbort(in Input) Plan {
	p := Compute(in.towardsStable())
	switch p.Reason {
	case ReasonInSync:
		p.Reason = ReasonAborted
	case ReasonRollingUpdate, ReasonRollingUpdateWait:
		p.Reason = ReasonAbortRollBack
	}
	return p
}
