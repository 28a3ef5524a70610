package controller

import (
	"context"
	"errors"

	logf "sigs.k8s.io/controller-runtime/pkg/log"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/abort"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/analysis"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/canary"
	"github.com/mydeployment-io/mydeployment-operator/internal/status"
)

// Canary analysis (AnalysisAnnotation): observe measures the step the
// canary record names (analyze: the I/O, through internal/optin/analysis, only
// when an interval is due), keeping the step's measurements in the
// object (object.analysis); decide reads only the verdict: a pass of the
// step lets the planner end it (analysisGate, in plan.go with the rest of
// decide: rollout.AnalysisGate), a failure aborts
// the rollout through the abort path of on-failure Abort (abortOrNot:
// the abort record, then every pod back to the current revision), and
// the plan requeues for the next measurement (syncPlan.analysisAfter).

// analyzed says o opts into canary analysis (the analysis module's spec:
// the controller's other files ask here).
func analyzed(o optin.Set) bool {
	return analysis.Of(o) != nil
}

// analysisKey is the step md's canary record names, while a canary
// rollout is under way at a step and neither aborted nor paused; ok is
// false when there is nothing to measure.
func analysisKey(md *appsv1beta1.MyDeployment, o optin.Set) (analysis.Key, bool) {
	c := canary.Of(o)
	if c == nil || !analyzed(o) || md.Spec.Paused {
		return analysis.Key{}, false
	}
	st := c.State
	if st.Revision == "" || st.Index >= len(c.Steps) || optin.RecordsOf(md).Aborted == st.Revision ||
		md.Status.CurrentRevision == st.Revision {
		return analysis.Key{}, false
	}
	return analysis.Key{Revision: st.Revision, Step: st.Index, RetriedAt: abort.Of(o).RetriedAt}, true
}

// analyze measures s's canary step when a measurement is due, and returns
// the verdict of the step's measurements (nil when there is no step to
// measure: the run kept is dropped).
func (r *MyDeploymentReconciler) analyze(ctx context.Context, s *observation) *analysis.Verdict {
	key, ok := analysisKey(s.md, s.optIn)
	if !ok {
		s.obj.analysis = nil
		return nil
	}
	q := r.Analysis
	if q == nil {
		q = analysis.HTTPQuerier{}
	}
	md := s.md
	expand := func(query string) string {
		return analysis.Query{Query: query}.Expand(key.Revision, md.Namespace, md.Name)
	}
	run, v, taken := analysis.Measure(ctx, q, analysis.Of(s.optIn), s.obj.analysis, key, expand, s.now)
	s.obj.analysis = run
	for _, m := range taken {
		r.Metrics.AnalysisMeasured(md, m.Query, string(m.Result), m.Value)
		if m.Err != nil && !errors.Is(m.Err, analysis.ErrNoData) {
			logf.FromContext(ctx).V(1).Info("analysis query inconclusive", "query", m.Query, "error", m.Err.Error())
		}
	}
	return &v
}

// analysisStatus is what the Analysis condition says of o's verdict: nil
// when nothing was measured this sync (the condition stays as it is).
func analysisStatus(o *observation) *status.Analysis {
	v := o.analysis
	if v == nil {
		return nil
	}
	reason := map[analysis.Phase]string{
		analysis.Running: appsv1beta1.ReasonAnalysisRunning, analysis.Passed: appsv1beta1.ReasonAnalysisPassed,
		analysis.Inconclusive: appsv1beta1.ReasonAnalysisInconclusive, analysis.Failed: appsv1beta1.ReasonAnalysisFailed,
	}[v.Phase]
	return &status.Analysis{Reason: reason, Message: v.Message}
}
