package canary

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
)

func md(strategy appsv1.DeploymentStrategyType, annotations map[string]string) *appsv1beta1.MyDeployment {
	return &appsv1beta1.MyDeployment{
		ObjectMeta: metav1.ObjectMeta{Annotations: annotations},
		Spec:       appsv1beta1.MyDeploymentSpec{RolloutSpec: appsv1beta1.RolloutSpec{Strategy: appsv1.DeploymentStrategy{Type: strategy}}},
	}
}

func TestParseSteps(t *testing.T) {
	for _, tc := range []struct {
		value, want, err string
	}{
		{value: "1, pause 30s, 25%, pause, 50%, pause 5m, 100%", want: "1|pause 30s|25%|pause|50%|pause 5m0s|100%"},
		{value: "pause,100%", want: "pause|100%"},
		{value: "0", want: "0"},
		{value: "5, 10%", want: "5|10%"}, // counts and percentages compare only among themselves
		{value: "", err: "at least one step"},
		{value: " ", err: "at least one step"},
		{value: "1,,2", err: `step 2 "": must be a pod count`},
		{value: "1, half", err: `step 2 "half": must be a pod count ("1"), a percentage from 0% to 100%`},
		{value: "101%", err: `step 1 "101%"`},
		{value: "-1", err: `step 1 "-1"`},
		{value: "pause -5s", err: "a pause's duration must be positive"},
		{value: "pause 0s", err: "a pause's duration must be positive"},
		{value: "pause soon", err: "a pause's duration must be positive"},
		{value: "pause5s", err: "must be a pod count"},
		{value: "50%, pause, 25%", err: `step 3 "25%" is smaller than step 1 "50%": sizes must not decrease`},
		{value: "3, 2", err: "sizes must not decrease"},
		{value: strings.Repeat("1,", 100) + "1", err: "at most 100 steps"},
		// Weight steps (issue 54): the pods follow the weight.
		{value: "weight 2%, 1, pause, weight 10%, pause, weight 50%, 50%, pause", want: "weight 2%|1|pause|weight 10%|pause|weight 50%|50%|pause"},
		{value: "weight 0%, pause, weight 100%, 100%", want: "weight 0%|pause|weight 100%|100%"},
		{value: "weight 10%, 10%, 5", want: "weight 10%|10%|5"}, // a count is held at run time if the replicas do not fit it
		{value: "weight 101%", err: `step 1 "weight 101%": a weight must be a percentage from 0% to 100%`},
		{value: "weight 5", err: "a weight must be a percentage"},
		{value: "weight -1%", err: "a weight must be a percentage"},
		{value: "weight 05%", err: "a weight must be a percentage"},
		{value: "weight 10%, weight 5%", err: `step 2 "weight 5%" is below step 1 "weight 10%": weights must not decrease`},
		{value: "1, weight 10%", err: `step 1 "1" comes before any weight step`},
		{value: "pause, 10%, weight 10%", err: `step 2 "10%" comes before any weight step`},
		{value: "weight 10%, 50%", err: `step 2 "50%" exceeds the weight stated at step 1 (10%)`},
		{value: "weight 50%, 50%, 100%", err: `step 3 "100%" exceeds the weight stated at step 1 (50%)`},
	} {
		t.Run(tc.value, func(t *testing.T) {
			steps, err := ParseSteps(tc.value)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range steps {
				got = append(got, s.String())
			}
			if strings.Join(got, "|") != tc.want {
				t.Fatalf("steps %q, want %q", strings.Join(got, "|"), tc.want)
			}
		})
	}
}

// The step record reads back as rollout.CanaryState.String writes it.
func TestStateRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 27, 22, 1, 10, 0, time.UTC)
	for _, st := range []rollout.CanaryState{{Revision: "web-5d8f", Index: 0}, {Revision: "web-5d8f", Index: 6, PausedAt: at}} {
		got, err := ParseState(st.String())
		if err != nil || got.Revision != st.Revision || got.Index != st.Index || !got.PausedAt.Equal(st.PausedAt) {
			t.Fatalf("%s parsed as %+v, %v", st, got, err)
		}
	}
	if s := (rollout.CanaryState{Revision: "r", Index: 2}).String(); s != `{"revision":"r","step":3}` {
		t.Fatalf("annotation %s: the step counts from 1", s)
	}
	for _, bad := range []string{"", "3", `{"revision":"r","step":0}`, `{"step":1}`, `{"revision":"r","step":1,"pausedAt":"soon"}`} {
		if _, err := ParseState(bad); err == nil {
			t.Fatalf("%q parsed", bad)
		}
	}
}

// Recorded reads the step record as the controller wrote it; one it
// cannot read counts as absent, whatever the other annotations say.
func TestRecorded(t *testing.T) {
	step := rollout.CanaryState{Revision: "web-7d9c", Index: 1}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		want        *rollout.CanaryState
	}{
		{"none", nil, nil},
		{"the record", map[string]string{appsv1beta1.CanaryStepAnnotation: step.String()}, &step},
		{"the record, steps that do not parse", map[string]string{
			appsv1beta1.CanaryStepAnnotation: step.String(), appsv1beta1.CanaryStepsAnnotation: "3, 2"}, &step},
		{"unreadable", map[string]string{appsv1beta1.CanaryStepAnnotation: "step 2"}, nil},
	} {
		got := Recorded(md("", tc.annotations))
		if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	if got := Recorded(nil); got != nil {
		t.Errorf("nil object: %+v", got)
	}
}

