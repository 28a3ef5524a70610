package analysis

import (
	"context"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/abort"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/canary"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/weights"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
	"github.com/mydeployment-io/mydeployment-operator/internal/status"
)

const okQuery = `{"name":"success-rate","query":"ratio{revision=\"{{revision}}\"}","threshold":">= 0.99"}`

func analysisValue(fields string) string {
	return `{"prometheus":"http://prometheus:9090"` + fields + `,"queries":[` + okQuery + `]}`
}

func TestParseValue(t *testing.T) {
	for _, tc := range []struct {
		name, value, err string
		check            func(*Analysis) bool
	}{
		{name: "defaults", value: analysisValue(""), check: func(a *Analysis) bool {
			return a.Interval == DefaultInterval && a.Count == 1 && a.FailureLimit == 0 &&
				a.Queries[0].Threshold == Threshold{Op: ">=", Value: 0.99}
		}},
		{name: "every field", value: `{"prometheus":"https://p.monitoring:9090/prom","interval":"2s","count":3,"failureLimit":1,"queries":[` +
			okQuery + `,{"name":"p99","query":"lat{ns=\"{{ namespace }}\",app=\"{{name}}\"}","threshold":"<=0.3"}]}`,
			check: func(a *Analysis) bool {
				return a.Interval == 2*time.Second && a.Count == 3 && a.FailureLimit == 1 && len(a.Queries) == 2 &&
					a.Queries[1].Threshold.String() == "<= 0.3" &&
					a.Queries[1].Expand("web-1", "shop", "web") == `lat{ns="shop",app="web"}` &&
					a.Queries[0].Expand("web-1", "shop", "web") == `ratio{revision="web-1"}`
			}},
		{name: "not json", value: "success >= 0.99", err: "must be a JSON object"},
		{name: "unknown field", value: analysisValue(`,"initialDelay":"5s"`), err: `unknown field "initialDelay"`},
		{name: "no prometheus", value: `{"queries":[` + okQuery + `]}`, err: `prometheus "": must be an http or https URL`},
		{name: "prometheus not a URL", value: `{"prometheus":"prometheus:9090","queries":[` + okQuery + `]}`, err: "must be an http or https URL"},
		{name: "short interval", value: analysisValue(`,"interval":"500ms"`), err: `interval "500ms": must be a duration of at least 1s`},
		{name: "bad interval", value: analysisValue(`,"interval":"often"`), err: `interval "often"`},
		{name: "zero count", value: analysisValue(`,"count":0`), err: "count 0: must be from 1 to 100"},
		{name: "negative failure limit", value: analysisValue(`,"failureLimit":-1`), err: "failureLimit -1: must not be negative"},
		{name: "no queries", value: `{"prometheus":"http://p:9090","queries":[]}`, err: "queries: must list from 1 to 10 queries, not 0"},
		{name: "bad name", value: `{"prometheus":"http://p:9090","queries":[{"name":"Success Rate","query":"x","threshold":">= 1"}]}`,
			err: `queries[0]: name "Success Rate"`},
		{name: "repeated name", value: `{"prometheus":"http://p:9090","queries":[` + okQuery + `,` + okQuery + `]}`,
			err: `queries[1]: name "success-rate": names must be unique`},
		{name: "empty query", value: `{"prometheus":"http://p:9090","queries":[{"name":"a","query":" ","threshold":">= 1"}]}`,
			err: "queries[0]: query: must not be empty"},
		{name: "unknown placeholder", value: `{"prometheus":"http://p:9090","queries":[{"name":"a","query":"x{pod=\"{{pod}}\"}","threshold":">= 1"}]}`,
			err: `unknown placeholder "{{pod}}"`},
		{name: "threshold without operator", value: `{"prometheus":"http://p:9090","queries":[{"name":"a","query":"x","threshold":"0.99"}]}`,
			err: `threshold "0.99": must be ">= x"`},
		{name: "threshold equal", value: `{"prometheus":"http://p:9090","queries":[{"name":"a","query":"x","threshold":"== 1"}]}`,
			err: `threshold "== 1"`},
		{name: "threshold not a number", value: `{"prometheus":"http://p:9090","queries":[{"name":"a","query":"x","threshold":">= high"}]}`,
			err: `"high" is not a finite number`},
		{name: "threshold infinite", value: `{"prometheus":"http://p:9090","queries":[{"name":"a","query":"x","threshold":"<= Inf"}]}`,
			err: `"Inf" is not a finite number`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := ParseValue(tc.value)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(a) {
				t.Fatalf("parsed %+v", a)
			}
		})
	}
}

