package weights

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
)

var t0 = time.Date(2026, 11, 30, 20, 0, 0, 0, time.UTC)

const steps = "weight 2%, 1, pause, weight 10%, pause, weight 50%, 50%, pause"

// md is a MyDeployment of an Application with annotations a.
func md(a map[string]string) *appsv1beta1.MyDeployment {
	return &appsv1beta1.MyDeployment{ObjectMeta: metav1.ObjectMeta{Name: "shop", Annotations: a,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: appsv1beta1.GroupVersion.String(), Kind: "Application",
			Name: "shop", UID: "u", Controller: ptr.To(true)}}}}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name    string
		a       map[string]string
		want    *Weights // nil: no spec
		wantErr string   // a substring of the one error, "" for none
	}{
		{name: "no canary steps", a: nil},
		{name: "canary steps without weights", a: map[string]string{appsv1beta1.CanaryStepsAnnotation: "1, pause, 100%"}},
		{name: "weight steps: the defaults", a: map[string]string{appsv1beta1.CanaryStepsAnnotation: steps},
			want: &Weights{Headroom: 1, Delay: DefaultAbortDrainDelay}},
		{name: "weight steps with a headroom and a delay", a: map[string]string{appsv1beta1.CanaryStepsAnnotation: steps,
			HeadroomAnnotation: "1.5", AbortDrainDelayAnnotation: "5s"},
			want: &Weights{Headroom: 1.5, Delay: 5 * time.Second}},
		{name: "a delay of 0", a: map[string]string{appsv1beta1.CanaryStepsAnnotation: steps, AbortDrainDelayAnnotation: "0s"},
			want: &Weights{Headroom: 1}},
		{name: "a record read", a: map[string]string{appsv1beta1.CanaryStepsAnnotation: steps,
			RouteWeightAnnotation: `{"revision":"shop-2","stated":10,"effective":10,"at":"2026-11-30T20:00:00Z"}`},
			want: &Weights{Headroom: 1, Delay: DefaultAbortDrainDelay, Record: Record{Revision: "shop-2", Stated: 10, Effective: 10, At: t0}}},
		{name: "a record outlives the weight steps it was written for", a: map[string]string{
			RouteWeightAnnotation: `{"revision":"shop-2","stated":10,"effective":10,"at":"2026-11-30T20:00:00Z"}`}},
		{name: "a record not the Application's", a: map[string]string{RouteWeightAnnotation: `{"stated":10}`},
			wantErr: "must be written by the Application"},
		{name: "a record with a weight beyond 100", a: map[string]string{
			RouteWeightAnnotation: `{"revision":"shop-2","stated":10,"effective":110,"at":"2026-11-30T20:00:00Z"}`},
			wantErr: "percentages from 0 to 100"},
		{name: "a headroom below 1", a: map[string]string{appsv1beta1.CanaryStepsAnnotation: steps, HeadroomAnnotation: "0.9"},
			wantErr: "must be a decimal from 1 to 10"},
		{name: "a headroom not a number", a: map[string]string{appsv1beta1.CanaryStepsAnnotation: steps, HeadroomAnnotation: "NaN"},
			wantErr: "must be a decimal from 1 to 10"},
		{name: "a negative delay", a: map[string]string{appsv1beta1.CanaryStepsAnnotation: steps, AbortDrainDelayAnnotation: "-1s"},
			wantErr: "must be a duration from 0s to 10m0s"},
		{name: "a headroom without weight steps", a: map[string]string{appsv1beta1.CanaryStepsAnnotation: "1, 100%",
			HeadroomAnnotation: "2"}, wantErr: "needs weight steps"},
		{name: "a delay without any steps", a: map[string]string{AbortDrainDelayAnnotation: "10s"}, wantErr: "needs weight steps"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, errs := Module.Parse(md(tc.a))
			switch {
			case tc.wantErr == "" && len(errs) > 0:
				t.Fatalf("refused: %v", errs)
			case tc.wantErr != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.wantErr)):
				t.Fatalf("errors %v, want one saying %q", errs, tc.wantErr)
			case tc.wantErr != "":
				return
			}
			w, _ := spec.(*Weights)
			if (w == nil) != (tc.want == nil) {
				t.Fatalf("spec %+v, want %+v", spec, tc.want)
			}
			if w != nil && (w.Headroom != tc.want.Headroom || w.Delay != tc.want.Delay || w.Record != tc.want.Record) {
				t.Fatalf("spec %+v, want %+v", w, tc.want)
			}
		})
	}
}

