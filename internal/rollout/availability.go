package rollout

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/mydeployment-io/mydeployment-operator/internal/inplace"
)

// isFinished reports whether the pod reached a terminal phase: it will never
// run again, so it neither counts as a replica nor blocks a Recreate rollout.
func isFinished(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// isTerminating reports whether deletion of the pod has been requested.
func isTerminating(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp != nil
}

// isActive mirrors controller.IsPodActive: neither finished nor terminating.
func isActive(pod *corev1.Pod) bool {
	return !isFinished(pod) && !isTerminating(pod)
}

// readyCondition returns the pod's first Ready condition, like podutil does, or nil.
func readyCondition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodReady {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// isReady reports whether the pod's Ready condition is True and no
// in-place update of it is under way (inplace.Updating): from the moment
// one begins, the pod counts as neither ready nor available, whatever its
// Ready condition still says until the kubelet sees the gate.
func isReady(pod *corev1.Pod) bool {
	c := readyCondition(pod)
	return c != nil && c.Status == corev1.ConditionTrue && !inplace.Updating(pod)
}

// readySince returns when the pod became ready, or the zero time if it is not
// ready or the transition time is unknown.
func readySince(pod *corev1.Pod) time.Time {
	if !isReady(pod) {
		return time.Time{}
	}
	return readyCondition(pod).LastTransitionTime.Time
}

// IsAvailable reports whether the pod counts as available at now: it is
// active (not terminating, not Succeeded/Failed) and its Ready condition has
// been True for at least minReadySeconds, judged by the condition's
// LastTransitionTime. With minReadySeconds 0 a ready pod is available at once;
// otherwise a ready pod without a transition time never is (as in Kubernetes'
// podutil.IsPodAvailable). A nil pod is not available.
func IsAvailable(pod *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	d, ok := TimeUntilAvailable(pod, minReadySeconds, now)
	return ok && d == 0
}

// TimeUntilAvailable says how long until the pod becomes available if nothing
// about it changes. It returns (0, true) for an available pod, (d>0, true) for
// an active ready pod still inside minReadySeconds, and (0, false) for a pod
// that cannot become available by waiting alone: nil, terminating, finished,
// not ready, mid in-place update (inplace.Updating, whatever its Ready
// condition still says), or ready with an unknown transition time while
// minReadySeconds>0.
func TimeUntilAvailable(pod *corev1.Pod, minReadySeconds int32, now time.Time) (time.Duration, bool) {
	if pod == nil || !isActive(pod) || !isReady(pod) {
		return 0, false
	}
	if minReadySeconds <= 0 {
		return 0, true
	}
	since := readySince(pod)
	if since.IsZero() {
		return 0, false
	}
	remaining := since.Add(time.Duration(minReadySeconds) * time.Second).Sub(now)
	return max(remaining, 0), true
}
