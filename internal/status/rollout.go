package status

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// RolloutComplete reports whether st shows md fully rolled out, as `kubectl
// rollout status` judges a Deployment: md's generation observed, every
// desired replica updated, every updated one available, and no pod of an
// older revision left; or, as kubectl judges a partitioned StatefulSet,
// held at its partition or at a canary pause (PartitionHeld). A scale that is not finished
// counts as not complete.
func RolloutComplete(md *appsv1beta1.MyDeployment, st *appsv1beta1.MyDeploymentStatus) bool {
	desired := ptr.Deref(md.Spec.Replicas, 1)
	return st.ObservedGeneration >= md.Generation &&
		(PartitionHeld(st) || st.UpdatedReplicas >= desired &&
			st.Replicas <= st.UpdatedReplicas &&
			st.AvailableReplicas >= st.UpdatedReplicas)
}

// PartitionHeld reports whether st says the rollout went as far as its
// partition lets it (Progressing=True, PartitionAvailable), or as far as
// its canary step before a pause (CanaryPaused) or its weight (WeightHolds).
func PartitionHeld(st *appsv1beta1.MyDeploymentStatus) bool {
	c := Get(st, appsv1beta1.ConditionProgressing)
	return c != nil && (c.Reason == appsv1beta1.ReasonPartitionAvailable || canaryHeld(c.Reason))
}

// Stopped reports whether st says the rollout does not go forward until
// something changes (Progressing=False, whatever the reason: past its
// deadline, aborted, or held by a failed hook): what `rollout retry`
// starts over.
func Stopped(st *appsv1beta1.MyDeploymentStatus) bool {
	c := Get(st, appsv1beta1.ConditionProgressing)
	return c != nil && c.Status == corev1.ConditionFalse
}

// DeadlineExceeded reports whether st says the rollout made no progress for
// progressDeadlineSeconds (Progressing=False, ProgressDeadlineExceeded).
func DeadlineExceeded(st *appsv1beta1.MyDeploymentStatus) bool {
	c := Get(st, appsv1beta1.ConditionProgressing)
	return c != nil && c.Reason == appsv1beta1.ReasonProgressDeadlineExceeded
}
