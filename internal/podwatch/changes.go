package podwatch

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/mydeployment-io/mydeployment-operator/internal/inplace"
)

// UpdateMatters passes every pod event but the updates no sync can act
// on. A scale-out brings three events per pod (created, bound to a node,
// Ready); the binding changes only the node name, which the status does not
// count and the plan reads only to rank pods for deletion, from the cache,
// whenever it deletes. Skipping it saves a third of a scale-out's syncs.
// The cache's periodic resync (an update with nothing changed) is skipped
// too: the MyDeployments' own resync syncs each of them anyway.
func UpdateMatters() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		oldPod, ok := e.ObjectOld.(*corev1.Pod)
		if !ok {
			return true
		}
		newPod, ok := e.ObjectNew.(*corev1.Pod)
		if !ok {
			return true
		}
		return Changed(oldPod, newPod)
	}}
}

// Changed reports whether new differs from old in anything that decides
// a MyDeployment's status counts, how many pods its plan creates or deletes,
// or whether it adopts or releases the pod: labels (the revision, the
// selector), controller references, the deletion timestamp, the phase, the
// Ready condition and its transition time (availability), and the deletion
// cost annotation; for a pod with the in-place gate, anything of its
// trimmed spec and status (an in-place update's progress).
func Changed(old, new *corev1.Pod) bool {
	if old == new {
		return false
	}
	if !old.DeletionTimestamp.Equal(new.DeletionTimestamp) || old.Status.Phase != new.Status.Phase ||
		old.Annotations[corev1.PodDeletionCost] != new.Annotations[corev1.PodDeletionCost] {
		return true
	}
	if !maps.Equal(old.Labels, new.Labels) || !apiequality.Semantic.DeepEqual(old.OwnerReferences, new.OwnerReferences) {
		return true
	}
	if inplace.HasGate(new) && !(apiequality.Semantic.DeepEqual(old.Status, new.Status) &&
		apiequality.Semantic.DeepEqual(old.Spec, new.Spec) && old.Generation == new.Generation) {
		return true // an in-place update moves on (what keepInPlace keeps)
	}
	oldReady, newReady := readyCondition(old), readyCondition(new)
	if (oldReady == nil) != (newReady == nil) {
		return true
	}
	return oldReady != nil && (oldReady.Status != newReady.Status ||
		!oldReady.LastTransitionTime.Equal(&newReady.LastTransitionTime))
}

func readyCondition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodReady {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}
