package metrics

import (
	"context"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/podcontrol"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
)

var t0 = time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)

func newMD(ns string, replicas int32, gen int64) *appsv1beta1.MyDeployment {
	return &appsv1beta1.MyDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Generation: gen},
		Spec:       appsv1beta1.MyDeploymentSpec{Replicas: ptr.To(replicas)},
	}
}

func rev(name string, number int64, created time.Time) *appsv1.ControllerRevision {
	return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)}, Revision: number}
}

// mdStatus has replicas pods, updated of them of the update revision and
// available of them available.
func mdStatus(gen int64, replicas, updated, available int32, current, update string, conds ...appsv1.DeploymentCondition) *appsv1beta1.MyDeploymentStatus {
	return &appsv1beta1.MyDeploymentStatus{
		ObservedGeneration: gen, Replicas: replicas, UpdatedReplicas: updated, ReadyReplicas: available,
		AvailableReplicas: available, CurrentRevision: current, UpdateRevision: update, Conditions: conds,
	}
}

func gaugeValue(t *testing.T, g *prometheus.GaugeVec, lv ...string) float64 {
	t.Helper()
	return valueOf(t, g.WithLabelValues(lv...))
}

func counterValue(t *testing.T, c *prometheus.CounterVec, lv ...string) float64 {
	t.Helper()
	return valueOf(t, c.WithLabelValues(lv...))
}

func valueOf(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		t.Fatal(err)
	}
	if d.Counter != nil {
		return d.GetCounter().GetValue()
	}
	return d.GetGauge().GetValue()
}

