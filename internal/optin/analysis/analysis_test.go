package analysis

import (
	"math"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
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
	if a := Of(optin.NewSet(optin.Options{}, spec)); a == nil || a.Count != 1 || len(a.Queries) != 1 {
		t.Fatalf("Of: %+v", a)
	}
	if Of(optin.NewSet(optin.Options{})) != nil {
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
