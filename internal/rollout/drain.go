package rollout

import (
	corev1 "k8s.io/api/core/v1"
)

// Drain (Input.DrainingNodes, the drain annotation SurgeFirst): a pod on a
// node being drained (cordoned, or tainted for removal by an autoscaler)
// is replaced make-before-break. The rolling step treats it as a
// specified-delete pod (removal.go: doomed, it ranks first for every
// deletion and does not count towards its side, so its replacement is
// created first) with two rules of its own:
//
//   - min surge: while an active pod is on a draining node, the step may
//     create up to Replicas+max(MaxSurge, 1) pods, so a replacement can be
//     created even when MaxSurge is 0 (drainSurge);
//   - make before break: an available pod on a draining node is removed
//     only while more than Replicas pods would stay available, that is,
//     once its replacement is available (remover.spare), whatever
//     MaxUnavailable allows. One that is not available costs nothing and
//     goes as a specified-delete pod does. Mid-rollout, an old one goes
//     first in place of an old pod the step removes anyway, within
//     MaxUnavailable (remover.takeInstead).
//
// Replaced pods are listed in Plan.Drained (and evicted under RespectPDB).
// A cordon lifted mid-move leaves one pod too many: the next plan removes
// the surplus as any scale-down does, unavailable and newest first, so the
// replacement goes if it is not yet available; the bounds hold throughout.
// Paused, no pod is replaced (as for specified delete); Recreate ignores
// DrainingNodes (admission refuses the annotation with it).

// drainingNodes is in.DrainingNodes as the planner reads it: none under
// Recreate, and never the empty node name of an unscheduled pod.
func drainingNodes(in Input) map[string]bool {
	if in.Strategy == Recreate || len(in.DrainingNodes) == 0 {
		return nil
	}
	out := make(map[string]bool, len(in.DrainingNodes))
	for name, draining := range in.DrainingNodes {
		if draining && name != "" {
			out[name] = true
		}
	}
	return out
}

// doomed says the pod is to be replaced whatever its revision: isDoomed,
// or it runs on a draining node.
func (r ranker) doomed(pod *corev1.Pod) bool {
	return isDoomed(pod) || r.onDrainingNode(pod)
}

// onDrainingNode says the pod runs on a node being drained.
func (r ranker) onDrainingNode(pod *corev1.Pod) bool {
	return pod.Spec.NodeName != "" && r.draining[pod.Spec.NodeName]
}

// drainSurge is the surge a rolling step may use: MaxSurge, and at least
// one while an active pod runs on a draining node.
func (s podSet) drainSurge(l limits) int {
	if s.draining > 0 {
		return max(l.maxSurge, 1)
	}
	return l.maxSurge
}

// drainingLast is the doomed pods in the order a step replaces them:
// ranked, those on draining nodes last, so that the spare pods they
// wait for are counted after every other removal of the step.
func (s podSet) drainingLast(doomed []*corev1.Pod) []*corev1.Pod {
	return stableFirst(s.rank.sorted(doomed), func(p *corev1.Pod) bool { return !s.rank.onDrainingNode(p) })
}

// drained is the pods of removed that run on a draining node.
func (s podSet) drained(removed []*corev1.Pod) []*corev1.Pod {
	if s.draining == 0 {
		return nil
	}
	yes, _ := splitFunc(removed, s.rank.onDrainingNode)
	return yes
}
