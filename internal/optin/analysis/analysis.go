// Package analysis is the canary analysis opt-in (AnalysisAnnotation): each
// canary step ends only once Prometheus says the step's pods are healthy,
// and a failed measurement aborts the rollout to the current revision. The
// module parses the annotation (Module, Parse) and measures the step under
// way as the sync reads (Read, measure.go: Prometheus is asked for each
// query's value when an interval is due, the step's measurements are kept
// in a Run, the module's memory of the object, and a Verdict says what
// they add up to); the planner, the abort and the status read only the
// verdict.
package analysis

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
	"github.com/mydeployment-io/mydeployment-operator/internal/status"
)

// Name is the module's name in an optin.Set.
const Name = "analysis"

// Module is the analysis module.
var Module optin.Builder = module{}

type module struct{}

func (module) Name() string { return Name }

func (module) Keys() []string { return []string{appsv1beta1.AnalysisAnnotation} }

// Parse reads AnalysisAnnotation: nil without it. Refused, with an error
// naming it: a value ParseValue refuses, and an analysis without canary
// steps (CanaryStepsAnnotation absent: the analysis gates canary steps,
// without them it would never run). With an error there is no Spec.
func (module) Parse(md *appsv1beta1.MyDeployment) (optin.Spec, field.ErrorList) {
	v, ok := md.Annotations[appsv1beta1.AnalysisAnnotation]
	if !ok {
		return nil, nil
	}
	a, err := ParseValue(v)
	_, hasSteps := md.Annotations[appsv1beta1.CanaryStepsAnnotation]
	switch {
	case err != nil:
		return nil, field.ErrorList{field.Invalid(optin.Path(appsv1beta1.AnalysisAnnotation), v, err.Error())}
	case !hasSteps:
		return nil, field.ErrorList{field.Forbidden(optin.Path(appsv1beta1.AnalysisAnnotation),
			"analysis needs "+appsv1beta1.CanaryStepsAnnotation+": it gates canary steps")}
	}
	return a, nil
}

// Analysis is the Spec of an object that opts in: its AnalysisAnnotation
// parsed, the Prometheus to ask, the queries whose thresholds gate each
// canary step, how often to measure, how many successful measurements of
// every query end a step, and how many failed ones of a query are
// tolerated before the rollout aborts.
// Judged by the controller (Judged), it holds the verdict of the canary
// step's measurements of the sync, which its later points read.
type Analysis struct {
	Prometheus   string
	Interval     time.Duration
	Count        int
	FailureLimit int
	Queries      []Query
	// judged: the step was measured (Read, Judged), and verdict is what
	// the measurements of the step under way say (nil: no step measured);
	// run is the step's run to keep, taken the measurements of this sync.
	judged  bool
	verdict *Verdict
	run     *Run
	taken   []Measurement
}

// Build implements optin.Builder: the module's part is its Prometheus
// client (a Querier: HTTPQuerier with http.DefaultClient), built once and
// used for every object's measurements (QuerierOf).
func (module) Build(context.Context, optin.BuildEnv) (optin.Part, error) {
	return HTTPQuerier{}, nil
}

// QuerierOf is the Querier among a controller's parts (by module name);
// HTTPQuerier with http.DefaultClient when it has none (a reconciler
// built without its parts).
func QuerierOf(parts map[string]optin.Part) Querier {
	if q, ok := parts[Name].(Querier); ok {
		return q
	}
	return HTTPQuerier{}
}

// Of is the analysis s opts into; nil without one (or with an annotation
// Parse refuses).
func Of(s optin.Set) *Analysis {
	a, _ := optin.Get[*Analysis](s, Name)
	return a
}

// Module implements optin.Spec.
func (*Analysis) Module() string { return Name }

// Judged is a with v, the verdict of the canary step's measurements
// taken this sync (Read; nil: there was no step to measure), and no run
// or measurements of its own; a is not modified.
func (a *Analysis) Judged(v *Verdict) *Analysis {
	out := *a
	out.judged, out.verdict, out.run, out.taken = true, v, nil, nil
	return &out
}

