package waves

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/nodes"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/nodes/nodestest"
	"github.com/mydeployment-io/mydeployment-operator/internal/podwatch"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
	"github.com/mydeployment-io/mydeployment-operator/internal/status"
)

func md(strategy appsv1.DeploymentStrategyType, annotations map[string]string) *appsv1beta1.MyDeployment {
	m := &appsv1beta1.MyDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "m", Annotations: annotations}}
	m.Spec.Strategy.Type = strategy
	return m
}

func TestParse(t *testing.T) {
	const zone = "topology.kubernetes.io/zone"
	for _, tc := range []struct {
		name, value string
		strategy    appsv1.DeploymentStrategyType
		more        map[string]string
		key         string
		order       []string
		bake        time.Duration
		err         string // a part of the error; "" for none
	}{
		{name: "a label key", value: zone, key: zone},
		{name: "JSON", value: `{"key": "` + zone + `", "order": ["eu-1b", "eu-1a"], "bake": "10m"}`, key: zone,
			order: []string{"eu-1b", "eu-1a"}, bake: 10 * time.Minute},
		{name: "JSON without order or bake", value: `{"key": "zone"}`, key: "zone"},
		{name: "an invalid label key", value: "not a key!", err: `metadata.annotations[apps.mydeployment.io/waves]: Invalid value: "not a key!": key "not a key!" is not a node label key`},
		{name: "an empty value", value: "", err: "is not a node label key"},
		{name: "an invalid key in JSON", value: `{"key": "-bad-"}`, err: `key "-bad-" is not a node label key`},
		{name: "a bad duration", value: `{"key": "zone", "bake": "ten minutes"}`, err: `bake "ten minutes" must be a non-negative duration`},
		{name: "a negative duration", value: `{"key": "zone", "bake": "-1m"}`, err: `bake "-1m" must be a non-negative duration`},
		{name: "an unknown field", value: `{"key": "zone", "bakes": "1m"}`, err: `unknown field "bakes"`},
		{name: "bad JSON", value: `{"key": `, err: "must be a node label key or"},
		{name: "an order entry that is no label value", value: `{"key": "zone", "order": ["a b"]}`, err: `order[0] "a b" is not a label value`},
		{name: "an empty order entry", value: `{"key": "zone", "order": [""]}`, err: "order[0] must not be empty"},
		{name: "an order entry twice", value: `{"key": "zone", "order": ["a", "a"]}`, err: `order[1] "a" is listed twice`},
		{name: "Recreate", value: zone, strategy: appsv1.RecreateDeploymentStrategyType,
			err: "metadata.annotations[apps.mydeployment.io/waves]: Forbidden: waves need spec.strategy.type RollingUpdate"},
		{name: "with canary steps", value: zone, more: map[string]string{appsv1beta1.CanaryStepsAnnotation: "1, 100%"}, key: zone},
		{name: "a record that is not the controller's", value: zone, more: map[string]string{rollout.WaveStateAnnotation: "wave 2"},
			err: "metadata.annotations[apps.mydeployment.io/wave-state]: Invalid value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := map[string]string{Annotation: tc.value}
			for k, v := range tc.more {
				a[k] = v
			}
			spec, errs := Module.Parse(md(tc.strategy, a))
			if tc.err != "" {
				if len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), tc.err) {
					t.Fatalf("errors %v, want one with %q", errs, tc.err)
				}
				if spec != nil {
					t.Fatalf("a spec beside errors: %+v", spec)
				}
				return
			}
			w, ok := spec.(*Waves)
			if len(errs) > 0 || !ok {
				t.Fatalf("spec %v, errors %v", spec, errs)
			}
			if w.Key() != tc.key || strings.Join(w.order, ",") != strings.Join(tc.order, ",") || w.Bake() != tc.bake {
				t.Fatalf("parsed %+v", w)
			}
		})
	}
	if spec, errs := Module.Parse(md("", nil)); spec != nil || errs != nil {
		t.Fatalf("no annotation: %v, %v", spec, errs)
	}
}

// TestPlanInput: each pod's domain from its node, a pending pod's from its
// pin, and the domains unknown until the watch has synced.
func TestPlanInput(t *testing.T) {
	w := &Waves{key: "zone", bake: time.Minute, nodes: func(node, key string) (string, bool, bool) {
		switch node {
		case "n-a":
			return "a", true, true
		case "n-bare":
			return "", false, true
		}
		return "", false, false
	}}
	pod := func(name, node string, pin ...string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{NodeName: node}}
		if len(pin) > 0 {
			p.Annotations = map[string]string{rollout.WavePodAnnotation: pin[0]}
		}
		return p
	}
	in := rollout.Input{Pods: []*corev1.Pod{pod("on-a", "n-a"), pod("bare", "n-bare", "b"), pod("pending", "", "b"),
		pod("unseen", "n-gone"), pod("unseen-pinned", "n-gone", "c")}}
	w.PlanInput(&in)
	want := map[string]string{"on-a": "a", "bare": "", "pending": "b", "unseen": "", "unseen-pinned": "c"}
	for name, d := range want {
		if got := in.Waves.Domain[name]; got != d {
			t.Errorf("%s: domain %q, want %q", name, got, d)
		}
	}
	if in.Waves.Unknown || in.Waves.Key != "zone" || in.Waves.Bake != time.Minute {
		t.Errorf("input %+v", in.Waves)
	}
	unobserved := &Waves{key: "zone"}
	unobserved.PlanInput(&in)
	if !in.Waves.Unknown {
		t.Error("domains known without a synced watch")
	}
}

