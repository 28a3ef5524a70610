package rollout

// Replacement after termination (Input.TerminationComplete, the
// pod-replacement opt-in: KEP-5882's podReplacementPolicy
// TerminationComplete, kubernetes#107920): a pod the object owns counts
// against the pods a plan may create until it is gone from the API
// server, not only while it is active. A terminating pod's containers may
// still hold a GPU, a quota or a ReadWriteOnce volume; a finished pod
// counts too until it is gone (deleted by the same plan, it goes at once).
// The creates of the strategy's step are cut so that every pod of the
// object, active or not, and the pods created stay within the ceiling the
// step keeps for its active pods:
//
//   - a rolling step (a rollout, a specified delete, a drain, a canary or
//     wave step, an abort's way back): Replicas+MaxSurge (at least one of
//     surge on a drain), so a rollout never has more pods than that,
//     terminating ones counted;
//   - a proportional scale of several revisions (a scaling event
//     mid-rollout, paused or not): Deployment's allowed size,
//     Replicas+MaxSurge; a scale so held keeps the size record as it was,
//     so the next plan goes on scaling;
//   - anything else (a ReplicaSet's scale, Recreate): Replicas, so a
//     deleted or evicted pod is replaced once it is gone, and a scale-in
//     undone is made up as the removed pods go.
//
// Removals are the step's as planned: only creates wait. A pod's delete
// event syncs the object again, so nothing polls. Recreate already waits
// for its old revision's pods before it creates; the opt-in adds the wait
// for the rest.

// afterTermination is p, the step's plan with finished pods in its
// Delete, with its creates cut as above, and what the pods are then sized
// for (sized, or the record as it was for a scale held back). A plan left
// with nothing to do but delete finished pods says it waits
// (ReasonWaitForPodsGone).
func (s podSet) afterTermination(in Input, l limits, p Plan, sized *Size, rolling, scaled bool) (Plan, *Size) {
	if len(p.Create) == 0 {
		return p, sized
	}
	lingering := 0
	for _, pod := range in.Pods {
		if pod != nil && !isActive(pod) {
			lingering++
		}
	}
	room := max(0, s.ceiling(l, rolling)-s.active()-lingering)
	if int(p.Creates()) <= room {
		return p, sized
	}
	p.Create = capCreates(p.Create, room)
	if len(p.Create) == 0 && p.Removes() == len(s.finished) && len(p.UpdateInPlace) == 0 {
		p.Reason = ReasonWaitForPodsGone
	}
	if scaled && l.scalingEvent {
		sized = l.sizedFor
	}
	return p, sized
}

// ceiling is how many pods the step keeps active at most (see above).
func (s podSet) ceiling(l limits, rolling bool) int {
	switch {
	case l.recreate:
		return l.replicas
	case rolling:
		return l.replicas + s.drainSurge(l)
	case s.severalRevisions():
		return l.allowedSize()
	default:
		return l.replicas
	}
}

// capCreates is create with at most n pods, the earliest listed kept.
func capCreates(create []Creation, n int) []Creation {
	var out []Creation
	for _, c := range create {
		if m := min(int(c.Count), n); m > 0 {
			c.Count = int32(m)
			out = append(out, c)
			n -= m
		}
	}
	return out
}
