package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/canary"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
)

// Canary analysis (issue 45) as a random change: a canary whose analysis
// passes, fails at a step, or whose Prometheus is down for a while. The
// manager asks chaosPrometheus, in this process, under kills and API
// faults alike; never promoted on failed or missing data.

// analysisHealth is what chaosPrometheus answers for one MyDeployment.
type analysisHealth int

const (
	analysisHealthy analysisHealth = iota
	analysisFailing
	analysisDown
)

// chaosPrometheus answers /api/v1/query with each MyDeployment's health,
// by the md="<namespace>/<name>" its query names: 1, 0.5, or 503.
type chaosPrometheus struct {
	mu     sync.Mutex
	health map[string]analysisHealth
	url    string
}

var (
	// analysisOutcomes counts the analysis changes that converged, by health.
	analysisOutcomes [3]atomic.Int64
	analysisProm     *chaosPrometheus
	analysisPromOnce sync.Once
	queriedMD        = regexp.MustCompile(`md="([^"]+)"`)
)

// prometheus is the suite's chaosPrometheus, started on first use.
func (e *env) prometheus() *chaosPrometheus {
	analysisPromOnce.Do(func() {
		analysisProm = &chaosPrometheus{health: map[string]analysisHealth{}}
		analysisProm.url = httptest.NewServer(analysisProm).URL // lives as long as the suite
	})
	return analysisProm
}