func TestReportDenied(t *testing.T) {
	in := status.Input{}
	(&Waves{denied: true}).ReportInput(&in)
	if in.Failure == nil || in.Failure.Reason != ReasonWavesAccessDenied || !strings.Contains(in.Failure.Message, Annotation) {
		t.Fatalf("failure %+v", in.Failure)
	}
	other := &status.Failure{Reason: appsv1beta1.ReasonFailedCreate}
	in = status.Input{Failure: other}
	(&Waves{denied: true}).ReportInput(&in)
	if in.Failure != other {
		t.Fatal("a refused write's failure replaced")
	}
}

// TestObserveDenied: with Nodes denied, the syncs of opted-in objects see
// the denial and no domains; without a view, neither.
func TestObserveDenied(t *testing.T) {
	opted := md("", map[string]string{Annotation: "zone"})
	w := nodestest.Denied(t, Module, nodes.LabelsChanged, opted)
	spec := (&Waves{key: "zone"}).Observe(w).(*Waves)
	if !spec.denied || spec.nodes != nil {
		t.Fatalf("observed denied %v, nodes %v", spec.denied, spec.nodes != nil)
	}
	if spec := (&Waves{}).Observe(nil).(*Waves); spec.nodes != nil || spec.denied {
		t.Fatal("no view: domains known")
	}
}

// TestReportWave: the wave the record names while its rollout is under
// way, a bake as a bake; nothing once done or for another revision.
func TestReportWave(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		state rollout.WaveState
		want  *status.Wave
	}{
		{"moving", rollout.WaveState{Revision: "r2", Index: 1, Of: 3, Domain: "zone-b"}, &status.Wave{Message: "wave 2 of 3: zone-b"}},
		{"baking", rollout.WaveState{Revision: "r2", Index: 0, Of: 3, Domain: "zone-a", BakeStarted: at},
			&status.Wave{Message: "wave 1 of 3: zone-a, baking until 2026-01-01T00:10:00Z", Baking: true}},
		{"unlabelled nodes", rollout.WaveState{Revision: "r2", Index: 2, Of: 3, Domain: ""},
			&status.Wave{Message: "wave 3 of 3: nodes without the label"}},
		{"done", rollout.WaveState{Revision: "r2", Index: 3, Of: 3}, nil},
		{"another revision's", rollout.WaveState{Revision: "r1", Index: 1, Of: 3, Domain: "zone-b"}, nil},
	} {
		in := status.Input{CurrentRevision: "r1", UpdateRevision: "r2"}
		(&Waves{bake: 10 * time.Minute, state: tc.state}).ReportInput(&in)
		if (in.Wave == nil) != (tc.want == nil) || in.Wave != nil && *in.Wave != *tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, in.Wave, tc.want)
		}
	}
}

// TestReportWaveThePlanMovedTo: a sync whose plan ends a bake starts the
// next wave; its status says the wave the plan moved to, not the bake the
// sync read (which the status kept until the next write).
func TestReportWaveThePlanMovedTo(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	read := rollout.WaveState{Revision: "r2", Index: 0, Of: 3, Domain: "zone-a", BakeStarted: at}
	next := rollout.WaveState{Revision: "r2", Index: 1, Of: 3, Domain: "zone-b"}
	in := status.Input{CurrentRevision: "r1", UpdateRevision: "r2",
		Plan: &rollout.Plan{Waves: &rollout.WaveProgress{State: next, Message: next.Describe(time.Minute)}}}
	(&Waves{bake: time.Minute, state: read}).ReportInput(&in)
	if want := (status.Wave{Message: "wave 2 of 3: zone-b"}); in.Wave == nil || *in.Wave != want {
		t.Errorf("got %+v, want %+v", in.Wave, want)
	}
	in.Plan.Waves = &rollout.WaveProgress{State: rollout.WaveState{Revision: "r2", Index: 3, Of: 3}}
	in.Wave = nil
	(&Waves{bake: time.Minute, state: read}).ReportInput(&in)
	if in.Wave != nil {
		t.Errorf("the plan did the last wave: got %+v, want no wave", in.Wave)
	}
}

// A pod the controller created in a wave is, until it is scheduled, of the
// domain it was pinned to, also as the manager's cache holds it
// (podwatch.Trim): read as a pod on no domain, it made the record count a
// wave of "nodes without the label" for as long as it was pending.
func TestPlanInputPendingPodFromTheCache(t *testing.T) {
	tmpl := corev1.PodTemplateSpec{}
	rollout.PinTemplate(&tmpl, rollout.Pin{Key: "zone", Domain: "b"})
	pod := &corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
	pod.Name, pod.Namespace = "new", "a"
	cached, err := podwatch.Trim(pod)
	if err != nil {
		t.Fatal(err)
	}
	w := &Waves{key: "zone", nodes: func(string, string) (string, bool, bool) { return "", false, false }}
	in := rollout.Input{Pods: []*corev1.Pod{cached.(*corev1.Pod)}}
	w.PlanInput(&in)
	if got := in.Waves.Domain["new"]; got != "b" {
		t.Fatalf("a pending pod pinned to b, as cached: domain %q", got)
	}
}