// durations returns how many rollouts of ns/web were timed, and their sum.
func durations(t *testing.T, ns string) (uint64, float64) {
	t.Helper()
	var m dto.Metric
	if err := rolloutDuration.WithLabelValues(ns, "web").(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
}

// conditionSeries counts the series of condition of ns/web.
func conditionSeries(ns, condition string) int {
	return countSeries([]prometheus.Collector{conditionStatus}, map[string]string{LabelNamespace: ns, LabelName: "web", "condition": condition})
}

// seriesOf counts the series of ns/name across every per-object collector.
func seriesOf(ns, name string) int {
	return countSeries(Collectors(), map[string]string{LabelNamespace: ns, LabelName: name})
}

// countSeries counts the series of collectors whose labels include want.
func countSeries(collectors []prometheus.Collector, want map[string]string) int {
	ch := make(chan prometheus.Metric, 1024)
	go func() {
		for _, c := range collectors {
			c.Collect(ch)
		}
		close(ch)
	}()
	n := 0
	for m := range ch {
		var d dto.Metric
		_ = m.Write(&d)
		got := map[string]string{}
		for _, l := range d.Label {
			got[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			match = match && got[k] == v
		}
		if match {
			n++
		}
	}
	return n
}

func TestRecordFollowsRollouts(t *testing.T) {
	const ns = "follows"
	r := NewRecorder()
	r1, r2 := rev("web-1", 1, t0), rev("web-2", 2, t0.Add(100*time.Second))

	steps := []struct {
		name       string
		obs        Observation
		inProgress float64
		available  float64
		timed      uint64
		timedSum   float64
	}{
		{"created: 3 pods, none available", Observation{Object: newMD(ns, 3, 1), Status: mdStatus(1, 3, 3, 0, "web-1", "web-1"),
			Current: r1, Update: r1, NewRevision: true, Now: t0}, 1, 0, 0, 0},
		{"all available after 40s: the first rollout is timed", Observation{Object: newMD(ns, 3, 1), Status: mdStatus(1, 3, 3, 3, "web-1", "web-1"),
			Current: r1, Update: r1, Now: t0.Add(40 * time.Second)}, 0, 3, 1, 40},
		{"template change: revision 2, one surge pod", Observation{Object: newMD(ns, 3, 2), Status: mdStatus(2, 4, 1, 3, "web-1", "web-2"),
			Current: r1, Update: r2, NewRevision: true, Now: t0.Add(100 * time.Second)}, 1, 3, 1, 40},
		{"revision 2 complete after 30s", Observation{Object: newMD(ns, 3, 2), Status: mdStatus(2, 3, 3, 3, "web-2", "web-2"),
			Current: r2, Update: r2, Now: t0.Add(130 * time.Second)}, 0, 3, 2, 70},
		{"at rest: nothing more is timed", Observation{Object: newMD(ns, 3, 2), Status: mdStatus(2, 3, 3, 3, "web-2", "web-2"),
			Current: r2, Update: r2, Now: t0.Add(500 * time.Second)}, 0, 3, 2, 70},
	}
	for i, s := range steps {
		r.Record(s.obs)
		if got := gaugeValue(t, rolloutInProgress, ns, "web"); got != s.inProgress {
			t.Errorf("step %d (%s): rollout_in_progress = %v, want %v", i+1, s.name, got, s.inProgress)
		}
		if got := gaugeValue(t, availableReplicas, ns, "web"); got != s.available {
			t.Errorf("step %d (%s): available = %v, want %v", i+1, s.name, got, s.available)
		}
		if n, sum := durations(t, ns); n != s.timed || sum != s.timedSum {
			t.Errorf("step %d (%s): %d rollouts timed in %vs, want %d in %vs", i+1, s.name, n, sum, s.timed, s.timedSum)
		}
		if got, want := gaugeValue(t, updateRevision, ns, "web"), float64(s.obs.Update.Revision); got != want {
			t.Errorf("step %d (%s): update revision = %v, want %v", i+1, s.name, got, want)
		}
		if got, want := gaugeValue(t, currentRevision, ns, "web"), float64(s.obs.Current.Revision); got != want {
			t.Errorf("step %d (%s): current revision = %v, want %v", i+1, s.name, got, want)
		}
	}
	if got := gaugeValue(t, specReplicas, ns, "web"); got != 3 {
		t.Errorf("spec replicas = %v, want 3", got)
	}
}

func TestRecordTimesRolloutFoundUnderWay(t *testing.T) {
	const ns = "restarted"
	r := NewRecorder() // a new process: revision 2 was created before it started
	r1, r2 := rev("web-1", 1, t0), rev("web-2", 2, t0.Add(10*time.Second))
	r.Record(Observation{Object: newMD(ns, 2, 2), Status: mdStatus(2, 3, 1, 2, "web-1", "web-2"), Current: r1, Update: r2, Now: t0.Add(30 * time.Second)})
	r.Record(Observation{Object: newMD(ns, 2, 2), Status: mdStatus(2, 2, 2, 2, "web-2", "web-2"), Current: r2, Update: r2, Now: t0.Add(70 * time.Second)})
	if n, sum := durations(t, ns); n != 1 || sum != 60 {
		t.Errorf("timed %d rollouts in %vs, want 1 in 60s (from the revision's creation)", n, sum)
	}

	// A scale is not a rollout: it moves rollout_in_progress but is not timed.
	r.Record(Observation{Object: newMD(ns, 4, 3), Status: mdStatus(3, 4, 4, 2, "web-2", "web-2"), Current: r2, Update: r2, Now: t0.Add(80 * time.Second)})
	if got := gaugeValue(t, rolloutInProgress, ns, "web"); got != 1 {
		t.Errorf("scaling: rollout_in_progress = %v, want 1", got)
	}
	r.Record(Observation{Object: newMD(ns, 4, 3), Status: mdStatus(3, 4, 4, 4, "web-2", "web-2"), Current: r2, Update: r2, Now: t0.Add(90 * time.Second)})
	if n, _ := durations(t, ns); n != 1 {
		t.Errorf("a scale was timed as a rollout: %d rollouts timed, want 1", n)
	}
}

func TestConditionsAndDeadlines(t *testing.T) {
	const ns = "conditions"
	r := NewRecorder()
	cond := func(ty appsv1.DeploymentConditionType, s corev1.ConditionStatus, reason string) appsv1.DeploymentCondition {
		return appsv1.DeploymentCondition{Type: ty, Status: s, Reason: reason}
	}
	stuck := mdStatus(1, 2, 1, 1, "web-1", "web-2",
		cond(appsv1beta1.ConditionAvailable, corev1.ConditionTrue, appsv1beta1.ReasonMinimumReplicasAvailable),
		cond(appsv1beta1.ConditionProgressing, corev1.ConditionFalse, appsv1beta1.ReasonProgressDeadlineExceeded),
		cond(appsv1beta1.ConditionReplicaFailure, corev1.ConditionTrue, appsv1beta1.ReasonFailedCreate))
	r.Record(Observation{Object: newMD(ns, 2, 1), Status: stuck, DeadlineExceeded: true, Now: t0})
	want := map[[2]string]float64{
		{"Available", "true"}: 1, {"Available", "false"}: 0, {"Available", "unknown"}: 0,
		{"Progressing", "true"}: 0, {"Progressing", "false"}: 1, {"Progressing", "unknown"}: 0,
		{"ReplicaFailure", "true"}: 1, {"ReplicaFailure", "false"}: 0,
	}
	for k, v := range want {
		if got := gaugeValue(t, conditionStatus, ns, "web", k[0], k[1]); got != v {
			t.Errorf("condition %s status %s = %v, want %v", k[0], k[1], got, v)
		}
	}
	if got := counterValue(t, deadlineExceeded, ns, "web"); got != 1 {
		t.Errorf("deadline exceeded counter = %v, want 1", got)
	}

	// ReplicaFailure cleared: its series go, like kube-state-metrics' for an absent condition.
	recovered := mdStatus(1, 2, 1, 1, "web-1", "web-2",
		cond(appsv1beta1.ConditionAvailable, corev1.ConditionTrue, appsv1beta1.ReasonMinimumReplicasAvailable),
		cond(appsv1beta1.ConditionProgressing, corev1.ConditionFalse, appsv1beta1.ReasonProgressDeadlineExceeded))
	r.Record(Observation{Object: newMD(ns, 2, 1), Status: recovered, Now: t0.Add(time.Second)})
	if n := conditionSeries(ns, "ReplicaFailure"); n != 0 {
		t.Errorf("%d ReplicaFailure series left after the condition went", n)
	}
	if n := conditionSeries(ns, "Available"); n != 3 {
		t.Errorf("%d Available series, want 3 (true, false, unknown)", n)
	}
	if got := counterValue(t, deadlineExceeded, ns, "web"); got != 1 {
		t.Errorf("deadline exceeded counted again without a new event: %v", got)
	}
}

// failingPods refuses every write; only the counting is under test. The
// in-place writes it does not implement are never called.
type failingPods struct {
	podcontrol.Interface
	creates, deletes int
}

func (f *failingPods) Create(context.Context, *appsv1beta1.MyDeployment, *corev1.PodTemplateSpec, *appsv1.ControllerRevision) (*corev1.Pod, error) {
	f.creates++
	if f.creates > 2 {
		return nil, errors.New("quota exceeded")
	}
	return &corev1.Pod{}, nil
}
func (f *failingPods) Delete(context.Context, *appsv1beta1.MyDeployment, *corev1.Pod) error {
	f.deletes++
	return nil
}
func (f *failingPods) Evict(context.Context, *appsv1beta1.MyDeployment, *corev1.Pod) error {
	f.deletes++
	return nil
}
func (f *failingPods) Adopt(context.Context, *appsv1beta1.MyDeployment, *corev1.Pod, *appsv1.ControllerRevision) (*corev1.Pod, error) {
	return nil, nil
}
func (f *failingPods) Release(context.Context, *appsv1beta1.MyDeployment, *corev1.Pod) error {
	return nil
}

func TestPodWritesAndForget(t *testing.T) {
	const ns = "forget"
	r := NewRecorder()
	owner := newMD(ns, 2, 1)
	other := newMD(ns+"-other", 2, 1)
	pods := InstrumentPods(&failingPods{})
	for range 3 {
		_, _ = pods.Create(context.Background(), owner, nil, nil)
	}
	_ = pods.Delete(context.Background(), owner, &corev1.Pod{})
	if got := counterValue(t, podsCreated, ns, "web"); got != 2 {
		t.Errorf("created = %v, want 2", got)
	}
	if got := counterValue(t, podWriteFailures, ns, "web", opCreate); got != 1 {
		t.Errorf("create failures = %v, want 1", got)
	}
	if got := counterValue(t, podsDeleted, ns, "web"); got != 1 {
		t.Errorf("deleted = %v, want 1", got)
	}

	for _, m := range []*appsv1beta1.MyDeployment{owner, other} {
		r.Record(Observation{Object: m, Status: mdStatus(1, 2, 2, 0, "web-1", "web-1"), Update: rev("web-1", 1, t0), Current: rev("web-1", 1, t0), NewRevision: true, Now: t0})
		r.Record(Observation{Object: m, Status: mdStatus(1, 2, 2, 2, "web-1", "web-1"), Update: rev("web-1", 1, t0), Current: rev("web-1", 1, t0), Now: t0.Add(time.Second)})
		r.ExpectationTimeouts(m, 2)
	}
	if n := seriesOf(ns, "web"); n < 15 {
		t.Fatalf("only %d series of %s/web before Forget", n, ns)
	}
	before := seriesOf(ns+"-other", "web")
	r.Forget(types.NamespacedName{Namespace: ns, Name: "web"})
	if n := seriesOf(ns, "web"); n != 0 {
		t.Errorf("%d series of the deleted MyDeployment left", n)
	}
	if n := seriesOf(ns+"-other", "web"); n != before {
		t.Errorf("Forget touched another MyDeployment: %d series, had %d", n, before)
	}
	// The same name again, the same status as before Forget: every series
	// comes back (the recorder skips only what it set since).
	r.Record(Observation{Object: owner, Status: mdStatus(1, 2, 2, 2, "web-1", "web-1"), Update: rev("web-1", 1, t0), Current: rev("web-1", 1, t0), Now: t0.Add(2 * time.Second)})
	if n := seriesOf(ns, "web"); n < 15 {
		t.Errorf("only %d series of %s/web recreated after Forget", n, ns)
	}
	if got := gaugeValue(t, availableReplicas, ns, "web"); got != 2 {
		t.Errorf("available after Forget and a new sync = %v, want 2", got)
	}
}

func TestExpectationsPending(t *testing.T) {
	const ns = "pending"
	r := NewRecorder()
	md := newMD(ns, 3, 1)
	r.ExpectationsPending(md, 0)
	if n := seriesOf(ns, "web"); n != 0 {
		t.Fatalf("an object that never waited has %d series, want none", n)
	}
	r.ExpectationsPending(md, 12*time.Second)
	if got := gaugeValue(t, expectationsPending, ns, "web"); got != 12 {
		t.Errorf("pending = %v, want 12", got)
	}
	r.ExpectationsPending(md, 0)
	if got := gaugeValue(t, expectationsPending, ns, "web"); got != 0 {
		t.Errorf("pending after the wait ended = %v, want 0", got)
	}
	r.Forget(types.NamespacedName{Namespace: ns, Name: "web"})
	if n := seriesOf(ns, "web"); n != 0 {
		t.Errorf("%d series left after Forget", n)
	}
}

// histogramCount is how many observations the rollout duration histogram
// of ns/web holds, and whether its series exists at all.
func histogramCount(ns string) (uint64, bool) {
	if countSeries([]prometheus.Collector{rolloutDuration}, map[string]string{LabelNamespace: ns, LabelName: "web"}) == 0 {
		return 0, false
	}
	var m dto.Metric
	_ = rolloutDuration.WithLabelValues(ns, "web").(prometheus.Metric).Write(&m)
	return m.GetHistogram().GetSampleCount(), true
}

func TestCanaryAbortsAndDrains(t *testing.T) {
	const ns = "canary"
	r := NewRecorder()
	r1, r2 := rev("web-1", 1, t0), rev("web-2", 2, t0.Add(time.Minute))
	md := func(gen int64, annotations map[string]string) *appsv1beta1.MyDeployment {
		m := newMD(ns, 4, gen)
		m.Annotations = annotations
		return m
	}
	steps := map[string]string{appsv1beta1.CanaryStepsAnnotation: "1, pause, 100%",
		appsv1beta1.UpdateModeAnnotation: appsv1beta1.UpdateModeInPlaceIfPossible}
	at := func(step int) map[string]string {
		a := maps.Clone(steps)
		a[appsv1beta1.CanaryStepAnnotation] = rollout.CanaryState{Revision: "web-2", Index: step - 1}.String()
		return a
	}
	aborted := appsv1.DeploymentCondition{Type: appsv1beta1.ConditionProgressing, Status: corev1.ConditionFalse,
		Reason: appsv1beta1.ReasonRolloutAborted}

	r.Record(Observation{Object: md(1, steps), Status: mdStatus(1, 4, 4, 4, "web-1", "web-1"), Current: r1, Update: r1, Now: t0})
	if n, ok := histogramCount(ns); !ok || n != 0 {
		t.Errorf("before any rollout completed: histogram present %v with %d observations, want present with 0", ok, n)
	}
	for _, result := range []string{InPlaceStarted, InPlaceCompleted, InPlaceFallback} {
		if got := counterValue(t, inPlaceUpdates, ns, "web", result); got != 0 {
			t.Errorf("in-place %s = %v before any update, want 0", result, got)
		}
	}
	for _, s := range []struct {
		name            string
		obs             Observation
		step, of, abort float64
	}{
		{"no rollout: no step", Observation{Object: md(1, steps), Status: mdStatus(1, 4, 4, 4, "web-1", "web-1")}, 0, 3, 0},
		{"at step 2 of revision 2", Observation{Object: md(2, at(2)), Status: mdStatus(2, 4, 1, 4, "web-1", "web-2")}, 2, 3, 0},
		{"a record of an older revision is no step", Observation{Object: md(3, at(2)), Status: mdStatus(3, 4, 0, 4, "web-2", "web-3")}, 0, 3, 0},
		{"aborted", Observation{Object: md(2, at(1)), Status: mdStatus(2, 4, 1, 3, "web-1", "web-2", aborted)}, 1, 3, 1},
		{"complete: no step", Observation{Object: md(2, at(3)), Status: mdStatus(2, 4, 4, 4, "web-2", "web-2")}, 0, 3, 0},
		{"no canary", Observation{Object: md(2, nil), Status: mdStatus(2, 4, 4, 4, "web-2", "web-2")}, 0, 0, 0},
	} {
		s.obs.Current, s.obs.Update, s.obs.Now = r1, r2, t0.Add(2*time.Minute)
		r.Record(s.obs)
		if got := gaugeValue(t, canaryStep, ns, "web"); got != s.step {
			t.Errorf("%s: canary step = %v, want %v", s.name, got, s.step)
		}
		if got := gaugeValue(t, canarySteps, ns, "web"); got != s.of {
			t.Errorf("%s: canary steps = %v, want %v", s.name, got, s.of)
		}
		if got := gaugeValue(t, rolloutAborted, ns, "web"); got != s.abort {
			t.Errorf("%s: aborted = %v, want %v", s.name, got, s.abort)
		}
	}

	if got := counterValue(t, rolloutAborts, ns, "web"); got != 0 {
		t.Errorf("aborts before any = %v, want 0", got)
	}
	if got := counterValue(t, drainReplacements, ns, "web"); got != 0 {
		t.Errorf("drain replacements before any = %v, want 0", got)
	}
	r.RolloutAborted(md(2, nil))
	r.DrainReplaced(md(2, nil))
	r.DrainReplaced(md(2, nil))
	if got := counterValue(t, rolloutAborts, ns, "web"); got != 1 {
		t.Errorf("aborts = %v, want 1", got)
	}
	if got := counterValue(t, drainReplacements, ns, "web"); got != 2 {
		t.Errorf("drain replacements = %v, want 2", got)
	}
	r.Forget(types.NamespacedName{Namespace: ns, Name: "web"})
	if n := seriesOf(ns, "web"); n != 0 {
		t.Errorf("%d series left after Forget", n)
	}
}