// Verdict is the verdict a was judged with; nil for a nil a, a spec not
// judged, or no step measured.
func (a *Analysis) Verdict() *Verdict {
	if a == nil {
		return nil
	}
	return a.verdict
}

// PlanInput implements rollout.Planner: once judged, a canary step ends
// only on a pass of that very step (rollout.AnalysisGate; no verdict, or
// one that did not pass, holds the step). A spec only parsed, that no
// controller judged (the scorecard's simulation of the planner, which
// measures nothing), gates nothing.
func (a *Analysis) PlanInput(in *rollout.Input) {
	if !a.judged {
		return
	}
	g := &rollout.AnalysisGate{}
	if v := a.verdict; v != nil && v.Phase == Passed {
		g.Passed = rollout.CanaryState{Revision: v.Key.Revision, Index: v.Key.Step}
	}
	in.Analysis = g
}

// reasons are the Analysis condition's reason of each phase.
var reasons = map[Phase]string{
	Running: appsv1beta1.ReasonAnalysisRunning, Passed: appsv1beta1.ReasonAnalysisPassed,
	Inconclusive: appsv1beta1.ReasonAnalysisInconclusive, Failed: appsv1beta1.ReasonAnalysisFailed,
}

// ReportInput implements status.Reporter: the object opts in; the
// Analysis condition says what this sync measured (nothing: it stays as
// it is); and the update revision does not become current while the
// plan waits for the step's analysis, nor without a plan of this sync
// (Planned nil: nothing says the analysis passed).
func (a *Analysis) ReportInput(in *status.Input) {
	in.AnalysisOptIn = true
	if v := a.verdict; v != nil {
		in.Analysis = &status.Analysis{Reason: reasons[v.Phase], Message: v.Message}
	}
	in.AnalysisHolds = in.Planned == nil || in.Canary != nil && in.Canary.Analyzing
}

var (
	_ rollout.Planner = (*Analysis)(nil)
	_ status.Reporter = (*Analysis)(nil)
)

// Query is one named PromQL query and the threshold its value must meet.
type Query struct {
	Name      string
	Query     string
	Threshold Threshold
}

// Threshold is a comparison a measured value must pass: Op is one of
// ">=", "<=", ">", "<".
type Threshold struct {
	Op    string
	Value float64
}

// String is the threshold as the annotation spells it (">= 0.99").
func (t Threshold) String() string {
	return t.Op + " " + strconv.FormatFloat(t.Value, 'g', -1, 64)
}

// Met says v passes t (NaN never does).
func (t Threshold) Met(v float64) bool {
	switch t.Op {
	case ">=":
		return v >= t.Value
	case "<=":
		return v <= t.Value
	case ">":
		return v > t.Value
	case "<":
		return v < t.Value
	}
	return false
}

// Expand is q's query with its placeholders filled: {{revision}} the
// update revision's RevisionLabel value, {{namespace}} and {{name}} the
// MyDeployment's.
func (q Query) Expand(revision, namespace, name string) string {
	return strings.NewReplacer("{{revision}}", revision, "{{namespace}}", namespace, "{{name}}", name).Replace(q.Query)
}

// Defaults and bounds of AnalysisAnnotation.
const (
	DefaultInterval = 30 * time.Second
	minInterval     = time.Second
	maxQueries      = 10
	maxCount        = 100
)

// wire is AnalysisAnnotation's JSON.
type wire struct {
	Prometheus   string `json:"prometheus"`
	Interval     string `json:"interval,omitempty"`
	Count        *int   `json:"count,omitempty"`
	FailureLimit *int   `json:"failureLimit,omitempty"`
	Queries      []struct {
		Name      string `json:"name"`
		Query     string `json:"query"`
		Threshold string `json:"threshold"`
	} `json:"queries"`
}

var (
	placeholder = regexp.MustCompile(`{{\s*([^}]*?)\s*}}`)
	thresholdRe = regexp.MustCompile(`^(>=|<=|>|<)\s*(\S+)$`)
)

