package optin

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

func TestParseCanarySteps(t *testing.T) {
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
	} {
		t.Run(tc.value, func(t *testing.T) {
			steps, err := ParseCanarySteps(tc.value)
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

func TestCanaryStateRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 27, 22, 1, 10, 0, time.UTC)
	for _, st := range []CanaryState{{Revision: "web-5d8f", Index: 0}, {Revision: "web-5d8f", Index: 6, PausedAt: at}} {
		got, err := ParseCanaryState(st.String())
		if err != nil || got.Revision != st.Revision || got.Index != st.Index || !got.PausedAt.Equal(st.PausedAt) {
			t.Fatalf("%s parsed as %+v, %v", st, got, err)
		}
	}
	if s := (CanaryState{Revision: "r", Index: 2}).String(); s != `{"revision":"r","step":3}` {
		t.Fatalf("annotation %s: the step counts from 1", s)
	}
	for _, bad := range []string{"", "3", `{"revision":"r","step":0}`, `{"step":1}`, `{"revision":"r","step":1,"pausedAt":"soon"}`} {
		if _, err := ParseCanaryState(bad); err == nil {
			t.Fatalf("%q parsed", bad)
		}
	}
}

func TestCanaryPromote(t *testing.T) {
	st := CanaryState{Revision: "web-5d8f", Index: 2}
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
		p, err := ParseCanaryPromote(tc.value)
		if err != nil || p.String() != tc.value || p.Ends(st) != tc.ends {
			t.Fatalf("%s: parsed %+v (%v), ends %v, want %v", tc.value, p, err, p.Ends(st), tc.ends)
		}
	}
	for _, bad := range []string{"", "3", "/3", "web/0", "web/+3", "web/", "web/all"} {
		if _, err := ParseCanaryPromote(bad); err == nil {
			t.Fatalf("%q parsed", bad)
		}
	}
}

func TestCanaryDescribe(t *testing.T) {
	steps, err := ParseCanarySteps("1, pause 30s, 25%, pause")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 27, 22, 1, 10, 0, time.UTC)
	for _, tc := range []struct {
		st   CanaryState
		want string
	}{
		{CanaryState{Index: 0}, "step 1 of 4: 1"},
		{CanaryState{Index: 1, PausedAt: at}, "step 2 of 4: paused 30s, until 2026-11-27T22:01:40Z"},
		{CanaryState{Index: 3}, "step 4 of 4: paused until promote"},
		{CanaryState{Index: 4}, "all 4 steps done"},
	} {
		if got := tc.st.Describe(steps); got != tc.want {
			t.Fatalf("%+v: %q, want %q", tc.st, got, tc.want)
		}
	}
}

func TestParseCanary(t *testing.T) {
	steps := map[string]string{appsv1beta1.CanaryStepsAnnotation: "1, pause, 100%"}
	o, errs := ParseRest(md("", steps))
	if len(errs) != 0 || o.Canary == nil || len(o.Canary.Steps) != 3 {
		t.Fatalf("%+v, %v", o.Canary, errs)
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, errs := ParseRest(md(tc.strategy, tc.annotations))
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.err) || o.Canary != nil {
				t.Fatalf("errors %v (canary %+v), want one containing %q", errs, o.Canary, tc.err)
			}
		})
	}
}
