package analysis

import (
	"context"
	"errors"
	"time"

	logf "sigs.k8s.io/controller-runtime/pkg/log"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
)

// Read implements optin.Reader: once the controller's cache has caught up,
// each sync measures the canary step under way when a measurement is due
// (Measure, through the module's Prometheus client, its part), from the
// step's run the module kept at the last sync (optin.ReadEnv.Memory), and
// returns a judged with the verdict; while the route does not carry the
// weight the step states (optin.RouteWaitsOf: weight steps), a Running
// verdict that says so, measuring nothing; with no step to measure (no canary
// step under way, the object paused, the step's revision aborted or
// already current), judged with none, keeping no run. a is not modified.
func (a *Analysis) Read(ctx context.Context, md *appsv1beta1.MyDeployment, env optin.ReadEnv) (optin.Spec, error) {
	key, ok := keyOf(md, env.Set)
	if !ok {
		return a.Judged(nil), nil
	}
	if why, waits := optin.RouteWaitsOf(env.Set, key.Revision, key.Step); waits {
		// A weight step's route not yet written: measured, the step would
		// be judged at the weight before it. The record's write syncs again.
		return a.Judged(&Verdict{Key: key, Phase: Running, Message: why}), nil
	}
	run, _ := env.Memory.(*Run)
	expand := func(query string) string { return Query{Query: query}.Expand(key.Revision, md.Namespace, md.Name) }
	run, v, taken := Measure(ctx, QuerierOf(env.Parts), a, run, key, expand, env.Now)
	for _, m := range taken {
		if m.Err != nil && !errors.Is(m.Err, ErrNoData) {
			logf.FromContext(ctx).V(1).Info("analysis query inconclusive", "query", m.Query, "error", m.Err.Error())
		}
	}
	out := a.Judged(&v)
	out.run, out.taken = run, taken
	return out, nil
}

// keyOf is the step md's canary record names (optin.StepOf), since the
// last retry (optin.RetriedAtOf), while a canary rollout is under way at
// a step and neither aborted nor paused nor already current; ok is false
// when there is nothing to measure.
func keyOf(md *appsv1beta1.MyDeployment, s optin.Set) (Key, bool) {
	rev, index, ok := optin.StepOf(s)
	if !ok || md.Spec.Paused || optin.RecordsOf(md).Aborted == rev || md.Status.CurrentRevision == rev {
		return Key{}, false
	}
	return Key{Revision: rev, Step: index, RetriedAt: optin.RetriedAtOf(s)}, true
}

// Keep implements optin.Keeper: the step's run, the measurements that
// live nowhere else (a restart loses them, and the step is measured from
// its first measurement again: never promoted on measurements lost).
func (a *Analysis) Keep() any {
	if a.run == nil {
		return nil
	}
	return a.run
}

// Measured implements optin.Measurer: the measurements this sync took.
func (a *Analysis) Measured() []optin.Measurement {
	out := make([]optin.Measurement, 0, len(a.taken))
	for _, m := range a.taken {
		out = append(out, optin.Measurement{Name: m.Query, Result: string(m.Result), Value: m.Value})
	}
	return out
}

// AbortCause implements optin.Aborter: the failing query, its value and
// threshold, when the step's analysis of revision failed; its event is
// AnalysisFailed.
func (a *Analysis) AbortCause(revision string) optin.Cause {
	if v := a.verdict; v != nil && v.Phase == Failed && v.Key.Revision == revision {
		return optin.Cause{Reason: appsv1beta1.ReasonAnalysisFailed, Message: "analysis failed: " + v.Failure}
	}
	return optin.Cause{}
}

// After implements optin.Aborter: when the step's next measurement is
// due; 0 when none is (no step measured, or its analysis failed).
func (a *Analysis) After() time.Duration {
	if v := a.verdict; v != nil {
		return v.After
	}
	return 0
}

var (
	_ optin.Reader   = (*Analysis)(nil)
	_ optin.Keeper   = (*Analysis)(nil)
	_ optin.Measurer = (*Analysis)(nil)
	_ optin.Aborter  = (*Analysis)(nil)
)
