package analysis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Key names what a run measures: one step (Step, from 0) of the canary
// rollout to Revision, since the last `rollout retry` (RetriedAt: a retry
// measures the step afresh, or the failure that aborted it would abort
// it again).
type Key struct {
	Revision  string
	Step      int
	RetriedAt time.Time
}

// Run is the measurements of one step. The controller keeps one per
// MyDeployment, in memory: a manager restart loses it, and the step is
// then measured from its first measurement again (never promoted on
// measurements it lost). A run of another key is never read (a new step,
// revision or retry starts a new run).
type Run struct {
	Key Key
	// next is when the next measurement is due: one interval after the
	// run began (the step's pods get an interval before they are judged),
	// then every interval.
	next    time.Time
	queries []queryRun
}

// queryRun is one query's measurements in a run.
type queryRun struct {
	name                 string
	successes, failures  int
	last                 Measurement
	measured             bool
	failedValue, failure string
}

// Result of one measurement of a query.
type Result string

const (
	Success Result = "success"
	Failure Result = "failure"
	NoValue Result = "inconclusive"
)

// Measurement is one query's value at one time, or why there is none.
type Measurement struct {
	Query  string
	Result Result
	Value  float64
	Err    error
}

// Phase is what a run's measurements add up to.
type Phase string

const (
	// Running: not yet Count successes of every query.
	Running Phase = "Running"
	// Passed: every query met its threshold Count times, none failed more
	// than FailureLimit times: the step may end.
	Passed Phase = "Passed"
	// Inconclusive: not passed, and the last measurement of a query had
	// no value: the step holds until values return.
	Inconclusive Phase = "Inconclusive"
	// Failed: a query failed more than FailureLimit times.
	Failed Phase = "Failed"
)

// Verdict is a run's phase and what it says of its measurements.
type Verdict struct {
	Key   Key
	Phase Phase
	// Message is the last value of each query and the counts, for the
	// Analysis condition and the plugin; Failure, when Failed, names the
	// failing query, its value and threshold (the abort's message).
	Message, Failure string
	// After is when the next measurement is due; 0 once Failed.
	After time.Duration
}

// Measure returns the run of key and its verdict at now: run itself when
// it is of key and no measurement is due, else run (or a new run when it
// is of another key, nil included) with one measurement of every query
// taken through q, each query's placeholders filled by expand. Each
// measurement taken is returned too (for the metrics). A failed run
// measures no more.
func Measure(ctx context.Context, q Querier, a *Analysis, run *Run, key Key, expand func(string) string,
	now time.Time) (*Run, Verdict, []Measurement) {
	if run == nil || run.Key != key {
		run = &Run{Key: key, next: now.Add(a.Interval)}
		for _, query := range a.Queries {
			run.queries = append(run.queries, queryRun{name: query.Name})
		}
	}
	var taken []Measurement
	if !now.Before(run.next) && run.verdict(a, now).Phase != Failed {
		taken = run.measure(ctx, q, a, expand, now)
		run.next = now.Add(a.Interval)
	}
	return run, run.verdict(a, now), taken
}

// measure asks q for every query once, within one interval (at most 10 s)
// for all, and counts each result.
func (r *Run) measure(ctx context.Context, q Querier, a *Analysis, expand func(string) string, now time.Time) []Measurement {
	ctx, cancel := context.WithTimeout(ctx, min(a.Interval, 10*time.Second))
	defer cancel()
	taken := make([]Measurement, 0, len(a.Queries))
	for i, query := range a.Queries {
		m := Measurement{Query: query.Name}
		m.Value, m.Err = q.Query(ctx, a.Prometheus, expand(query.Query), now)
		qr := &r.queries[i]
		switch {
		case m.Err != nil:
			m.Result = NoValue
		case query.Threshold.Met(m.Value):
			m.Result = Success
			qr.successes++
		default:
			m.Result = Failure
			qr.failures++
			qr.failure = fmt.Sprintf("%s = %s (wants %s)", query.Name, format(m.Value), query.Threshold)
		}
		qr.last, qr.measured = m, true
		taken = append(taken, m)
	}
	return taken
}

// verdict is what r's measurements add up to at now.
func (r *Run) verdict(a *Analysis, now time.Time) Verdict {
	v := Verdict{Key: r.Key, Phase: Passed, After: max(r.next.Sub(now), time.Millisecond)}
	inconclusive := false
	parts := make([]string, 0, len(r.queries))
	for _, qr := range r.queries {
		if qr.failures > a.FailureLimit && v.Phase != Failed {
			v.Phase, v.Failure, v.After = Failed, qr.failure, 0
		}
		if qr.successes < a.Count && v.Phase == Passed {
			v.Phase = Running
		}
		inconclusive = inconclusive || qr.measured && qr.last.Result == NoValue
		parts = append(parts, qr.describe(a))
	}
	if v.Phase == Running && inconclusive {
		v.Phase = Inconclusive
	}
	v.Message = fmt.Sprintf("step %d of revision %q: %s", r.Key.Step+1, r.Key.Revision, strings.Join(parts, "; "))
	if v.Phase == Failed {
		v.Message = "failed: " + v.Failure + "; " + v.Message
	}
	return v
}

// describe is one query's last value and counts: "success-rate = 0.995
// (>= 0.99): 2 of 3 passed, 0 failed (limit 1)", or why it has no value.
func (qr queryRun) describe(a *Analysis) string {
	last := "not measured yet"
	switch {
	case !qr.measured:
	case errors.Is(qr.last.Err, ErrNoData):
		last = "no data"
	case qr.last.Err != nil:
		last = "inconclusive: " + qr.last.Err.Error()
	default:
		last = format(qr.last.Value)
	}
	th := ""
	for _, q := range a.Queries {
		if q.Name == qr.name {
			th = q.Threshold.String()
		}
	}
	return fmt.Sprintf("%s = %s (%s): %d of %d passed, %d failed (limit %d)", qr.name, last, th,
		min(qr.successes, a.Count), a.Count, qr.failures, a.FailureLimit)
}

func format(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