func TestThresholdMet(t *testing.T) {
	for _, tc := range []struct {
		th   Threshold
		v    float64
		want bool
	}{
		{Threshold{">=", 0.99}, 0.99, true}, {Threshold{">=", 0.99}, 0.98, false},
		{Threshold{"<=", 0.3}, 0.3, true}, {Threshold{"<=", 0.3}, 0.31, false},
		{Threshold{">", 1}, 1, false}, {Threshold{"<", 1}, 0.5, true},
		{Threshold{">=", 0}, math.NaN(), false}, {Threshold{"<=", 0}, math.NaN(), false},
	} {
		if got := tc.th.Met(tc.v); got != tc.want {
			t.Errorf("%v met by %v: %v, want %v", tc.th, tc.v, got, tc.want)
		}
	}
}

func TestAnalysisNeedsCanarySteps(t *testing.T) {
	md := &appsv1beta1.MyDeployment{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
		appsv1beta1.AnalysisAnnotation: analysisValue(""),
	}}}
	spec, errs := Module.Parse(md)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), appsv1beta1.AnalysisAnnotation) ||
		!strings.Contains(errs[0].Error(), "analysis needs "+appsv1beta1.CanaryStepsAnnotation) || spec != nil {
		t.Fatalf("errors %v, analysis %+v", errs, spec)
	}
	md.Annotations[appsv1beta1.CanaryStepsAnnotation] = "1, 50%, 100%"
	if spec, errs = Module.Parse(md); len(errs) != 0 || spec == nil {
		t.Fatalf("errors %v, analysis %+v", errs, spec)
	}
	if a := Of(optin.NewSet(spec)); a == nil || a.Count != 1 || len(a.Queries) != 1 {
		t.Fatalf("Of: %+v", a)
	}
	if Of(optin.NewSet()) != nil {
		t.Fatal("Of an object without analysis is not nil")
	}
}

