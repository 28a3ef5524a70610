package rollout

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// planScale scales the update-revision pods to Replicas when no active
// old-revision pod is left (Recreate: none that is not finished), like a
// ReplicaSet does: create the missing, delete the surplus by ranking.
//
// Pods labelled specified-delete go first on a scale-down; otherwise
// (Recreate only: a RollingUpdate replaces them in planRolling) they are
// replaced: removed, and as many pods created in the same plan.
func planScale(s podSet, l limits) Plan {
	doomed, _ := s.splitDoomed(s.updated)
	switch diff := l.replicas - len(s.updated); {
	case diff < 0:
		return Plan{Delete: s.rank.sorted(s.updated)[:-diff], Reason: ReasonScaleDown}
	case len(doomed) > 0:
		// Removed first, replaced once gone (the labelled pod no longer
		// active): a failed removal then leaves no pod too many.
		return Plan{Create: creation(s.update, diff), Evict: s.rank.sorted(doomed), Reason: ReasonSpecifiedDelete}
	case diff > 0:
		return Plan{Create: creation(s.update, diff), Reason: ReasonScaleUp}
	default:
		return Plan{Reason: ReasonInSync}
	}
}

// creation is a one-entry Create list, or none for n <= 0.
func creation(revision string, n int) []Creation {
	if n <= 0 {
		return nil
	}
	return []Creation{{Revision: revision, Count: clampInt32(n)}}
}

// planScalingEvent is Deployment's scale() when the replicas of a
// RollingUpdate changed since the pods were last sized (sync.go's
// isScalingEvent). It returns false when scaling has nothing to do, so the
// caller plans the rollout step at once: a saturated update revision, or
// one revision that already has Replicas pods, is the rollout's business.
func planScalingEvent(s podSet, l limits) (Plan, *Size, bool) {
	if len(s.old) == 0 {
		return Plan{}, nil, false // a plain scale: no pass over the pods
	}
	groups := s.byRevision()
	switch {
	case len(groups) > 1 && !s.saturated(l):
		p, sized := proportional(s, l, groups, ReasonProportionalScaleUp, ReasonProportionalScaleDown)
		if len(p.Create) == 0 && len(p.Delete) == 0 {
			return Plan{}, sized, false
		}
		return p, sized, true
	case len(groups) == 1 && groups[0].name != s.update && groups[0].creatable:
		// FindActiveOrLatest: the only active revision is an old one (the
		// template and the replicas changed at once); scale it, roll later.
		p, sized := scaleRevision(s, l, groups[0], ReasonProportionalScaleUp, ReasonProportionalScaleDown)
		if len(p.Create) == 0 && len(p.Delete) == 0 {
			return Plan{}, nil, false
		}
		return p, sized, true
	default:
		return Plan{}, nil, false
	}
}

// planPaused scales without rolling out, as Deployment's sync does for a
// paused Deployment: no pod is replaced, only the count is corrected.
func planPaused(s podSet, l limits) (Plan, *Size) {
	if l.recreate {
		return planPausedRecreate(s, l), nil
	}
	groups := s.byRevision()
	switch {
	case len(groups) == 1 && groups[0].creatable:
		return scaleRevision(s, l, groups[0], ReasonPausedScaleUp, ReasonPausedScaleDown)
	case len(groups) <= 1:
		// No active pod, or only pods of a revision we cannot create from:
		// the update revision makes up the number.
		return pausedToReplicas(s, l), nil
	case s.saturated(l):
		// The rollout is done but for deleting the old pods.
		return Plan{Delete: s.rank.sorted(s.old), Reason: ReasonPausedScaleDown}, nil
	default:
		p, sized := proportional(s, l, groups, ReasonPausedScaleUp, ReasonPausedScaleDown)
		if len(p.Create) == 0 && len(p.Delete) == 0 {
			p.Reason = ReasonPaused
		}
		return p, sized
	}
}

// planPausedRecreate scales a paused Recreate to Replicas: missing pods are
// of the update revision and only created once no old pod may run (Recreate
// never runs two revisions side by side, paused or not); surplus pods go
// old-revision first, as the rollout would remove them anyway.
func planPausedRecreate(s podSet, l limits) Plan {
	if missing := l.replicas - s.active(); missing > 0 {
		if s.oldUnfinished > 0 {
			return Plan{Reason: ReasonPaused}
		}
		return Plan{Create: creation(s.update, missing), Reason: ReasonPausedScaleUp}
	}
	return pausedToReplicas(s, l)
}

// pausedToReplicas creates update-revision pods missing up to Replicas, or
// deletes the surplus, old-revision pods first.
func pausedToReplicas(s podSet, l limits) Plan {
	if missing := l.replicas - s.active(); missing > 0 {
		return Plan{Create: creation(s.update, missing), Reason: ReasonPausedScaleUp}
	}
	surplus := s.active() - l.replicas
	if surplus <= 0 {
		return Plan{Reason: ReasonPaused}
	}
	victims := slices.Concat(s.rank.sorted(s.old), s.rank.sorted(s.updated))
	return Plan{Delete: victims[:surplus], Reason: ReasonPausedScaleDown}
}

// scaleRevision scales the one revision with active pods to Replicas, as
// Deployment scales its only active ReplicaSet. A step cut by MaxBurst
// leaves the record as it is, so the next plan goes on scaling.
func scaleRevision(s podSet, l limits, g revisionPods, up, down Reason) (Plan, *Size) {
	diff := l.replicas - len(g.pods)
	var sized *Size
	if diff > l.maxBurst || -diff > l.deleteBurst {
		sized = l.sizedFor
	}
	switch {
	case diff > 0:
		return Plan{Create: creation(g.name, diff), Reason: up}, sized
	case diff < 0:
		return Plan{Delete: s.rank.sorted(g.pods)[:-diff], Reason: down}, sized
	default:
		return Plan{Reason: ReasonPaused}, nil
	}
}

