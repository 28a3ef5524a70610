package status

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
)

// TestAnalysisSequence: the syncs of a canary's last step (every pod
// updated) under analysis: the update revision becomes current only once
// the analysis passed; the Analysis condition follows each measurement
// (a new message refreshes it, the same status keeps its transition), is
// left as it is by a sync that measured nothing, says how an abort came,
// and goes with the opt-in.
func TestAnalysisSequence(t *testing.T) {
	obj := md(4, false, appsv1beta1.MyDeploymentStatus{Replicas: 4, ReadyReplicas: 4, AvailableReplicas: 4, CurrentRevision: "web-1"})
	all := rollout.Counts{Replicas: 4, Ready: 4, Available: 4, Updated: 4}
	var transition time.Time
	for _, tc := range []struct {
		name     string
		at       time.Duration
		holds    bool
		optOut   bool
		analysis *Analysis
		abortBy  string

		current, reason, message string
		status                   corev1.ConditionStatus
		sameTransition           bool
	}{
		{name: "step 1/6: measuring: not current yet", holds: true,
			analysis: &Analysis{Reason: appsv1beta1.ReasonAnalysisRunning, Message: "1 of 2"},
			current:  "web-1", reason: appsv1beta1.ReasonAnalysisRunning, message: "1 of 2", status: corev1.ConditionUnknown},
		{name: "step 2/6: no data: holds, Unknown since step 1", at: time.Second, holds: true,
			analysis: &Analysis{Reason: appsv1beta1.ReasonAnalysisInconclusive, Message: "no data"},
			current:  "web-1", reason: appsv1beta1.ReasonAnalysisInconclusive, message: "no data", status: corev1.ConditionUnknown, sameTransition: true},
		{name: "step 3/6: nothing measured: left as it is", at: 2 * time.Second, holds: true,
			current: "web-1", reason: appsv1beta1.ReasonAnalysisInconclusive, message: "no data", status: corev1.ConditionUnknown, sameTransition: true},
		{name: "step 4/6: passed: the update revision is current", at: 3 * time.Second,
			analysis: &Analysis{Reason: appsv1beta1.ReasonAnalysisPassed, Message: "2 of 2"},
			current:  "web-2", reason: appsv1beta1.ReasonAnalysisPassed, message: "2 of 2", status: corev1.ConditionTrue},
		{name: "step 5/6: failed: aborted, saying why", at: 4 * time.Second, abortBy: "analysis failed: success-rate = 0.9 (wants >= 0.99)",
			analysis: &Analysis{Reason: appsv1beta1.ReasonAnalysisFailed, Message: "failed: success-rate = 0.9 (wants >= 0.99)"},
			current:  "web-1", reason: appsv1beta1.ReasonAnalysisFailed, message: "failed: success-rate = 0.9 (wants >= 0.99)", status: corev1.ConditionFalse},
		{name: "step 6/6: the opt-in removed: no condition", at: 5 * time.Second, optOut: true, current: "web-2"},
	} {
		in := Input{Object: obj, Synced: true, Counts: all, UpdateRevision: "web-2", CurrentRevision: "web-1", CurrentReplicas: 0,
			MaxUnavailable: 1, AbortOnFailure: true, AnalysisOptIn: !tc.optOut, Analysis: tc.analysis, AnalysisHolds: tc.holds,
			AbortedBy: tc.abortBy, Now: t0.Add(tc.at)}
		if tc.abortBy != "" {
			in.Aborted = "web-2"
		}
		st := Compute(in).Status
		if st.CurrentRevision != tc.current {
			t.Fatalf("%s: currentRevision %q, want %q", tc.name, st.CurrentRevision, tc.current)
		}
		c := Get(&st, appsv1beta1.ConditionAnalysis)
		if tc.optOut {
			if c != nil {
				t.Fatalf("%s: condition %+v, want none", tc.name, c)
			}
			continue
		}
		if c == nil || c.Reason != tc.reason || c.Message != tc.message || c.Status != tc.status ||
			tc.sameTransition != c.LastTransitionTime.Time.Equal(transition) {
			t.Fatalf("%s: condition %+v, want %s %s %q (same transition: %v)", tc.name, c, tc.status, tc.reason, tc.message, tc.sameTransition)
		}
		transition = c.LastTransitionTime.Time
		if tc.abortBy != "" {
			if p := Get(&st, appsv1beta1.ConditionProgressing); p == nil || p.Reason != appsv1beta1.ReasonRolloutAborted ||
				p.Message != `Rollout to revision "web-2" aborted: analysis failed: success-rate = 0.9 (wants >= 0.99); every pod goes back to revision "web-1"` {
				t.Fatalf("%s: Progressing %+v", tc.name, p)
			}
		}
		obj = obj.DeepCopy()
		obj.Status = st
		obj.Status.CurrentRevision = "web-1"
	}
}

// TestAnalysisAbortAfterARestart: the abort's own status was not written
// (the manager died after the abort record), so no failing measurement
// reaches the status: it still says the analysis aborted it, not the
// progress deadline, and the Analysis condition stops saying Running.
func TestAnalysisAbortAfterARestart(t *testing.T) {
	obj := md(4, false, appsv1beta1.MyDeploymentStatus{Replicas: 4, AvailableReplicas: 4, CurrentRevision: "web-1"})
	obj.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1beta1.ConditionAnalysis, Status: corev1.ConditionUnknown,
		Reason: appsv1beta1.ReasonAnalysisRunning, Message: "1 of 2"}}
	st := Compute(Input{Object: obj, Synced: true, Counts: rollout.Counts{Replicas: 4, Ready: 4, Available: 4, Updated: 1},
		UpdateRevision: "web-2", CurrentRevision: "web-1", MaxUnavailable: 1, AnalysisOptIn: true, Aborted: "web-2", Now: t0}).Status
	if c := Get(&st, appsv1beta1.ConditionAnalysis); c == nil || c.Reason != appsv1beta1.ReasonAnalysisFailed ||
		c.Message != `failed: the rollout to revision "web-2" is aborted` {
		t.Fatalf("Analysis %+v", c)
	}
	if p := Get(&st, appsv1beta1.ConditionProgressing); p == nil ||
		p.Message != `Rollout to revision "web-2" aborted: analysis failed; every pod goes back to revision "web-1"` {
		t.Fatalf("Progressing %+v", p)
	}
}

// TestHookAbortAfterARestart: an abort whose cause this sync does not
// know, of an object with no analysis, names what else aborts without
// on-failure Abort: a hook, never an analysis.
func TestHookAbortAfterARestart(t *testing.T) {
	obj := md(4, false, appsv1beta1.MyDeploymentStatus{Replicas: 4, AvailableReplicas: 4, CurrentRevision: "web-1"})
	st := Compute(Input{Object: obj, Synced: true, Counts: rollout.Counts{Replicas: 4, Ready: 4, Available: 4, Updated: 1},
		UpdateRevision: "web-2", CurrentRevision: "web-1", MaxUnavailable: 1, Aborted: "web-2", Now: t0}).Status
	if p := Get(&st, appsv1beta1.ConditionProgressing); p == nil ||
		p.Message != `Rollout to revision "web-2" aborted: a hook failed; every pod goes back to revision "web-1"` {
		t.Fatalf("Progressing %+v", p)
	}
}
