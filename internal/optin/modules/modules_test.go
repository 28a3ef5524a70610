package modules

import (
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/analysis"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/canary"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/configrollout"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/drain"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/hooks"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/partition"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/podreplacement"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/respectpdb"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/updatemode"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/waves"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/weights"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
	"github.com/mydeployment-io/mydeployment-operator/internal/status"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func md(strategy appsv1.DeploymentStrategyType, annotations map[string]string) *appsv1beta1.MyDeployment {
	return &appsv1beta1.MyDeployment{
		ObjectMeta: metav1.ObjectMeta{Annotations: annotations},
		Spec:       appsv1beta1.MyDeploymentSpec{RolloutSpec: appsv1beta1.RolloutSpec{Strategy: appsv1.DeploymentStrategy{Type: strategy}}},
	}
}

// TestParse: the registry reads every opt-in, the modules' and the rest's,
// and each value that can never work is one error naming its annotation.
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name        string
		strategy    appsv1.DeploymentStrategyType
		annotations map[string]string
		partition   string // "" for none
		pods10      int32  // partition pods out of 10 replicas
		respectPDB  bool
		inPlace     bool
		drain       bool
		config      bool
		analysis    bool
		waves       string // the waves' node label key; "" for none
		hooks       bool
		canarySteps int    // how many canary steps; 0 for none
		err         string // substring of the only error; "" for none
	}{
		{name: "no annotations"},
		{name: "count", annotations: map[string]string{appsv1beta1.PartitionAnnotation: "8"}, partition: "8", pods10: 8},
		{name: "zero", annotations: map[string]string{appsv1beta1.PartitionAnnotation: "0"}, partition: "0"},
		{name: "count beyond replicas holds them all", annotations: map[string]string{appsv1beta1.PartitionAnnotation: "12"}, partition: "12", pods10: 10},
		{name: "percent rounds up", annotations: map[string]string{appsv1beta1.PartitionAnnotation: "75%"}, partition: "75%", pods10: 8},
		{name: "100%", annotations: map[string]string{appsv1beta1.PartitionAnnotation: "100%"}, partition: "100%", pods10: 10},
		{name: "explicit RollingUpdate", strategy: appsv1.RollingUpdateDeploymentStrategyType, annotations: map[string]string{appsv1beta1.PartitionAnnotation: "1"}, partition: "1", pods10: 1},
		{name: "negative", annotations: map[string]string{appsv1beta1.PartitionAnnotation: "-1"}, err: `metadata.annotations[apps.mydeployment.io/partition]: Invalid value: "-1"`},
		{name: "over 100%", annotations: map[string]string{appsv1beta1.PartitionAnnotation: "101%"}, err: "percentage from 0% to 100%"},
		{name: "not a number", annotations: map[string]string{appsv1beta1.PartitionAnnotation: "half"}, err: "apps.mydeployment.io/partition"},
		{name: "empty", annotations: map[string]string{appsv1beta1.PartitionAnnotation: ""}, err: "apps.mydeployment.io/partition"},
		{name: "leading plus", annotations: map[string]string{appsv1beta1.PartitionAnnotation: "+3"}, err: "apps.mydeployment.io/partition"},
		{name: "beyond int32", annotations: map[string]string{appsv1beta1.PartitionAnnotation: "2147483648"}, err: "apps.mydeployment.io/partition"},
		{name: "with Recreate", strategy: appsv1.RecreateDeploymentStrategyType, annotations: map[string]string{appsv1beta1.PartitionAnnotation: "2"}, err: "needs spec.strategy.type RollingUpdate"},
		{name: "waves", annotations: map[string]string{wavesKey: "topology.kubernetes.io/zone"}, waves: "topology.kubernetes.io/zone"},
		{name: "waves JSON", annotations: map[string]string{wavesKey: `{"key":"zone","order":["b"],"bake":"10m"}`}, waves: "zone"},
		{name: "waves invalid key", annotations: map[string]string{wavesKey: "not a key!"},
			err: `metadata.annotations[apps.mydeployment.io/waves]: Invalid value: "not a key!": key "not a key!" is not a node label key`},
		{name: "waves bad bake", annotations: map[string]string{wavesKey: `{"key":"zone","bake":"soon"}`},
			err: `metadata.annotations[apps.mydeployment.io/waves]: Invalid value: "{\"key\":\"zone\",\"bake\":\"soon\"}": bake "soon" must be a non-negative duration`},
		{name: "waves with Recreate", strategy: appsv1.RecreateDeploymentStrategyType, annotations: map[string]string{wavesKey: "zone"},
			err: "metadata.annotations[apps.mydeployment.io/waves]: Forbidden: waves need spec.strategy.type RollingUpdate"},
		{name: "waves with canary steps: two partitions, the larger holding", annotations: map[string]string{wavesKey: "zone", appsv1beta1.CanaryStepsAnnotation: "1, 100%"},
			canarySteps: 2, waves: "zone"},
		{name: "wave record not the controller's", annotations: map[string]string{wavesKey: "zone", "apps.mydeployment.io/wave-state": "2"},
			err: "metadata.annotations[apps.mydeployment.io/wave-state]: Invalid value"},
		{name: "respect-pdb", annotations: map[string]string{appsv1beta1.RespectPDBAnnotation: "true"}, respectPDB: true},
		{name: "respect-pdb false", annotations: map[string]string{appsv1beta1.RespectPDBAnnotation: "false"}},
		{name: "update-mode InPlaceIfPossible", annotations: map[string]string{appsv1beta1.UpdateModeAnnotation: "InPlaceIfPossible"}, inPlace: true},
		{name: "update-mode Recreate", annotations: map[string]string{appsv1beta1.UpdateModeAnnotation: "Recreate"}},
		{name: "update-mode unknown", annotations: map[string]string{appsv1beta1.UpdateModeAnnotation: "InPlaceOnly"},
			err: `metadata.annotations[apps.mydeployment.io/update-mode]: Unsupported value: "InPlaceOnly": supported values: "Recreate", "InPlaceIfPossible"`},
		{name: "update-mode lower case", annotations: map[string]string{appsv1beta1.UpdateModeAnnotation: "inplaceifpossible"}, err: "apps.mydeployment.io/update-mode"},
		{name: "update-mode InPlaceIfPossible with Recreate", strategy: appsv1.RecreateDeploymentStrategyType,
			annotations: map[string]string{appsv1beta1.UpdateModeAnnotation: "InPlaceIfPossible"}, err: "needs spec.strategy.type RollingUpdate"},
		{name: "update-mode Recreate with Recreate", strategy: appsv1.RecreateDeploymentStrategyType,
			annotations: map[string]string{appsv1beta1.UpdateModeAnnotation: "Recreate"}},
		{name: "drain SurgeFirst", annotations: map[string]string{appsv1beta1.DrainAnnotation: "SurgeFirst"}, drain: true},
		{name: "drain unknown", annotations: map[string]string{appsv1beta1.DrainAnnotation: "Evict"},
			err: `metadata.annotations[apps.mydeployment.io/drain]: Unsupported value: "Evict": supported values: "SurgeFirst"`},
		{name: "drain with Recreate", strategy: appsv1.RecreateDeploymentStrategyType,
			annotations: map[string]string{appsv1beta1.DrainAnnotation: "SurgeFirst"}, err: "SurgeFirst needs spec.strategy.type RollingUpdate"},
		{name: "rollout-on-config-change", annotations: map[string]string{appsv1beta1.RolloutOnConfigChangeAnnotation: "true"}, config: true},
		{name: "rollout-on-config-change false", annotations: map[string]string{appsv1beta1.RolloutOnConfigChangeAnnotation: "false"}},
		{name: "rollout-on-config-change with Recreate", strategy: appsv1.RecreateDeploymentStrategyType,
			annotations: map[string]string{appsv1beta1.RolloutOnConfigChangeAnnotation: "true"}, config: true},
		{name: "rollout-on-config-change unknown", annotations: map[string]string{appsv1beta1.RolloutOnConfigChangeAnnotation: "yes"},
			err: `metadata.annotations[apps.mydeployment.io/rollout-on-config-change]: Unsupported value: "yes": supported values: "true", "false"`},
		{name: "rollout-on-config-change upper case", annotations: map[string]string{appsv1beta1.RolloutOnConfigChangeAnnotation: "True"},
			err: "apps.mydeployment.io/rollout-on-config-change"},
		{name: "respect-pdb unknown", annotations: map[string]string{appsv1beta1.RespectPDBAnnotation: "yes"}, err: `metadata.annotations[apps.mydeployment.io/respect-pdb]: Unsupported value: "yes"`},
		{name: "canary steps", annotations: map[string]string{appsv1beta1.CanaryStepsAnnotation: "1, pause 30s, 25%, pause, 100%"}, canarySteps: 5},
		{name: "canary steps decreasing", annotations: map[string]string{appsv1beta1.CanaryStepsAnnotation: "50%, pause, 25%"},
			err: `metadata.annotations[apps.mydeployment.io/canary-steps]: Invalid value: "50%, pause, 25%": step 3 "25%" is smaller than step 1 "50%"`},
		{name: "canary steps with Recreate", strategy: appsv1.RecreateDeploymentStrategyType,
			annotations: map[string]string{appsv1beta1.CanaryStepsAnnotation: "1, 100%"}, err: "canary steps need spec.strategy.type RollingUpdate"},
		{name: "canary steps with a partition", annotations: map[string]string{appsv1beta1.CanaryStepsAnnotation: "1, 100%", appsv1beta1.PartitionAnnotation: "2"},
			partition: "2", pods10: 2, err: "canary steps cannot be set together with apps.mydeployment.io/partition"},
		{name: "canary step record not the controller's", annotations: map[string]string{appsv1beta1.CanaryStepsAnnotation: "1, 100%", appsv1beta1.CanaryStepAnnotation: "2"},
			err: "metadata.annotations[apps.mydeployment.io/canary-step]: Invalid value"},
		{name: "analysis", annotations: map[string]string{appsv1beta1.CanaryStepsAnnotation: "1, 100%", appsv1beta1.AnalysisAnnotation: analysisValue},
			canarySteps: 2, analysis: true},
		{name: "analysis not JSON", annotations: map[string]string{appsv1beta1.CanaryStepsAnnotation: "1, 100%", appsv1beta1.AnalysisAnnotation: "success >= 0.99"},
			canarySteps: 2, err: `metadata.annotations[apps.mydeployment.io/analysis]: Invalid value: "success >= 0.99": must be a JSON object`},
		{name: "analysis without canary steps", annotations: map[string]string{appsv1beta1.AnalysisAnnotation: analysisValue},
			err: "metadata.annotations[apps.mydeployment.io/analysis]: Forbidden: analysis needs apps.mydeployment.io/canary-steps"},
		{name: "canary promote not the plugin's", annotations: map[string]string{appsv1beta1.CanaryPromoteAnnotation: "now"},
			err: "metadata.annotations[apps.mydeployment.io/canary-promote]: Invalid value"},
		{name: "hooks", annotations: map[string]string{hooks.Annotation: `{"pre":{"job":"db-migrate"},"post":{"job":"notify"}}`}, hooks: true},
		{name: "hooks not JSON", annotations: map[string]string{hooks.Annotation: "pre: db-migrate"},
			err: `metadata.annotations[apps.mydeployment.io/hooks]: Invalid value: "pre: db-migrate": must be a JSON object`},
		{name: "hooks naming none", annotations: map[string]string{hooks.Annotation: "{}"}, err: "apps.mydeployment.io/hooks]: Invalid value: \"{}\": names no hook"},
		{name: "hooks job not a name", annotations: map[string]string{hooks.Annotation: `{"pre":{"job":"DB"}}`}, err: `pre.job: "DB" is not the name of a Job`},
		{name: "hooks pre onFailure Report", annotations: map[string]string{hooks.Annotation: `{"pre":{"job":"m","onFailure":"Report"}}`},
			err: `pre.onFailure: "Report" is not supported: want Hold or Abort`},
		{name: "hooks post onFailure Hold", annotations: map[string]string{hooks.Annotation: `{"post":{"job":"m","onFailure":"Hold"}}`},
			err: `post.onFailure: "Hold" is not supported: want Report or Abort`},
		{name: "hooks steps without canary steps", annotations: map[string]string{hooks.Annotation: `{"steps":{"2":{"job":"smoke"}}}`},
			err: "metadata.annotations[apps.mydeployment.io/hooks]: Forbidden: step hooks need apps.mydeployment.io/canary-steps"},
		{name: "hooks steps", annotations: map[string]string{hooks.Annotation: `{"steps":{"2":{"job":"smoke"}}}`,
			appsv1beta1.CanaryStepsAnnotation: "1, 100%"}, canarySteps: 2, hooks: true},
		{name: "hooks Abort with Recreate", strategy: appsv1.RecreateDeploymentStrategyType,
			annotations: map[string]string{hooks.Annotation: `{"pre":{"job":"m"}}`, appsv1beta1.OnFailureAnnotation: "Continue"}, hooks: true},
		{name: "hooks Abort by on-failure with Recreate", strategy: appsv1.RecreateDeploymentStrategyType,
			annotations: map[string]string{hooks.Annotation: `{"post":{"job":"m","onFailure":"Abort"}}`},
			err:         "apps.mydeployment.io/hooks]: Forbidden: onFailure Abort needs spec.strategy.type RollingUpdate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, errs := Parse(md(tc.strategy, tc.annotations))
			switch {
			case tc.err == "" && len(errs) > 0:
				t.Fatalf("unexpected errors: %v", errs)
			case tc.err != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.err)):
				t.Fatalf("errors %v, want one containing %q", errs, tc.err)
			}
			got := ""
			if p := partition.Of(o); p != nil {
				got = p.String()
			}
			if got != tc.partition {
				t.Errorf("partition %q, want %q", got, tc.partition)
			}
			if n := partition.Of(o).Pods(10); n != tc.pods10 {
				t.Errorf("partition pods of 10: %d, want %d", n, tc.pods10)
			}
			if on := respectpdb.On(o); on != tc.respectPDB {
				t.Errorf("respectPDB %v, want %v", on, tc.respectPDB)
			}
			if on := configrollout.On(o); on != tc.config {
				t.Errorf("rolloutOnConfigChange %v, want %v", on, tc.config)
			}
			if on := updatemode.InPlace(o); on != tc.inPlace {
				t.Errorf("inPlace %v, want %v", on, tc.inPlace)
			}
			if on := drain.On(o); on != tc.drain {
				t.Errorf("drain %v, want %v", on, tc.drain)
			}
			n := 0
			if c := canary.Of(o); c != nil {
				n = len(c.Steps)
			}
			if n != tc.canarySteps {
				t.Errorf("canary steps %d, want %d", n, tc.canarySteps)
			}
			key := ""
			if w := waves.Of(o); w != nil {
				key = w.Key()
			}
			if key != tc.waves {
				t.Errorf("waves key %q, want %q", key, tc.waves)
			}
			if on := analysis.Of(o) != nil; on != tc.analysis {
				t.Errorf("analysis %v, want %v", on, tc.analysis)
			}
			if on := hooks.Of(o) != nil; on != tc.hooks {
				t.Errorf("hooks %v, want %v", on, tc.hooks)
			}
		})
	}
}