// saturated: the update revision has Replicas pods, all available
// (deploymentutil.IsSaturated).
func (s podSet) saturated(l limits) bool {
	return len(s.updated) == l.replicas && s.available(s.updated) == l.replicas
}

// proportional is Deployment's proportional scaling (sync.go scale(),
// util GetProportion and getReplicaSetFraction) over the active revisions
// in groups: the active pods move towards the allowed size, each revision
// by its share of what the pods were sized for (Input.SizedFor.MaxReplicas,
// else the active pods), revisions taken bigger first, ties newer first
// when growing and older first when shrinking; the rounding leftover goes
// to the first (growing: the first that can be created). No revision
// shrinks while growing or grows while shrinking. Pods of a revision
// are deleted by ranking. A step beyond MaxBurst is cut to a proportional
// scale to active±MaxBurst, and what the pods are then sized for is
// returned, so the next plan goes on from there; nil when not cut. (Each
// cut step rounds on its own, so the end result can differ by a pod or so
// per step from one uncut scale; relative to bursts of hundreds, nothing.)
func proportional(s podSet, l limits, groups []revisionPods, up, down Reason) (Plan, *Size) {
	total := s.active()
	step := l.allowedSize() - total
	cut := step > l.maxBurst || -step > l.deleteBurst
	step = min(max(step, -l.deleteBurst), l.maxBurst)
	if step == 0 {
		if cut { // finished pods took every delete: nothing moved
			return Plan{}, l.sizedFor
		}
		return Plan{}, nil
	}
	target := total + step
	before := total
	if l.sizedFor != nil && l.sizedFor.MaxReplicas > 0 {
		before = int(l.sizedFor.MaxReplicas)
	}

	groups, sizes := proportionalSizes(groups, step, target, before)
	var sized *Size
	if reached := sum(sizes); cut && reached == target {
		sized = sizedAt(l, reached)
	}
	p := Plan{Reason: up}
	if step < 0 {
		p.Reason = down
	}
	p.Create, p.Delete = proportionalWrites(s, groups, sizes)
	return p, sized
}

// proportionalSizes is each group's size after a proportional step of
// step pods towards target, from what the pods were sized for (before):
// the groups in the order they are served (bigger first; ties newer first
// when growing, older first when shrinking), and their sizes.
func proportionalSizes(groups []revisionPods, step, target, before int) ([]revisionPods, []int) {
	groups = slices.Clone(groups)
	slices.SortStableFunc(groups, func(a, b revisionPods) int {
		if c := cmp.Compare(len(b.pods), len(a.pods)); c != 0 {
			return c
		}
		if step > 0 {
			return cmp.Compare(b.age, a.age) // newer first
		}
		return cmp.Compare(a.age, b.age) // older first
	})
	sizes := make([]int, len(groups))
	added := 0
	for i, g := range groups {
		n := len(g.pods)
		sizes[i] = n
		if added == step {
			continue
		}
		fraction := -n // scaling to 0: all of it
		if target > 0 {
			fraction = roundedShare(n, target, before) - n
		}
		// Never more than is left to add or remove (GetProportion), and,
		// unlike Deployment with a record that does not match the pods,
		// never against the direction of the step.
		share := min(max(fraction, step-added), 0)
		if step > 0 {
			share = max(min(fraction, step-added), 0)
		}
		if share > 0 && !g.creatable {
			share = 0
		}
		sizes[i] += share
		added += share
	}
	if leftover := step - added; leftover != 0 {
		for i, g := range groups {
			if leftover < 0 || g.creatable {
				sizes[i] = max(0, sizes[i]+leftover)
				break
			}
		}
	}

	return groups, sizes
}

// proportionalWrites are the creates and deletes that bring each group to
// its size: created newest first; deleted old revisions first, the update
// revision last (groups come newest first, the update revision among the
// newest), each group's pods by ranking.
func proportionalWrites(s podSet, groups []revisionPods, sizes []int) (create []Creation, del []*corev1.Pod) {
	order := make([]int, len(groups))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(groups[b].age, groups[a].age), cmp.Compare(groups[a].name, groups[b].name))
	})
	var deleteUpdated []*corev1.Pod
	for _, i := range order {
		g := groups[i]
		switch diff := sizes[i] - len(g.pods); {
		case diff > 0:
			create = append(create, creation(g.name, diff)...)
		case diff < 0 && g.name == s.update:
			deleteUpdated = s.rank.sorted(g.pods)[:-diff]
		case diff < 0:
			del = append(s.rank.sorted(g.pods)[:-diff], del...) // older before newer
		}
	}
	return create, append(del, deleteUpdated...)
}

// sizedAt is the record of a proportional scale cut by MaxBurst at size
// reached: still a scaling event (Replicas as recorded), sized for reached.
func sizedAt(l limits, reached int) *Size {
	sized := &Size{Replicas: int32(l.replicas), MaxReplicas: clampInt32(reached)}
	if l.sizedFor != nil {
		sized.Replicas = l.sizedFor.Replicas
	}
	return sized
}

func sum(ns []int) int {
	total := 0
	for _, n := range ns {
		total += n
	}
	return total
}

// roundedShare is round(n*target/before), halves away from zero, as
// integer.RoundToInt32 does; all arguments are positive.
func roundedShare(n, target, before int) int {
	num := int64(n) * int64(target)
	return int((2*num + int64(before)) / (2 * int64(before)))
}
