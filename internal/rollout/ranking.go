package rollout

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// ranker orders pods most deletable first by the criteria listed in the
// package documentation ("Deletion ranking").
type ranker struct {
	// podsOnNode counts active pods per node name; it is the rank of rule 5.
	podsOnNode map[string]int
	// draining names the nodes being drained (Input.DrainingNodes): their
	// pods are doomed (see doomed).
	draining map[string]bool
}

// newRanker ranks against the given pods, of which only active ones count
// for co-location, as in getPodsRankedByRelatedPodsOnSameNode.
func newRanker(related []*corev1.Pod) ranker {
	return newDrainRanker(related, nil)
}

// newDrainRanker is newRanker with the pods on the draining nodes doomed.
func newDrainRanker(related []*corev1.Pod, draining map[string]bool) ranker {
	podsOnNode := make(map[string]int)
	for _, pod := range related {
		if pod != nil && isActive(pod) {
			podsOnNode[pod.Spec.NodeName]++
		}
	}
	return ranker{podsOnNode: podsOnNode, draining: draining}
}

// sorted returns a copy of pods, most deletable first; pods is not modified.
func (r ranker) sorted(pods []*corev1.Pod) []*corev1.Pod {
	out := slices.Clone(pods)
	slices.SortStableFunc(out, r.compare)
	return out
}

// compare returns a negative number when a should be deleted before b.
func (r ranker) compare(a, b *corev1.Pod) int {
	if c := cmpBool(r.doomed(a), r.doomed(b)); c != 0 {
		return c
	}
	if c := cmpBool(a.Spec.NodeName == "", b.Spec.NodeName == ""); c != 0 {
		return c
	}
	if c := cmp.Compare(phaseOrdinal(a.Status.Phase), phaseOrdinal(b.Status.Phase)); c != 0 {
		return c
	}
	readyA, readyB := isReady(a), isReady(b)
	if c := cmpBool(!readyA, !readyB); c != 0 {
		return c
	}
	if c := cmp.Compare(deletionCost(a), deletionCost(b)); c != 0 {
		return c
	}
	if c := cmp.Compare(r.podsOnNode[b.Spec.NodeName], r.podsOnNode[a.Spec.NodeName]); c != 0 {
		return c
	}
	if readyA && readyB {
		if c := newerFirst(readySince(a), readySince(b)); c != 0 {
			return c
		}
	}
	if c := compareRestarts(a, b); c != 0 {
		return c
	}
	if c := newerFirst(a.CreationTimestamp.Time, b.CreationTimestamp.Time); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Name, b.Name); c != 0 {
		return c
	}
	return cmp.Compare(a.UID, b.UID)
}

// cmpBool orders true before false.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	default:
		return 1
	}
}

// phaseOrdinal mirrors podPhaseToOrdinal; phases outside the map (empty,
// terminal) are 0 there too.
func phaseOrdinal(phase corev1.PodPhase) int {
	switch phase {
	case corev1.PodUnknown:
		return 1
	case corev1.PodRunning:
		return 2
	default:
		return 0
	}
}

// newerFirst orders the zero time first, then later times before earlier ones
// (afterOrZero in controller_utils).
func newerFirst(a, b time.Time) int {
	switch {
	case a.Equal(b):
		return 0
	case a.IsZero():
		return -1
	case b.IsZero():
		return 1
	case a.After(b):
		return -1
	default:
		return 1
	}
}

// deletionCost reads the pod-deletion-cost annotation; values Kubernetes
// rejects ("+1", "007", out of int32) count as 0, as GetDeletionCostFromPodAnnotations does.
func deletionCost(pod *corev1.Pod) int32 {
	value, ok := pod.Annotations[corev1.PodDeletionCost]
	if !ok || !validCostPrefix(value) {
		return 0
	}
	n, err := strconv.ParseInt(value, 10, 32)
	if err != nil {
		return 0
	}
	return int32(n)
}

// validCostPrefix rejects a leading "+" and leading zeros like Kubernetes does.
func validCostPrefix(s string) bool {
	if s == "" {
		return false
	}
	return s[0] == '-' || s == "0" || (s[0] >= '1' && s[0] <= '9')
}

// compareRestarts puts the pod with more restarts first: regular containers
// decide, sidecars (restartable init containers) break a tie.
func compareRestarts(a, b *corev1.Pod) int {
	regularA, sidecarA := maxRestarts(a)
	regularB, sidecarB := maxRestarts(b)
	if c := cmp.Compare(regularB, regularA); c != 0 {
		return c
	}
	return cmp.Compare(sidecarB, sidecarA)
}

// maxRestarts returns the highest restart count of regular and of sidecar containers.
func maxRestarts(pod *corev1.Pod) (regular, sidecar int32) {
	for _, s := range pod.Status.ContainerStatuses {
		regular = max(regular, s.RestartCount)
	}
	sidecars := make(map[string]bool)
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars[c.Name] = true
		}
	}
	for _, s := range pod.Status.InitContainerStatuses {
		if sidecars[s.Name] {
			sidecar = max(sidecar, s.RestartCount)
		}
	}
	return regular, sidecar
}
