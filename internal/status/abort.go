package status

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// AbortDue reports whether the rollout to update is to be aborted now
// (on-failure Abort): md's last status says that very rollout exceeded its
// progress deadline (Progressing=False ProgressDeadlineExceeded, with
// status.updateRevision update and md's generation observed), and the
// verdict is newer than the last `rollout retry` (retriedAt). The verdict
// is this package's own (progress): with canary steps, a step whose pods
// are not available within the deadline is such a verdict too.
func AbortDue(md *appsv1beta1.MyDeployment, update string, retriedAt time.Time) bool {
	st := &md.Status
	c := Get(st, appsv1beta1.ConditionProgressing)
	return c != nil && c.Reason == appsv1beta1.ReasonProgressDeadlineExceeded && st.UpdateRevision == update &&
		st.ObservedGeneration >= md.Generation && c.LastUpdateTime.After(retriedAt)
}

// Aborted reports whether st says a rollout is aborted (Progressing=False,
// RolloutAborted).
func Aborted(st *appsv1beta1.MyDeploymentStatus) bool {
	c := Get(st, appsv1beta1.ConditionProgressing)
	return c != nil && c.Reason == appsv1beta1.ReasonRolloutAborted
}

// setAborted says the rollout to in.Aborted is aborted: Progressing=False,
// RolloutAborted, its message naming both revisions (and the failed
// analysis, when one aborts it); once set it keeps
// its timestamps (no deadline runs while aborted). The pods are counted
// as ever: updatedReplicas are those of the aborted revision, and
// Available says whether enough pods (by then the stable ones) are.
func setAborted(in Input, s *appsv1beta1.MyDeploymentStatus, now metav1.Time) {
	switch {
	case in.AbortedBy != "":
		set(s, cond(appsv1beta1.ConditionProgressing, corev1.ConditionFalse, appsv1beta1.ReasonRolloutAborted,
			fmt.Sprintf("Rollout to revision %q aborted: %s; every pod goes back to revision %q",
				in.Aborted, in.AbortedBy, in.CurrentRevision), now))
		return
	case !in.AbortOnFailure:
		// Only a module's verdict aborts, and it is not this sync's (the
		// abort's own status was not written: a restart lost the
		// analysis' measurements).
		what := "a hook failed"
		if in.AnalysisOptIn {
			what = "analysis failed"
		}
		set(s, cond(appsv1beta1.ConditionProgressing, corev1.ConditionFalse, appsv1beta1.ReasonRolloutAborted,
			fmt.Sprintf("Rollout to revision %q aborted: %s; every pod goes back to revision %q",
				in.Aborted, what, in.CurrentRevision), now))
		return
	}
	set(s, cond(appsv1beta1.ConditionProgressing, corev1.ConditionFalse, appsv1beta1.ReasonRolloutAborted,
		fmt.Sprintf("Rollout to revision %q aborted: no progress within progressDeadlineSeconds; every pod goes back to revision %q",
			in.Aborted, in.CurrentRevision), now))
}

// retried restarts the progress deadline when the rollout was started
// over: Progressing=True, RolloutRetried, from now. An abort is over when
// the controller no longer passes it (in.Aborted empty: `rollout retry`
// removed its record, or on-failure is no longer Abort), whatever the
// clocks say; a verdict not yet acted on (ProgressDeadlineExceeded) is
// over when in.RetriedAt is newer than it.
func retried(in Input, s *appsv1beta1.MyDeploymentStatus, now metav1.Time) {
	c := Get(s, appsv1beta1.ConditionProgressing)
	switch {
	case c == nil:
		return
	case c.Reason == appsv1beta1.ReasonRolloutAborted:
	case c.Reason == appsv1beta1.ReasonProgressDeadlineExceeded && in.RetriedAt.After(c.LastUpdateTime.Time):
	default:
		return
	}
	set(s, cond(appsv1beta1.ConditionProgressing, corev1.ConditionTrue, appsv1beta1.ReasonRolloutRetried,
		fmt.Sprintf("Rollout to revision %q started over", in.UpdateRevision), now))
}