// wavesKey is the waves module's annotation.
const wavesKey = waves.Annotation

// analysisValue is an AnalysisAnnotation value the analysis module takes.
const analysisValue = `{"prometheus":"http://prometheus:9090","queries":[{"name":"success-rate","query":"ok","threshold":">= 0.99"}]}`

// TestAnnotations: every key a module owns is listed
// once (the webhook re-validates an update that touches any of them).
func TestAnnotations(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range Annotations {
		if seen[k] {
			t.Errorf("%s listed twice", k)
		}
		seen[k] = true
	}
	for _, k := range []string{appsv1beta1.PartitionAnnotation, appsv1beta1.RespectPDBAnnotation, appsv1beta1.UpdateModeAnnotation,
		appsv1beta1.CanaryStepsAnnotation, appsv1beta1.AdoptRevisionsAnnotation} {
		if !seen[k] {
			t.Errorf("%s not listed", k)
		}
	}
	names := map[string]bool{}
	for _, m := range All {
		if names[m.Name()] {
			t.Errorf("module %s registered twice", m.Name())
		}
		names[m.Name()] = true
	}
}

// TestErrorOrder: errors come in All's order, each module's in its own;
// the keys in that order too (the canary module before the analysis
// module, and adopt-from, last of All, after both, as before they were
// modules).
func TestErrorOrder(t *testing.T) {
	_, errs := Parse(md("", map[string]string{
		appsv1beta1.AdoptFromAnnotation:     "web",
		appsv1beta1.AnalysisAnnotation:      "{",
		appsv1beta1.CanaryStepsAnnotation:   "3, 2",
		appsv1beta1.CanaryStepAnnotation:    "2",
		appsv1beta1.DrainAnnotation:         "Evict",
		appsv1beta1.PartitionAnnotation:     "half",
		appsv1beta1.CanaryPromoteAnnotation: "now",
	}))
	var got []string
	for _, e := range errs {
		got = append(got, e.Field)
	}
	want := []string{appsv1beta1.PartitionAnnotation, appsv1beta1.DrainAnnotation, appsv1beta1.CanaryStepAnnotation,
		appsv1beta1.CanaryPromoteAnnotation, appsv1beta1.CanaryStepsAnnotation, appsv1beta1.AnalysisAnnotation, appsv1beta1.AdoptFromAnnotation}
	for i, k := range want {
		want[i] = optin.Path(k).String()
	}
	if !slices.Equal(got, want) {
		t.Errorf("errors on\n%q, want\n%q", got, want)
	}
	keys := []string{appsv1beta1.PartitionAnnotation, appsv1beta1.RespectPDBAnnotation, appsv1beta1.UpdateModeAnnotation,
		appsv1beta1.DrainAnnotation, appsv1beta1.OnFailureAnnotation, appsv1beta1.RetriedAtAnnotation,
		appsv1beta1.RolloutOnConfigChangeAnnotation, appsv1beta1.CanaryStepsAnnotation, appsv1beta1.CanaryStepAnnotation,
		appsv1beta1.CanaryPromoteAnnotation, appsv1beta1.AnalysisAnnotation,
		weights.RouteWeightAnnotation, weights.HeadroomAnnotation, weights.AbortDrainDelayAnnotation, waves.Annotation, rollout.WaveStateAnnotation,
		hooks.Annotation, podreplacement.Annotation, appsv1beta1.AdoptFromAnnotation, appsv1beta1.AdoptRevisionsAnnotation}
	if !slices.Equal(Annotations, keys) {
		t.Errorf("keys\n%q, want\n%q", Annotations, keys)
	}
}

