package status

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// Analysis is what one sync measured of a canary step (the controller's
// verdict): the Analysis condition's reason (appsv1beta1.ReasonAnalysis*)
// and message (the last value of each query).
type Analysis struct {
	Reason, Message string
}

// analysisStatus is the condition status of each reason.
var analysisStatus = map[string]corev1.ConditionStatus{
	appsv1beta1.ReasonAnalysisPassed:       corev1.ConditionTrue,
	appsv1beta1.ReasonAnalysisFailed:       corev1.ConditionFalse,
	appsv1beta1.ReasonAnalysisRunning:      corev1.ConditionUnknown,
	appsv1beta1.ReasonAnalysisInconclusive: corev1.ConditionUnknown,
}

// setAnalysis maintains the Analysis condition: removed without the
// opt-in, left as it is when nothing was measured (the last step's
// verdict stays, a failure too once the rollout is aborted; an abort only
// the analysis can have made says it failed if it does not yet), otherwise
// the measurement's: a new message refreshes lastUpdateTime, the same
// status keeps lastTransitionTime.
func setAnalysis(in Input, s *appsv1beta1.MyDeploymentStatus, now metav1.Time) {
	switch {
	case !in.AnalysisOptIn:
		remove(s, appsv1beta1.ConditionAnalysis)
		return
	case in.Analysis == nil && in.Aborted != "" && !in.AbortOnFailure:
		// Aborted by the analysis, whose failing measurement this status
		// did not see (the abort's own status was not written).
		if cur := Get(s, appsv1beta1.ConditionAnalysis); cur == nil || cur.Reason != appsv1beta1.ReasonAnalysisFailed {
			in.Analysis = &Analysis{Reason: appsv1beta1.ReasonAnalysisFailed,
				Message: fmt.Sprintf("failed: the rollout to revision %q is aborted", in.Aborted)}
		}
	}
	if in.Analysis == nil {
		return
	}
	c := cond(appsv1beta1.ConditionAnalysis, analysisStatus[in.Analysis.Reason], in.Analysis.Reason, in.Analysis.Message, now)
	if cur := Get(s, appsv1beta1.ConditionAnalysis); cur != nil {
		if cur.Status == c.Status && cur.Reason == c.Reason && cur.Message == c.Message {
			return
		}
		if cur.Status == c.Status {
			c.LastTransitionTime = cur.LastTransitionTime
		}
		remove(s, appsv1beta1.ConditionAnalysis)
	}
	s.Conditions = append(s.Conditions, c)
}
