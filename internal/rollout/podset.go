package rollout

import (
	"cmp"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// revisionOf returns the name of the ControllerRevision the pod was created from.
func revisionOf(pod *corev1.Pod) string {
	return pod.Labels[appsv1.ControllerRevisionHashLabelKey]
}

// podSet is the planner's view of the owned pods at one instant, split the
// way every strategy needs them. updated and old keep the caller's order:
// whatever reads an order from them sorts them with rank (a total order),
// so nothing downstream depends on the caller's order; finished is by name.
type podSet struct {
	// finished are Succeeded/Failed pods not yet being deleted: always deleted.
	finished []*corev1.Pod
	// updated and old are the active pods of the update revision and of any other.
	updated, old []*corev1.Pod
	// oldUnfinished counts old-revision pods that may still run: active or
	// terminating but not finished. Recreate waits for it to reach 0.
	oldUnfinished int

	// specified counts active doomed pods (labelled specified-delete,
	// whose in-place update failed, or on a draining node); draining
	// counts those on a draining node (drain.go).
	specified, draining int
	// inPlace are the old revisions whose pods (with the gate) move to the
	// update revision in place; nil when no rolling step may move them
	// (paused, Recreate).
	inPlace map[string]bool
	// moving are the old-revision pods whose in-place update is under way
	// (underWay): in updated, not in old.
	moving []*corev1.Pod
	// held is how many old-revision pods the partition holds (see
	// heldTarget): 0 without a partition; current is the revision they
	// converge on, currentCreatable whether pods of it can be created.
	held             int
	current          string
	currentCreatable bool
	// canary is where a canary rollout is (canary.go), which sets held;
	// nil when none is under way.
	canary *CanaryProgress

	// update is the update revision; age ranks revisions, newer higher:
	// the update revision highest, Input.Revisions by their order, any other 0.
	update string
	age    map[string]int

	rank            ranker
	minReadySeconds int32
	now             time.Time
}

// newPodSet classifies pods; nil entries are ignored.
func newPodSet(in Input) podSet {
	s := podSet{rank: newDrainRanker(in.Pods, drainingNodes(in)), minReadySeconds: in.MinReadySeconds, now: in.Now,
		update: in.UpdateRevision}
	s.age = make(map[string]int, len(in.Revisions)+1)
	for i, name := range in.Revisions {
		s.age[name] = i + 1
	}
	s.age[in.UpdateRevision] = len(in.Revisions) + 1
	if len(in.InPlace) > 0 && !in.Paused && in.Strategy != Recreate {
		s.inPlace = make(map[string]bool, len(in.InPlace))
		for _, name := range in.InPlace {
			s.inPlace[name] = name != in.UpdateRevision
		}
	}
	s.current = in.CurrentRevision
	s.currentCreatable = in.CurrentRevision != in.UpdateRevision && slices.Contains(in.Revisions, in.CurrentRevision)
	for _, pod := range in.Pods {
		if pod == nil {
			continue
		}
		isOld := revisionOf(pod) != in.UpdateRevision
		if isActive(pod) && s.rank.doomed(pod) {
			s.specified++
		}
		if isActive(pod) && s.rank.draining[pod.Spec.NodeName] {
			s.draining++
		}
		switch {
		case isActive(pod) && isOld && s.underWay(pod):
			s.updated = append(s.updated, pod)
			s.moving = append(s.moving, pod)
			s.oldUnfinished++
		case isActive(pod) && isOld:
			s.old = append(s.old, pod)
			s.oldUnfinished++
		case isActive(pod):
			s.updated = append(s.updated, pod)
		case isFinished(pod):
			if !isTerminating(pod) {
				s.finished = append(s.finished, pod)
			}
		case isOld: // terminating, not finished
			s.oldUnfinished++
		}
	}
	// Every deletion among updated and old goes through the ranker, a total
	// order; finished pods are deleted as they are, so order them here.
	// (Sorting every pod by name on every sync was 2% of the manager's CPU.)
	// Plan.MovingInPlace lists moving as it is: the same order too.
	byName := func(a, b *corev1.Pod) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.UID, b.UID))
	}
	slices.SortFunc(s.finished, byName)
	slices.SortFunc(s.moving, byName)
	s.canary = s.canaryStep(in)
	s.held = s.heldTarget(in)
	return s
}

// active is the number of active pods, the "replicas" Deployment sums over its ReplicaSets.
func (s podSet) active() int {
	return len(s.updated) + len(s.old)
}

// severalRevisions reports whether active pods are labelled with more than
// one revision (pods moving in place still carry their old one), without a
// pass over all pods in the usual cases.
func (s podSet) severalRevisions() bool {
	labelledOld := slices.Concat(s.old, s.moving)
	switch {
	case len(labelledOld) == 0:
		return false
	case len(s.updated) > len(s.moving):
		return true
	}
	first := revisionOf(labelledOld[0])
	return slices.ContainsFunc(labelledOld[1:], func(pod *corev1.Pod) bool { return revisionOf(pod) != first })
}

// isOld says an active pod is on the old side: of another revision than
// the update revision, and not moving to it in place.
func (s podSet) isOld(pod *corev1.Pod) bool {
	return revisionOf(pod) != s.update && !s.underWay(pod)
}

// revisionPods are the active pods of one revision: a Deployment's ReplicaSet.
type revisionPods struct {
	name string
	pods []*corev1.Pod
	// age ranks revisions, newer higher; creatable says pods of it can be created.
	age       int
	creatable bool
}

// byRevision groups the active pods by revision, newest revision first;
// pods moving in place count as the update revision's.
func (s podSet) byRevision() []revisionPods {
	index := make(map[string]int)
	var groups []revisionPods
	for i, pod := range slices.Concat(s.updated, s.old) {
		name := revisionOf(pod)
		if i < len(s.updated) {
			name = s.update
		}
		i, ok := index[name]
		if !ok {
			age, known := s.age[name]
			i = len(groups)
			index[name] = i
			groups = append(groups, revisionPods{name: name, age: age, creatable: known})
		}
		groups[i].pods = append(groups[i].pods, pod)
	}
	slices.SortFunc(groups, func(a, b revisionPods) int {
		return cmp.Or(cmp.Compare(b.age, a.age), cmp.Compare(a.name, b.name))
	})
	return groups
}

// available returns how many of pods are available at s.now.
func (s podSet) available(pods []*corev1.Pod) int {
	n := 0
	for _, pod := range pods {
		if IsAvailable(pod, s.minReadySeconds, s.now) {
			n++
		}
	}
	return n
}

// byAvailability splits pods into unavailable and available ones, each ranked
// most deletable first.
func (s podSet) byAvailability(pods []*corev1.Pod) (unavailable, available []*corev1.Pod) {
	for _, pod := range s.rank.sorted(pods) {
		if IsAvailable(pod, s.minReadySeconds, s.now) {
			available = append(available, pod)
		} else {
			unavailable = append(unavailable, pod)
		}
	}
	return unavailable, available
}

// requeueAfter is the shortest wait until an active ready pod becomes
// available, or 0 when no pod is waiting on minReadySeconds.
func (s podSet) requeueAfter() time.Duration {
	var soonest time.Duration
	for _, pod := range slices.Concat(s.updated, s.old) {
		if d, ok := TimeUntilAvailable(pod, s.minReadySeconds, s.now); ok && d > 0 && (soonest == 0 || d < soonest) {
			soonest = d
		}
	}
	return soonest
}