func (p *chaosPrometheus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m := queriedMD.FindStringSubmatch(r.FormValue("query"))
	p.mu.Lock()
	h := analysisDown
	if m != nil {
		h = p.health[m[1]]
	}
	p.mu.Unlock()
	value := map[analysisHealth]string{analysisHealthy: "1", analysisFailing: "0.5"}[h]
	if h == analysisDown {
		http.Error(w, `{"status":"error","errorType":"unavailable","error":"chaos: down"}`, http.StatusServiceUnavailable)
		return
	}
	_, _ = fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,%q]}]}}`, value)
}

func (p *chaosPrometheus) set(d *tracked, h analysisHealth) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.health[d.ns+"/"+d.name] = h
}

// analysis rolls d to a new image through canary steps under analysis
// (interval 1s, count 1: a manager killed every 0.5-3 s rarely lives the
// two intervals count 2 would need after each start, and a restart counts
// a step's measurements again by design): healthy, it completes; failing
// from the first step, it must abort to the stable revision (waitAborted; the status
// watcher checks no status claims the aborted revision), and is then
// reverted or fixed forward; with Prometheus down at a step, that step must
// hold (no later step recorded, the update revision not current) until it
// is back, then complete. The opt-ins are removed once converged.
func (e *env) analysis(ctx context.Context, d *tracked, rng *rand.Rand) error {
	p, h := e.prometheus(), analysisHealth(rng.IntN(3))
	// Failing from the first step, which moves one pod of 2 or more: a
	// step that moved every pod (the last) would leave, in the abort's
	// own status, every pod updated and available (see the report of
	// issue 45). The e2e fails one at step 2.
	p.set(d, map[bool]analysisHealth{true: analysisFailing, false: analysisHealthy}[h == analysisFailing])
	next := d.cur
	next.image++
	e.w.setBounds(d.uid, d.inFlight(d.cur, next))
	a := fmt.Sprintf(`{"prometheus":%q,"interval":"1s","count":1,"queries":[{"name":"success-rate",`+
		`"query":"chaos_success{md=\"{{namespace}}/{{name}}\"}","threshold":">= 0.99"}]}`, p.url)
	if err := e.patch(ctx, d, fmt.Sprintf(`{"metadata":{"annotations":{%q:"1, 50%%, 100%%",%q:%q}},"spec":{"template":{"spec":{"containers":%s}}}}`,
		appsv1beta1.CanaryStepsAnnotation, appsv1beta1.AnalysisAnnotation, a, next.containers())); err != nil {
		return err
	}
	switch h {
	case analysisFailing:
		if err := e.waitAborted(ctx, d); err != nil {
			return fmt.Errorf("analysis failing: %w", err)
		}
		if next = d.cur; rng.IntN(2) == 0 {
			next.image += 2 // fixed forward; else reverted
		}
		p.set(d, analysisHealthy)
		e.w.setBounds(d.uid, d.inFlight(d.cur, next))
		if err := e.patch(ctx, d, fmt.Sprintf(`{"metadata":{"annotations":{%q:null}},"spec":{"template":{"spec":{"containers":%s}}}}`,
			appsv1beta1.AnalysisAnnotation, next.containers())); err != nil {
			return err
		}
	case analysisDown:
		if err := e.holdWhileDown(ctx, d, p); err != nil {
			return err
		}
	}
	if err := e.waitConverged(ctx, d, next); err != nil {
		return fmt.Errorf("analysis (%d): %w", h, err)
	}
	d.cur = next
	e.w.setBounds(d.uid, d.steady(next))
	analysisOutcomes[h].Add(1)
	return e.patch(ctx, d, fmt.Sprintf(`{"metadata":{"annotations":{%q:null,%q:null}}}`,
		appsv1beta1.CanaryStepsAnnotation, appsv1beta1.AnalysisAnnotation))
}

// noteAnalysis adds the analysis changes' outcomes to the figures.
func noteAnalysis() {
	if n := analysisOutcomes[0].Load() + analysisOutcomes[1].Load() + analysisOutcomes[2].Load(); n > 0 {
		figures.note("canary analysis: %d passed and completed, %d failed at step 1 and aborted to stable, %d held through a Prometheus outage then completed",
			analysisOutcomes[analysisHealthy].Load(), analysisOutcomes[analysisFailing].Load(), analysisOutcomes[analysisDown].Load())
	}
}

// holdWhileDown takes d's Prometheus down once its rollout is at a step,
// checks for 3 s (three intervals) that no later step is recorded and the
// update revision does not become current, then brings it back.
func (e *env) holdWhileDown(ctx context.Context, d *tracked, p *chaosPrometheus) error {
	st, err := e.waitStep(ctx, d, 0)
	if err != nil {
		return err
	}
	p.set(d, analysisDown)
	defer p.set(d, analysisHealthy)
	// A measurement under way may still pass the step: from the next one on, nothing may.
	time.Sleep(1200 * time.Millisecond)
	if st, err = e.waitStep(ctx, d, 0); err != nil {
		return err
	}
	for until := time.Now().Add(3 * time.Second); time.Now().Before(until); time.Sleep(200 * time.Millisecond) {
		md, err := e.get(ctx, d)
		if err != nil {
			continue // an API fault: look again
		}
		now, _ := canary.ParseState(md.Annotations[appsv1beta1.CanaryStepAnnotation])
		if now.Index > st.Index || md.Status.CurrentRevision == st.Revision {
			return fmt.Errorf("analysis down: promoted from step %d to %d (current %s) on missing data",
				st.Index+1, now.Index+1, md.Status.CurrentRevision)
		}
	}
	return nil
}

// waitStep waits until d's canary record names its update revision at a
// step from index on (not done), and returns it.
func (e *env) waitStep(ctx context.Context, d *tracked, index int) (rollout.CanaryState, error) {
	deadline := time.Now().Add(e.changeTimeout)
	for time.Now().Before(deadline) {
		if md, err := e.get(ctx, d); err == nil {
			st, err := canary.ParseState(md.Annotations[appsv1beta1.CanaryStepAnnotation])
			if err == nil && st.Revision == md.Status.UpdateRevision && st.Index >= index && st.Index < 3 &&
				md.Status.CurrentRevision != st.Revision {
				return st, nil
			}
		}
		select {
		case <-ctx.Done():
			return rollout.CanaryState{}, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return rollout.CanaryState{}, fmt.Errorf("no canary step %d+ of %s/%s within %v", index+1, d.ns, d.name, e.changeTimeout)
}