func TestPromote(t *testing.T) {
	st := rollout.CanaryState{Revision: "web-5d8f", Index: 2}
	for _, tc := range []struct {
		value string
		ends  bool
	}{
		{"web-5d8f/3", true},
		{"web-5d8f/full", true},
		{"web-5d8f/2", false}, // a promote of the step before: stale
		{"web-5d8f/4", false},
		{"web-1111/3", false}, // another rollout's
	} {
		p, err := ParsePromote(tc.value)
		if err != nil || p.String() != tc.value || p.Ends(st) != tc.ends {
			t.Fatalf("%s: parsed %+v (%v), ends %v, want %v", tc.value, p, err, p.Ends(st), tc.ends)
		}
	}
	for _, bad := range []string{"", "3", "/3", "web/0", "web/+3", "web/", "web/all"} {
		if _, err := ParsePromote(bad); err == nil {
			t.Fatalf("%q parsed", bad)
		}
	}
}

func TestParse(t *testing.T) {
	steps := map[string]string{appsv1beta1.CanaryStepsAnnotation: "1, pause, 100%"}
	spec, errs := Module.Parse(md("", steps))
	c, _ := spec.(*Canary)
	if len(errs) != 0 || c == nil || len(c.Steps) != 3 {
		t.Fatalf("%+v, %v", spec, errs)
	}
	if spec, errs := Module.Parse(md("", nil)); spec != nil || len(errs) != 0 {
		t.Fatalf("no annotations: %+v, %v", spec, errs)
	}
	for _, tc := range []struct {
		name        string
		strategy    appsv1.DeploymentStrategyType
		annotations map[string]string
		err         string
	}{
		{"with Recreate", appsv1.RecreateDeploymentStrategyType, steps,
			"metadata.annotations[apps.mydeployment.io/canary-steps]: Forbidden: canary steps need spec.strategy.type RollingUpdate"},
		{"with a partition", "", map[string]string{appsv1beta1.CanaryStepsAnnotation: "1", appsv1beta1.PartitionAnnotation: "2"},
			"metadata.annotations[apps.mydeployment.io/canary-steps]: Forbidden: canary steps cannot be set together with apps.mydeployment.io/partition"},
		{"empty", "", map[string]string{appsv1beta1.CanaryStepsAnnotation: ""},
			`metadata.annotations[apps.mydeployment.io/canary-steps]: Invalid value: "": must list at least one step`},
		{"a bad record", "", map[string]string{appsv1beta1.CanaryStepAnnotation: "3"},
			"metadata.annotations[apps.mydeployment.io/canary-step]: Invalid value"},
		{"a bad promote", "", map[string]string{appsv1beta1.CanaryPromoteAnnotation: "now"},
			"metadata.annotations[apps.mydeployment.io/canary-promote]: Invalid value"},
		{"a bad record beside steps", "", map[string]string{appsv1beta1.CanaryStepsAnnotation: "1, 100%", appsv1beta1.CanaryStepAnnotation: "3"},
			"metadata.annotations[apps.mydeployment.io/canary-step]: Invalid value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, errs := Module.Parse(md(tc.strategy, tc.annotations))
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.err) || spec != nil {
				t.Fatalf("errors %v (canary %+v), want one containing %q", errs, spec, tc.err)
			}
		})
	}
	// The record's and the promote's errors come first, then the steps'.
	_, errs = Module.Parse(md(appsv1.RecreateDeploymentStrategyType, map[string]string{appsv1beta1.CanaryStepsAnnotation: "1",
		appsv1beta1.CanaryStepAnnotation: "3", appsv1beta1.CanaryPromoteAnnotation: "now"}))
	var keys []string
	for _, e := range errs {
		keys = append(keys, e.Field)
	}
	if want := "metadata.annotations[apps.mydeployment.io/canary-step] metadata.annotations[apps.mydeployment.io/canary-promote] " +
		"metadata.annotations[apps.mydeployment.io/canary-steps]"; strings.Join(keys, " ") != want {
		t.Errorf("errors on %q, want %q", strings.Join(keys, " "), want)
	}
}

// TestPlanInput: the planner's canary input is the parsed steps, record
// and promote; Of finds the spec in a set, nil without one.
func TestPlanInput(t *testing.T) {
	st := rollout.CanaryState{Revision: "web-5d8f", Index: 1}
	spec, errs := Module.Parse(md("", map[string]string{appsv1beta1.CanaryStepsAnnotation: "1, pause, 100%",
		appsv1beta1.CanaryStepAnnotation: st.String(), appsv1beta1.CanaryPromoteAnnotation: "web-5d8f/2"}))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	set := optin.NewSet(spec)
	if Of(set) != spec {
		t.Fatalf("Of: %+v, want %+v", Of(set), spec)
	}
	if Of(optin.NewSet()) != nil {
		t.Fatal("Of a set without canary is not nil")
	}
	var in rollout.Input
	for p := range optin.Each[rollout.Planner](set) {
		p.PlanInput(&in)
	}
	c := in.Canary
	if c == nil || len(c.Steps) != 3 || c.State != st || c.Promote != (rollout.CanaryPromote{Revision: "web-5d8f", Index: 1}) {
		t.Fatalf("planner's canary %+v", c)
	}
}