// TestPlannerInput: what the planner gets of a parsed object's opt-ins
// (rollout.Planner): a percentage partition resolved against spec.replicas,
// respect-pdb, canary steps; nothing without them, and no analysis gate
// from an analysis only parsed (the controller judges it first).
func TestPlannerInput(t *testing.T) {
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		partition   int32
		respectPDB  bool
		canarySteps int
	}{
		{name: "none"},
		{name: "canary steps", annotations: map[string]string{appsv1beta1.CanaryStepsAnnotation: "1, pause, 100%"}, canarySteps: 3},
		{name: "canary steps with analysis, parsed only", annotations: map[string]string{
			appsv1beta1.CanaryStepsAnnotation: "1, pause, 100%", appsv1beta1.AnalysisAnnotation: analysisValue}, canarySteps: 3},
		{name: "a percent partition, respect-pdb", annotations: map[string]string{
			appsv1beta1.PartitionAnnotation: "75%", appsv1beta1.RespectPDBAnnotation: "true"}, partition: 8, respectPDB: true},
		{name: "a count partition beyond replicas holds them all", annotations: map[string]string{appsv1beta1.PartitionAnnotation: "12"}, partition: 10},
		{name: "respect-pdb false", annotations: map[string]string{appsv1beta1.RespectPDBAnnotation: "false"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := md("", tc.annotations)
			m.Spec.Replicas = ptr.To[int32](10)
			o, errs := Parse(m)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			in, err := rollout.NewInput(m, o, "c", "u", nil, nil, t0)
			if err != nil {
				t.Fatal(err)
			}
			if in.Partition != tc.partition || in.RespectPDB != tc.respectPDB {
				t.Errorf("partition %d, respectPDB %v; want %d, %v", in.Partition, in.RespectPDB, tc.partition, tc.respectPDB)
			}
			steps := 0
			if in.Canary != nil {
				steps = len(in.Canary.Steps)
			}
			if steps != tc.canarySteps {
				t.Errorf("canary steps %d, want %d", steps, tc.canarySteps)
			}
			if in.Analysis != nil {
				t.Errorf("an analysis no controller judged gates the steps: %+v", in.Analysis)
			}
		})
	}
}

// TestStatusInput: the status counts a partition's held pods only while a
// rollout is under way (partition's status.Reporter).
func TestStatusInput(t *testing.T) {
	m := md("", map[string]string{appsv1beta1.PartitionAnnotation: "30%"})
	m.Spec.Replicas = ptr.To[int32](10)
	o, errs := Parse(m)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for _, tc := range []struct {
		current, update string
		want            int32
	}{{"a", "b", 3}, {"b", "b", 0}, {"", "b", 0}, {"a", "", 0}} {
		in := status.Input{Object: m, CurrentRevision: tc.current, UpdateRevision: tc.update}
		for r := range optin.Each[status.Reporter](o) {
			r.ReportInput(&in)
		}
		if in.Partition != tc.want {
			t.Errorf("current %q, update %q: partition %d, want %d", tc.current, tc.update, in.Partition, tc.want)
		}
	}
	if got := slices.Collect(optin.Each[status.Reporter](optin.Set{})); len(got) != 0 {
		t.Errorf("an object without opt-ins has reporters: %v", got)
	}
}
