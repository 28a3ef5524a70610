package rollout

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
)

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
// With weight steps the aborted revision's pods take the traffic the
// route gives them, not a Ready pod's share: until Input.AbortDrain (the
// route's weight taken off them, then a drain delay: the weights module)
// the way back removes none of them and moves none in place; it creates
// the stable side's pods within maxSurge meanwhile, and the plan's reason
// is ReasonAbortDrainTraffic while it holds one back.
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
	if wait := in.AbortDrain.Sub(in.Now); wait > 0 && slices.ContainsFunc(in.Pods, in.takesTraffic) {
		p = p.keeping(in.takesTraffic, wait)
	}
	return p
}

// takesTraffic says pod is an active pod of the aborted revision (its
// revision UpdateRevision, neither terminating nor finished): the
// route may still send it traffic.
func (in Input) takesTraffic(pod *corev1.Pod) bool {
	return pod != nil && revisionOf(pod) == in.UpdateRevision && isActive(pod)
}

// keeping is p without removals or in-place moves of the pods kept
// says, due again after wait; its reason ReasonAbortDrainTraffic when it
// held one back.
func (p Plan) keeping(kept func(*corev1.Pod) bool, wait time.Duration) Plan {
	n := len(p.Delete) + len(p.Evict) + len(p.UpdateInPlace)
	p.Delete = slices.DeleteFunc(slices.Clone(p.Delete), kept)
	p.Evict = slices.DeleteFunc(slices.Clone(p.Evict), kept)
	p.UpdateInPlace = slices.DeleteFunc(slices.Clone(p.UpdateInPlace), kept)
	p.Drained = slices.DeleteFunc(slices.Clone(p.Drained), kept)
	if len(p.Delete)+len(p.Evict)+len(p.UpdateInPlace) < n {
		p.Reason = ReasonAbortDrainTraffic
	}
	if p.RequeueAfter == 0 || wait < p.RequeueAfter {
		p.RequeueAfter = wait
	}
	return p
}
