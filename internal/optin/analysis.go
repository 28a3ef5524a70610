package optin

import (
	"bytes"
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
)

// Analysis is a parsed AnalysisAnnotation: the Prometheus to ask, the
// queries whose thresholds gate each canary step, how often to measure,
// how many successful measurements of every query end a step, and how
// many failed ones of a query are tolerated before the rollout aborts.
type Analysis struct {
	Prometheus   string
	Interval     time.Duration
	Count        int
	FailureLimit int
	Queries      []AnalysisQuery
}

// AnalysisQuery is one named PromQL query and the threshold its value must meet.
type AnalysisQuery struct {
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
func (q AnalysisQuery) Expand(revision, namespace, name string) string {
	return strings.NewReplacer("{{revision}}", revision, "{{namespace}}", namespace, "{{name}}", name).Replace(q.Query)
}

// Defaults and bounds of AnalysisAnnotation.
const (
	DefaultAnalysisInterval = 30 * time.Second
	minAnalysisInterval     = time.Second
	maxAnalysisQueries      = 10
	maxAnalysisCount        = 100
)

// analysisWire is AnalysisAnnotation's JSON.
type analysisWire struct {
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

// ParseAnalysis parses an AnalysisAnnotation value. The error names the
// field that is wrong and why: JSON that is not an object of the known
// fields, a prometheus that is not an http(s) URL, an interval under 1s,
// a count outside 1..100 (default 1), a negative failureLimit (default 0),
// no queries or more than 10, a query name that is not a DNS label or is
// repeated, an empty query or one with a placeholder other than
// {{revision}}, {{namespace}} and {{name}}, a threshold that is not
// ">= x", "<= x", "> x" or "< x" with x a finite number.
func ParseAnalysis(v string) (*Analysis, error) {
	var w analysisWire
	dec := json.NewDecoder(bytes.NewReader([]byte(v)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return nil, fmt.Errorf(`must be a JSON object like {"prometheus":"http://prometheus:9090","interval":"30s","count":3,"queries":[{"name":"success-rate","query":"...","threshold":">= 0.99"}]}: %w`, err)
	}
	a := &Analysis{Prometheus: w.Prometheus, Interval: DefaultAnalysisInterval, Count: 1}
	if u, err := url.Parse(w.Prometheus); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf(`prometheus %q: must be an http or https URL, like "http://prometheus.monitoring:9090"`, w.Prometheus)
	}
	if w.Interval != "" {
		d, err := time.ParseDuration(w.Interval)
		if err != nil || d < minAnalysisInterval {
			return nil, fmt.Errorf(`interval %q: must be a duration of at least 1s, like "30s"`, w.Interval)
		}
		a.Interval = d
	}
	if w.Count != nil {
		if *w.Count < 1 || *w.Count > maxAnalysisCount {
			return nil, fmt.Errorf("count %d: must be from 1 to %d", *w.Count, maxAnalysisCount)
		}
		a.Count = *w.Count
	}
	if w.FailureLimit != nil {
		if *w.FailureLimit < 0 {
			return nil, fmt.Errorf("failureLimit %d: must not be negative", *w.FailureLimit)
		}
		a.FailureLimit = *w.FailureLimit
	}
	if len(w.Queries) == 0 || len(w.Queries) > maxAnalysisQueries {
		return nil, fmt.Errorf("queries: must list from 1 to %d queries, not %d", maxAnalysisQueries, len(w.Queries))
	}
	seen := map[string]bool{}
	for i, q := range w.Queries {
		parsed, err := parseAnalysisQuery(q.Name, q.Query, q.Threshold, seen)
		if err != nil {
			return nil, fmt.Errorf("queries[%d]: %w", i, err)
		}
		a.Queries = append(a.Queries, parsed)
	}
	return a, nil
}

// parseAnalysisQuery checks one query of the annotation; seen holds the
// names of the queries before it.
func parseAnalysisQuery(name, query, threshold string, seen map[string]bool) (AnalysisQuery, error) {
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return AnalysisQuery{}, fmt.Errorf("name %q: %s", name, strings.Join(errs, "; "))
	}
	if seen[name] {
		return AnalysisQuery{}, fmt.Errorf("name %q: names must be unique", name)
	}
	seen[name] = true
	if strings.TrimSpace(query) == "" {
		return AnalysisQuery{}, fmt.Errorf("query: must not be empty")
	}
	for _, m := range placeholder.FindAllStringSubmatch(query, -1) {
		if m[1] != "revision" && m[1] != "namespace" && m[1] != "name" {
			return AnalysisQuery{}, fmt.Errorf("query: unknown placeholder %q: only {{revision}}, {{namespace}} and {{name}}", m[0])
		}
	}
	m := thresholdRe.FindStringSubmatch(strings.TrimSpace(threshold))
	if m == nil {
		return AnalysisQuery{}, fmt.Errorf(`threshold %q: must be ">= x", "<= x", "> x" or "< x", like ">= 0.99"`, threshold)
	}
	x, err := strconv.ParseFloat(m[2], 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
		return AnalysisQuery{}, fmt.Errorf("threshold %q: %q is not a finite number", threshold, m[2])
	}
	q := AnalysisQuery{Name: name, Query: placeholder.ReplaceAllStringFunc(query, func(s string) string {
		return "{{" + placeholder.FindStringSubmatch(s)[1] + "}}" // "{{ revision }}" as "{{revision}}"
	}), Threshold: Threshold{Op: m[1], Value: x}}
	return q, nil
}

// parseAnalysis reads AnalysisAnnotation, appending to errs an error naming
// it when it cannot be parsed or when md has no canary steps (the analysis
// gates canary steps: without them it would never run).
func parseAnalysis(md *appsv1beta1.MyDeployment, canary bool, errs field.ErrorList) (*Analysis, field.ErrorList) {
	v, ok := md.Annotations[appsv1beta1.AnalysisAnnotation]
	if !ok {
		return nil, errs
	}
	a, err := ParseAnalysis(v)
	switch {
	case err != nil:
		return nil, append(errs, field.Invalid(Path(appsv1beta1.AnalysisAnnotation), v, err.Error()))
	case !canary:
		return nil, append(errs, field.Forbidden(Path(appsv1beta1.AnalysisAnnotation),
			"analysis needs "+appsv1beta1.CanaryStepsAnnotation+": it gates canary steps"))
	}
	return a, errs
}
