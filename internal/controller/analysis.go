package controller

import (
	"context"
	"errors"
	"time"

	logf "sigs.k8s.io/controller-runtime/pkg/log"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/abort"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/analysis"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/canary"
)

// Canary analysis (AnalysisAnnotation, the analysis module): observe
// measures the step the canary record names (analyze: the I/O, through
// the module's Prometheus client, its part, only when an interval is
// due), keeping the step's measurements in the object's memory (memory.analysis),
// and hands the verdict to the module's spec (analysis.Analysis.Judged);
// decide reads only the verdict: a pass of the step lets the planner end
// it (the module's rollout.Planner: rollout.AnalysisGate), a failure
// aborts the rollout through the abort path of on-failure Abort
// (abortOrNot: the abort record, then every pod back to the current
// revision), and the plan requeues for the next measurement
// (syncPlan.analysisAfter). The status's Analysis condition is the
// module's status.Reporter.

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
// s's opt-ins with the analysis module's spec judged by the verdict of
// the step's measurements (none when there is no step to measure: the
// run kept is dropped); without analysis, s's opt-ins as they are.
func (ob observer) analyze(ctx context.Context, s *observation) optin.Set {
	a := analysis.Of(s.optIn)
	if a == nil {
		return s.optIn
	}
	key, ok := analysisKey(s.md, s.optIn)
	if !ok {
		s.mem.analysis = nil
		return s.optIn.With(a.Judged(nil))
	}
	q := analysis.QuerierOf(ob.parts)
	md := s.md
	expand := func(query string) string {
		return analysis.Query{Query: query}.Expand(key.Revision, md.Namespace, md.Name)
	}
	run, v, taken := analysis.Measure(ctx, q, a, s.mem.analysis, key, expand, s.now)
	s.mem.analysis = run
	for _, m := range taken {
		ob.metrics.AnalysisMeasured(md, m.Query, string(m.Result), m.Value)
		if m.Err != nil && !errors.Is(m.Err, analysis.ErrNoData) {
			logf.FromContext(ctx).V(1).Info("analysis query inconclusive", "query", m.Query, "error", m.Err.Error())
		}
	}
	return s.optIn.With(a.Judged(&v))
}

// analysisFailure is the failure of the update revision's analysis that
// aborts its rollout now (the failing query and value); "" when none.
func analysisFailure(o *observation, c *claimed) string {
	v := analysis.Of(o.optIn).Verdict()
	if v != nil && v.Phase == analysis.Failed && !c.newRevision && v.Key.Revision == c.update.Name {
		return v.Failure
	}
	return ""
}

// analysisAfter is when the canary step's next measurement is due; 0
// when none is (no step measured, or its analysis failed).
func analysisAfter(o *observation) time.Duration {
	if v := analysis.Of(o.optIn).Verdict(); v != nil {
		return v.After
	}
	return 0
}
