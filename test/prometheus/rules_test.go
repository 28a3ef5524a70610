// Package prometheus checks config/prometheus/rules.yaml as `promtool check
// rules` does, with Prometheus' own rule parser (model/rulefmt: YAML, PromQL
// and annotation templates), and that the alerts are ones an on-call
// engineer can act on; and that every query of the Grafana dashboards in
// config/grafana returns data from the built manager's /metrics during a
// real rollout (dashboards_test.go). It is a module of its own so that the
// Prometheus server's dependencies stay out of the operator's go.mod.
package prometheus

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"
)

var root = filepath.Join("..", "..")

// wantAlerts are the alerts the rules must define, with their minimum `for`.
var wantAlerts = map[string]time.Duration{
	"MyDeploymentRolloutStuck":            5 * time.Minute,
	"MyDeploymentReplicasMismatch":        10 * time.Minute, // available below desired for 10 minutes
	"MyDeploymentReplicaFailure":          5 * time.Minute,
	"MyDeploymentExpectationLeaks":        0,
	"MyDeploymentOperatorReconcileErrors": 15 * time.Minute,
}

// runbook are the parts every description must have.
var runbook = []string{"Meaning:", "Impact:", "Diagnosis:", "Mitigation:"}

// ruleGroups reads the PrometheusRule manifest and returns its spec, the
// content of a Prometheus rules file.
func ruleGroups(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "config", "prometheus", "rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var manifest struct {
		APIVersion string    `yaml:"apiVersion"`
		Kind       string    `yaml:"kind"`
		Spec       yaml.Node `yaml:"spec"`
	}
	if err := yaml.Unmarshal(data, &manifest); err != nil {
		t.Fatal(err)
	}
	if manifest.APIVersion != "monitoring.coreos.com/v1" || manifest.Kind != "PrometheusRule" {
		t.Fatalf("rules.yaml is a %s %s, want a monitoring.coreos.com/v1 PrometheusRule", manifest.APIVersion, manifest.Kind)
	}
	spec, err := yaml.Marshal(&manifest.Spec)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// parse is promtool's check: strict YAML, valid PromQL, valid templates.
func parse(content []byte) (*rulefmt.RuleGroups, []error) {
	return rulefmt.Parse(content, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.Default())
}

func TestRulesParse(t *testing.T) {
	groups, errs := parse(ruleGroups(t))
	for _, err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	readme, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			seen[r.Alert] = true
			minFor, wanted := wantAlerts[r.Alert]
			if !wanted {
				t.Errorf("alert %s is not in wantAlerts: add it there and to docs/operations.md", r.Alert)
			}
			if time.Duration(r.For) < minFor {
				t.Errorf("alert %s: for %v, want at least %v", r.Alert, time.Duration(r.For), minFor)
			}
			if s := r.Labels["severity"]; s != "warning" && s != "critical" {
				t.Errorf("alert %s: severity %q, want warning or critical", r.Alert, s)
			}
			if r.Annotations["summary"] == "" {
				t.Errorf("alert %s: no summary", r.Alert)
			}
			for _, part := range runbook {
				if !strings.Contains(r.Annotations["description"], part) {
					t.Errorf("alert %s: description lacks %q (runbook: meaning, impact, diagnosis, mitigation)", r.Alert, part)
				}
			}
			if !strings.Contains(string(readme), r.Alert) {
				t.Errorf("alert %s is not documented in docs/operations.md", r.Alert)
			}
			expr, err := parser.NewParser(parser.Options{}).ParseExpr(r.Expr)
			if err != nil {
				t.Fatal(err) // parse already checked it
			}
			for _, name := range metricNames(expr) {
				// docs/operations.md lists every metric the operator exposes (internal/metrics checks that).
				if !strings.Contains(string(readme), "`"+name+"`") {
					t.Errorf("alert %s uses %s, which docs/operations.md does not list as an exposed metric", r.Alert, name)
				}
			}
		}
	}
	for name := range wantAlerts {
		if !seen[name] {
			t.Errorf("alert %s is missing", name)
		}
	}
}

// The check above must be able to fail: broken rules are refused.
func TestBrokenRulesAreRefused(t *testing.T) {
	for name, rules := range map[string]string{
		"bad PromQL":    `groups: [{name: g, rules: [{alert: A, expr: "rate(mydeployment_pods_created_total[5m]"}]}]`,
		"bad template":  `groups: [{name: g, rules: [{alert: A, expr: "up == 0", annotations: {summary: "{{ $labels.name "}}]}]`,
		"unknown field": `groups: [{name: g, rules: [{alert: A, expr: "up == 0", fro: 5m}]}]`,
		"bad duration":  `groups: [{name: g, rules: [{alert: A, expr: "up == 0", for: 5 minutes}]}]`,
	} {
		if _, errs := parse([]byte(rules)); len(errs) == 0 {
			t.Errorf("%s: accepted", name)
		}
	}
}

// metricNames lists the metric names expr selects, sorted.
func metricNames(expr parser.Expr) []string {
	var names []string
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		if vs, ok := node.(*parser.VectorSelector); ok && vs.Name != "" && !slices.Contains(names, vs.Name) {
			names = append(names, vs.Name)
		}
		return nil
	})
	slices.Sort(names)
	return names
}