// ParseValue parses an AnalysisAnnotation value. The error names the
// field that is wrong and why: JSON that is not an object of the known
// fields, a prometheus that is not an http(s) URL, an interval under 1s,
// a count outside 1..100 (default 1), a negative failureLimit (default 0),
// no queries or more than 10, a query name that is not a DNS label or is
// repeated, an empty query or one with a placeholder other than
// {{revision}}, {{namespace}} and {{name}}, a threshold that is not
// ">= x", "<= x", "> x" or "< x" with x a finite number.
func ParseValue(v string) (*Analysis, error) {
	var w wire
	dec := json.NewDecoder(bytes.NewReader([]byte(v)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return nil, fmt.Errorf(`must be a JSON object like {"prometheus":"http://prometheus:9090","interval":"30s","count":3,"queries":[{"name":"success-rate","query":"...","threshold":">= 0.99"}]}: %w`, err)
	}
	a := &Analysis{Prometheus: w.Prometheus, Interval: DefaultInterval, Count: 1}
	if u, err := url.Parse(w.Prometheus); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf(`prometheus %q: must be an http or https URL, like "http://prometheus.monitoring:9090"`, w.Prometheus)
	}
	if w.Interval != "" {
		d, err := time.ParseDuration(w.Interval)
		if err != nil || d < minInterval {
			return nil, fmt.Errorf(`interval %q: must be a duration of at least 1s, like "30s"`, w.Interval)
		}
		a.Interval = d
	}
	if w.Count != nil {
		if *w.Count < 1 || *w.Count > maxCount {
			return nil, fmt.Errorf("count %d: must be from 1 to %d", *w.Count, maxCount)
		}
		a.Count = *w.Count
	}
	if w.FailureLimit != nil {
		if *w.FailureLimit < 0 {
			return nil, fmt.Errorf("failureLimit %d: must not be negative", *w.FailureLimit)
		}
		a.FailureLimit = *w.FailureLimit
	}
	if len(w.Queries) == 0 || len(w.Queries) > maxQueries {
		return nil, fmt.Errorf("queries: must list from 1 to %d queries, not %d", maxQueries, len(w.Queries))
	}
	seen := map[string]bool{}
	for i, q := range w.Queries {
		parsed, err := parseQuery(q.Name, q.Query, q.Threshold, seen)
		if err != nil {
			return nil, fmt.Errorf("queries[%d]: %w", i, err)
		}
		a.Queries = append(a.Queries, parsed)
	}
	return a, nil
}

// parseQuery checks one query of the annotation; seen holds the
// names of the queries before it.
func parseQuery(name, query, threshold string, seen map[string]bool) (Query, error) {
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return Query{}, fmt.Errorf("name %q: %s", name, strings.Join(errs, "; "))
	}
	if seen[name] {
		return Query{}, fmt.Errorf("name %q: names must be unique", name)
	}
	seen[name] = true
	if strings.TrimSpace(query) == "" {
		return Query{}, fmt.Errorf("query: must not be empty")
	}
	for _, m := range placeholder.FindAllStringSubmatch(query, -1) {
		if m[1] != "revision" && m[1] != "namespace" && m[1] != "name" {
			return Query{}, fmt.Errorf("query: unknown placeholder %q: only {{revision}}, {{namespace}} and {{name}}", m[0])
		}
	}
	m := thresholdRe.FindStringSubmatch(strings.TrimSpace(threshold))
	if m == nil {
		return Query{}, fmt.Errorf(`threshold %q: must be ">= x", "<= x", "> x" or "< x", like ">= 0.99"`, threshold)
	}
	x, err := strconv.ParseFloat(m[2], 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
		return Query{}, fmt.Errorf("threshold %q: %q is not a finite number", threshold, m[2])
	}
	q := Query{Name: name, Query: placeholder.ReplaceAllStringFunc(query, func(s string) string {
		return "{{" + placeholder.FindStringSubmatch(s)[1] + "}}" // "{{ revision }}" as "{{revision}}"
	}), Threshold: Threshold{Op: m[1], Value: x}}
	return q, nil
}