// TestParseErrors: an annotation Parse refuses is one error naming it,
// and no Spec; without the annotation, neither.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		err         string
	}{
		{name: "none", annotations: map[string]string{appsv1beta1.CanaryStepsAnnotation: "1, 100%"}},
		{name: "not json", annotations: map[string]string{appsv1beta1.CanaryStepsAnnotation: "1, 100%", appsv1beta1.AnalysisAnnotation: "{"},
			err: `metadata.annotations[apps.mydeployment.io/analysis]: Invalid value: "{": must be a JSON object`},
		{name: "invalid without steps", annotations: map[string]string{appsv1beta1.AnalysisAnnotation: "{"},
			err: `metadata.annotations[apps.mydeployment.io/analysis]: Invalid value: "{"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, errs := Module.Parse(&appsv1beta1.MyDeployment{ObjectMeta: metav1.ObjectMeta{Annotations: tc.annotations}})
			if spec != nil {
				t.Errorf("spec %+v, want none", spec)
			}
			switch {
			case tc.err == "" && len(errs) > 0:
				t.Fatalf("unexpected errors: %v", errs)
			case tc.err != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.err)):
				t.Fatalf("errors %v, want one containing %q", errs, tc.err)
			}
		})
	}
}

// TestPoints: what the planner and the status get of an analysis: a spec
// only parsed gates nothing (the planner's callers that measure nothing),
// a judged one holds every step but the one whose analysis passed; the
// status says the object opts in, the verdict as the Analysis condition's
// reason and message, and holds the update revision without a plan or
// while the plan waits for the analysis.
func TestPoints(t *testing.T) {
	parsed, err := ParseValue(analysisValue(""))
	if err != nil {
		t.Fatal(err)
	}
	key := Key{Revision: "web-2", Step: 1}
	passed := &Verdict{Key: key, Phase: Passed, Message: "passed"}
	for _, tc := range []struct {
		name   string
		spec   *Analysis
		gate   *rollout.AnalysisGate
		reason string
	}{
		{name: "parsed only", spec: parsed},
		{name: "no step measured", spec: parsed.Judged(nil), gate: &rollout.AnalysisGate{}},
		{name: "running", spec: parsed.Judged(&Verdict{Key: key, Phase: Running}), gate: &rollout.AnalysisGate{},
			reason: appsv1beta1.ReasonAnalysisRunning},
		{name: "inconclusive", spec: parsed.Judged(&Verdict{Key: key, Phase: Inconclusive}), gate: &rollout.AnalysisGate{},
			reason: appsv1beta1.ReasonAnalysisInconclusive},
		{name: "failed", spec: parsed.Judged(&Verdict{Key: key, Phase: Failed}), gate: &rollout.AnalysisGate{},
			reason: appsv1beta1.ReasonAnalysisFailed},
		{name: "passed", spec: parsed.Judged(passed), gate: &rollout.AnalysisGate{Passed: rollout.CanaryState{Revision: "web-2", Index: 1}},
			reason: appsv1beta1.ReasonAnalysisPassed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var in rollout.Input
			tc.spec.PlanInput(&in)
			if !reflect.DeepEqual(in.Analysis, tc.gate) {
				t.Errorf("gate %+v, want %+v", in.Analysis, tc.gate)
			}
			var st status.Input
			tc.spec.ReportInput(&st)
			reason := ""
			if st.Analysis != nil {
				reason = st.Analysis.Reason
			}
			if !st.AnalysisOptIn || reason != tc.reason {
				t.Errorf("opt-in %v, reason %q; want true, %q", st.AnalysisOptIn, reason, tc.reason)
			}
		})
	}
	if parsed.judged || parsed.Verdict() != nil || parsed.Judged(passed).Verdict() != passed || (*Analysis)(nil).Verdict() != nil {
		t.Error("Judged modified the spec, or Verdict is not the one judged")
	}
	spec := parsed.Judged(passed)
	for _, tc := range []struct {
		name    string
		planned bool
		canary  *rollout.CanaryProgress
		holds   bool
	}{
		{name: "no plan", holds: true},
		{name: "a plan without a canary step", planned: true},
		{name: "a plan at a step done", planned: true, canary: &rollout.CanaryProgress{}},
		{name: "a plan waiting for the analysis", planned: true, canary: &rollout.CanaryProgress{Analyzing: true}, holds: true},
	} {
		in := status.Input{Canary: tc.canary}
		if tc.planned {
			in.Planned = ptr.To[int32](2)
		}
		spec.ReportInput(&in)
		if in.AnalysisHolds != tc.holds || in.Analysis == nil || in.Analysis.Message != "passed" {
			t.Errorf("%s: holds %v, analysis %+v; want %v", tc.name, in.AnalysisHolds, in.Analysis, tc.holds)
		}
	}
}

// querierFunc is a Querier of a function.
type querierFunc func(ctx context.Context, prometheus, query string, at time.Time) (float64, error)

func (f querierFunc) Query(ctx context.Context, prometheus, query string, at time.Time) (float64, error) {
	return f(ctx, prometheus, query, at)
}

// TestQuerierOf: the module's part is its Prometheus client, and a
// controller without it asks Prometheus with http.DefaultClient.
func TestQuerierOf(t *testing.T) {
	p, err := Module.(optin.Builder).Build(context.Background(), optin.BuildEnv{})
	if err != nil || p != (HTTPQuerier{}) {
		t.Fatalf("part %#v, error %v; want an HTTPQuerier", p, err)
	}
	if q := QuerierOf(map[string]optin.Part{Name: p}); q != (HTTPQuerier{}) {
		t.Errorf("QuerierOf the built part: %#v", q)
	}
	if q := QuerierOf(nil); q != (HTTPQuerier{}) {
		t.Errorf("QuerierOf no parts: %#v", q)
	}
	asked := 0
	fake := querierFunc(func(context.Context, string, string, time.Time) (float64, error) { asked++; return 1, nil })
	if _, err := QuerierOf(map[string]optin.Part{Name: fake}).Query(context.Background(), "", "", time.Time{}); err != nil || asked != 1 {
		t.Errorf("QuerierOf did not return the part it was given (asked %d, error %v)", asked, err)
	}
}

// TestReadMeasuresTheStepUnderWay: Read measures the step the canary spec
// names (optin.StepOf), since the abort spec's retry (optin.RetriedAtOf),
// with the module's part and the run it kept at the last sync
// (optin.Keeper); without a step, or paused, or with the step's revision
// current, it measures nothing and keeps no run.
func TestReadMeasuresTheStepUnderWay(t *testing.T) {
	a, err := ParseValue(`{"prometheus":"http://prometheus","interval":"10s","count":2,"queries":[
		{"name":"ok","query":"ok{revision=\"{{revision}}\"}","threshold":">= 0.99"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	var asked []string
	q := querierFunc(func(_ context.Context, _, query string, _ time.Time) (float64, error) {
		asked = append(asked, query)
		return 1, nil
	})
	retried := time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)
	c := &canary.Canary{Canary: rollout.Canary{Steps: []rollout.CanaryStep{{Size: optin.PodCount{Value: 1}}, {Pause: true}},
		State: rollout.CanaryState{Revision: "web-2", Index: 0}}}
	set := optin.NewSet(c, a, &abort.Abort{RetriedAt: retried})
	md := &appsv1beta1.MyDeployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}}
	t0 := time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC)
	env := optin.ReadEnv{Now: t0, Parts: map[string]optin.Part{Name: q}}
	var mem map[string]any
	read := func(at time.Duration) *Analysis {
		t.Helper()
		env.Now = t0.Add(at)
		s, err := set.Read(context.Background(), md, env, mem)
		if err != nil {
			t.Fatal(err)
		}
		mem = s.Kept()
		return Of(s)
	}
	first := read(0)
	if v := first.Verdict(); v == nil || v.Key != (Key{Revision: "web-2", Step: 0, RetriedAt: retried}) || v.Phase != Running {
		t.Fatalf("first read: %+v", v)
	}
	if len(asked) != 0 || first.Keep() == nil || mem[Name] != first.Keep() {
		t.Fatalf("first read asked %v (none is due before an interval) and kept %v", asked, mem)
	}
	second := read(10 * time.Second)
	if len(asked) != 1 || asked[0] != `ok{revision="web-2"}` || len(second.Measured()) != 1 || second.Measured()[0].Result != "success" {
		t.Fatalf("an interval later: asked %v, measured %+v", asked, second.Measured())
	}
	if v := read(20 * time.Second).Verdict(); v.Phase != Passed || v.After != 10*time.Second {
		t.Fatalf("two successes over the kept run: %+v", v)
	}
	md.Status.CurrentRevision = "web-2"
	if none := read(30 * time.Second); none.Verdict() != nil || none.Keep() != nil || len(mem) != 0 {
		t.Fatalf("the step's revision current: verdict %+v, kept %v", none.Verdict(), mem)
	}
}

