package prometheus

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/mydeployment-io/mydeployment-operator/test/prometheus/promserver"
)

// The dashboards of config/grafana must show something real: every query
// of every panel, annotation and variable, evaluated by Prometheus' own
// engine over what the built manager's /metrics said while it drove a
// rollout, parses, names only series and labels the manager exports, and
// returns data. A panel whose query returns nothing fails.

// scrapeInterval is how often the test scrapes the manager (a real
// Prometheus: 15-60s; the rollout here takes seconds).
const scrapeInterval = 500 * time.Millisecond

// dashboardQuery is one PromQL query of a dashboard and where it is.
type dashboardQuery struct {
	where, expr string
	// variable is the label a label_values() variable offers, else "".
	variable string
}

// dashboardQueries reads every query of the dashboard in file: panel
// targets (also inside collapsed rows), annotations and query variables.
func dashboardQueries(t *testing.T, file string) []dashboardQuery {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "config", "grafana", file))
	if err != nil {
		t.Fatal(err)
	}
	type target struct {
		Expr string `json:"expr"`
	}
	type panel struct {
		Title   string   `json:"title"`
		Targets []target `json:"targets"`
		Panels  []panel  `json:"panels"`
	}
	var d struct {
		Panels      []panel `json:"panels"`
		Annotations struct {
			List []struct {
				Name string `json:"name"`
				Expr string `json:"expr"`
			} `json:"list"`
		} `json:"annotations"`
		Templating struct {
			List []struct {
				Name, Type string
				Query      any `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var out []dashboardQuery
	var walk func([]panel)
	walk = func(panels []panel) {
		for _, p := range panels {
			for _, tg := range p.Targets {
				out = append(out, dashboardQuery{where: fmt.Sprintf("%s panel %q", file, p.Title), expr: tg.Expr})
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, a := range d.Annotations.List {
		if a.Expr != "" {
			out = append(out, dashboardQuery{where: fmt.Sprintf("%s annotation %q", file, a.Name), expr: a.Expr})
		}
	}
	for _, v := range d.Templating.List {
		if q, ok := v.Query.(string); ok && v.Type == "query" {
			out = append(out, dashboardQuery{where: fmt.Sprintf("%s variable %q", file, v.Name), expr: q, variable: v.Name})
		}
	}
	return out
}

// labelValues is Grafana's label_values(selector, label) variable query.
var labelValues = regexp.MustCompile(`^label_values\((.*),\s*(\w+)\)$`)

// evaluator runs the dashboards' queries over the scraped samples.
type evaluator struct {
	db         storage.Queryable
	engine     *promql.Engine
	start, end time.Time
	exported   map[string]map[string]bool
	// vars are the values the dashboards' variables take: the driven object's.
	vars *strings.Replacer
	// want are the values each variable must offer.
	want map[string]string
}

// check returns what is wrong with q: an empty slice when it parses,
// names exported series and labels only, and returns data.
func (e *evaluator) check(ctx context.Context, q dashboardQuery) []string {
	expr := e.vars.Replace(q.expr)
	if m := labelValues.FindStringSubmatch(expr); m != nil {
		return e.checkVariable(ctx, m[1], m[2], e.want[q.variable])
	}
	node, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return []string{fmt.Sprintf("does not parse: %v", err)}
	}
	problems := e.checkNames(node)
	parser.Inspect(node, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			if e.points(ctx, vs.String()) == 0 {
				problems = append(problems, fmt.Sprintf("%s selects no series the manager exported", vs))
			}
		}
		return nil
	})
	if len(problems) == 0 && e.points(ctx, expr) == 0 {
		problems = append(problems, "returns no data for the driven rollout")
	}
	return problems
}

// checkNames says which metric and label names in node the manager does
// not export: each selector's metric and matchers, each aggregation's
// grouping labels.
func (e *evaluator) checkNames(node parser.Node) []string {
	var problems []string
	parser.Inspect(node, func(n parser.Node, _ []parser.Node) error {
		switch n := n.(type) {
		case *parser.VectorSelector:
			labelsOf, ok := e.exported[n.Name]
			if !ok {
				problems = append(problems, fmt.Sprintf("metric %s is not exported by the manager", n.Name))
				return nil
			}
			for _, m := range n.LabelMatchers {
				if m.Name != labels.MetricName && !labelsOf[m.Name] {
					problems = append(problems, fmt.Sprintf("%s has no label %q", n.Name, m.Name))
				}
			}
		case *parser.AggregateExpr:
			for _, l := range n.Grouping {
				if !e.someSelectorHas(n.Expr, l) {
					problems = append(problems, fmt.Sprintf("grouping by %q: no series under %s has that label", l, n))
				}
			}
		}
		return nil
	})
	return problems
}

// someSelectorHas says a metric that node selects carries label.
func (e *evaluator) someSelectorHas(node parser.Node, label string) bool {
	found := false
	parser.Inspect(node, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok && e.exported[vs.Name][label] {
			found = true
		}
		return nil
	})
	return found
}

// checkVariable checks a label_values(selector, label) variable: the
// selector parses and selects series whose label includes want.
func (e *evaluator) checkVariable(ctx context.Context, selector, label, want string) []string {
	if _, err := parser.NewParser(parser.Options{}).ParseExpr(selector); err != nil {
		return []string{fmt.Sprintf("selector %s does not parse: %v", selector, err)}
	}
	m, err := e.query(ctx, selector)
	if err != nil {
		return []string{err.Error()}
	}
	var offered []string
	for _, s := range m {
		offered = append(offered, s.Metric.Get(label))
	}
	if !slices.Contains(offered, want) {
		return []string{fmt.Sprintf("offers %q, not the driven object's %q", offered, want)}
	}
	return nil
}

// points counts the samples expr returns over the run that are not NaN
// (Grafana draws nothing for NaN); -1 if it fails.
func (e *evaluator) points(ctx context.Context, expr string) int {
	m, err := e.query(ctx, expr)
	if err != nil {
		return -1
	}
	n := 0
	for _, s := range m {
		for _, p := range s.Floats {
			if !math.IsNaN(p.F) {
				n++
			}
		}
		n += len(s.Histograms)
	}
	return n
}

// query evaluates expr as a range query over the run, every second, as a
// Grafana panel does over its time range.
func (e *evaluator) query(ctx context.Context, expr string) (promql.Matrix, error) {
	q, err := e.engine.NewRangeQuery(ctx, e.db, nil, expr, e.start, e.end, time.Second)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", expr, err)
	}
	defer q.Close()
	res := q.Exec(ctx)
	if res.Err != nil {
		return nil, fmt.Errorf("%s: %w", expr, res.Err)
	}
	m, err := res.Matrix()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", expr, err)
	}
	return m, nil
}

func TestDashboardsShowARealRollout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cl := startCluster(t)
	url, _ := startManager(t, cl.kubeconfig)
	db, err := tsdb.Open(t.TempDir(), nil, nil, tsdb.DefaultOptions(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()

	s := promserver.NewScraper(url, db, scrapeInterval, "mydeployment-operator", "manager")
	start := time.Now()
	go s.Run(ctx)
	ns := cl.newNamespace(ctx, t)
	cl.scenario(ctx, t, ns)
	time.Sleep(2 * time.Second) // the last changes in a few more scrapes
	scrapes, lastErr := s.Finish()
	end := time.Now()
	if scrapes < 10 {
		t.Fatalf("only %d scrapes of %s succeeded (last error: %v)", scrapes, url, lastErr)
	}
	t.Logf("%d scrapes over %v", scrapes, end.Sub(start).Round(time.Second))

	e := &evaluator{
		db: db, start: start, end: end, exported: s.Exported(),
		engine: promql.NewEngine(promql.EngineOpts{MaxSamples: 50_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute}),
		vars: strings.NewReplacer("$namespace", ns, "$name", objectName, "$__rate_interval", "5s",
			"$__interval", "1s", "$__range", fmt.Sprintf("%ds", int(end.Sub(start).Seconds())+1)),
		want: map[string]string{"namespace": ns, "name": objectName},
	}
	for _, file := range []string{"mydeployment-fleet.json", "mydeployment-object.json"} {
		queries := dashboardQueries(t, file)
		if len(queries) < 10 {
			t.Fatalf("%s: only %d queries", file, len(queries))
		}
		for _, q := range queries {
			for _, p := range e.check(ctx, q) {
				t.Errorf("%s: %s: %s", q.where, q.expr, p)
			}
		}
	}

	// The check itself: a metric renamed in a panel, or a label, fails it.
	for _, broken := range []string{
		`sum(mydeployment_rollouts_in_progress{namespace=~"$namespace"})`,
		`sum by (reason) (mydeployment_status_condition{namespace=~"$namespace"})`,
		`mydeployment_canary_step{namespace="$namespace",name="$name",step="1"}`,
	} {
		if len(e.check(ctx, dashboardQuery{where: "a broken panel", expr: broken})) == 0 {
			t.Errorf("the check passes %s", broken)
		}
	}
}