func TestRecordRoundTrip(t *testing.T) {
	r := Record{Revision: "shop-2", Stated: 50, Effective: 30, At: t0.Add(1500 * time.Millisecond)}
	got, err := ParseRecord(r.String())
	if err != nil {
		t.Fatal(err)
	}
	if !got.Same(r) || !got.At.Equal(t0.Add(time.Second)) {
		t.Fatalf("read back %+v from %s", got, r.String())
	}
}

// aborted is w's object aborted at at (its Progressing condition).
func aborted(at time.Time) *appsv1beta1.MyDeployment {
	m := md(map[string]string{appsv1beta1.CanaryStepsAnnotation: steps})
	m.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1beta1.ConditionProgressing, Status: corev1.ConditionFalse,
		Reason: appsv1beta1.ReasonRolloutAborted, LastTransitionTime: metav1.NewTime(at)}}
	return m
}

func TestAbortDrain(t *testing.T) {
	parse := func(m *appsv1beta1.MyDeployment, record *Record) *Weights {
		if record != nil {
			m.Annotations[RouteWeightAnnotation] = record.String()
		}
		spec, errs := Module.Parse(m)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		return spec.(*Weights)
	}
	now := t0.Add(10 * time.Second)
	for _, tc := range []struct {
		name   string
		w      *Weights
		revise string
		want   time.Time
	}{
		{name: "the route sends the aborted revision nothing since t0: the delay from then",
			w:    parse(aborted(t0.Add(-time.Second)), &Record{Revision: "shop-2", Effective: 0, At: t0}),
			want: t0.Add(DefaultAbortDrainDelay)},
		{name: "the route still sends it 10%: the bound from the abort",
			w:    parse(aborted(t0.Add(-time.Second)), &Record{Revision: "shop-2", Stated: 10, Effective: 10, At: t0.Add(-time.Minute)}),
			want: t0.Add(-time.Second).Add(RouteAnswer + DefaultAbortDrainDelay)},
		{name: "a record of another revision, the abort decided now: the bound from now",
			w:    parse(md(map[string]string{appsv1beta1.CanaryStepsAnnotation: steps}), &Record{Revision: "shop-1", At: t0}),
			want: now.Add(RouteAnswer + DefaultAbortDrainDelay)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := rollout.Input{UpdateRevision: "shop-2", Now: now}
			tc.w.PlanInput(&in)
			if !in.AbortDrain.Equal(tc.want) {
				t.Fatalf("AbortDrain %v, want %v", in.AbortDrain, tc.want)
			}
		})
	}
}

func TestRouteWaits(t *testing.T) {
	w := &Weights{steps: mustSteps(t, steps)}
	for _, tc := range []struct {
		name   string
		record Record
		index  int
		waits  bool
	}{
		{name: "step 2 (size 1, stated 2%), no record", index: 1, waits: true},
		{name: "step 2, the route carries 2%", record: Record{Revision: "shop-2", Stated: 2, Effective: 2}, index: 1},
		{name: "step 5 (pause, stated 10%), the route still at the 2% step", record: Record{Revision: "shop-2", Stated: 2, Effective: 2},
			index: 4, waits: true},
		{name: "step 8 (pause, stated 50%), capped at 10% by the Ready pods: the route carries what it can",
			record: Record{Revision: "shop-2", Stated: 50, Effective: 10}, index: 7},
		{name: "a record of the previous rollout", record: Record{Revision: "shop-1", Stated: 2, Effective: 2}, index: 1, waits: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w.Record = tc.record
			why, waits := w.RouteWaits("shop-2", tc.index)
			if waits != tc.waits || waits && !strings.Contains(why, "waiting for the route to carry the stated weight") {
				t.Fatalf("waits %v (%q), want %v", waits, why, tc.waits)
			}
		})
	}
}

func mustSteps(t *testing.T, v string) []rollout.CanaryStep {
	t.Helper()
	m := md(map[string]string{appsv1beta1.CanaryStepsAnnotation: v})
	spec, errs := Module.Parse(m)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return spec.(*Weights).steps
}