// TestReadWaitsForTheRouteWeight: with weight steps, a step is measured
// only once the route carries the weight it states (the weights module's
// record): before, the verdict says why it waits, and nothing is asked.
func TestReadWaitsForTheRouteWeight(t *testing.T) {
	a, err := ParseValue(`{"prometheus":"http://prometheus","interval":"10s","queries":[
		{"name":"ok","query":"ok{revision=\"{{revision}}\"}","threshold":">= 0.99"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	asked := 0
	q := querierFunc(func(context.Context, string, string, time.Time) (float64, error) { asked++; return 1, nil })
	md := &appsv1beta1.MyDeployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns",
		Annotations: map[string]string{appsv1beta1.CanaryStepsAnnotation: "weight 10%, 1, pause",
			appsv1beta1.CanaryStepAnnotation: `{"revision":"web-2","step":2}`},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: appsv1beta1.GroupVersion.String(), Kind: "Application",
			Name: "web", UID: "u", Controller: ptr.To(true)}}}}
	t0 := time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC)
	var mem map[string]any
	read := func(at time.Duration) *Verdict {
		t.Helper()
		c, errs := canary.Module.Parse(md)
		w, werrs := weights.Module.Parse(md)
		if len(errs)+len(werrs) > 0 {
			t.Fatal(errs, werrs)
		}
		s, err := optin.NewSet(c, a, w).Read(context.Background(), md,
			optin.ReadEnv{Now: t0.Add(at), Parts: map[string]optin.Part{Name: q}}, mem)
		if err != nil {
			t.Fatal(err)
		}
		mem = s.Kept()
		return Of(s).Verdict()
	}
	for _, at := range []time.Duration{0, 20 * time.Second} {
		if v := read(at); v == nil || v.Phase != Running || !strings.Contains(v.Message, "waiting for the route to carry the stated weight 10%") {
			t.Fatalf("no route record, at +%v: verdict %+v", at, v)
		}
	}
	if asked != 0 {
		t.Fatalf("asked Prometheus %d times before the route carried the step's weight", asked)
	}
	md.Annotations[weights.RouteWeightAnnotation] = weights.Record{Revision: "web-2", Stated: 10, Effective: 10, At: t0}.String()
	read(30 * time.Second)
	if v := read(40 * time.Second); v.Phase != Passed || asked != 1 {
		t.Fatalf("the route at 10%%: verdict %+v after %d queries", v, asked)
	}
}
