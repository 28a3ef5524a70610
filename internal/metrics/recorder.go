package metrics

import (
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/canary"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/updatemode"
	"github.com/mydeployment-io/mydeployment-operator/internal/status"
)

// Observation is how one sync of a MyDeployment ended.
type Observation struct {
	// Object is the MyDeployment as the sync read it (spec, generation).
	Object *appsv1beta1.MyDeployment
	// Status is the status the sync computed (written or not).
	Status *appsv1beta1.MyDeploymentStatus
	// Current and Update are the revisions named in Status; nil if none yet.
	Current, Update *appsv1.ControllerRevision
	// NewRevision: the sync created (or re-numbered, for a rollback) the
	// update revision: a rollout starts now.
	NewRevision bool
	// DeadlineExceeded: the status newly reports ProgressDeadlineExceeded.
	DeadlineExceeded bool
	Now              time.Time
}

// conditionTypes are the conditions a MyDeployment can have.
var conditionTypes = []appsv1.DeploymentConditionType{
	appsv1beta1.ConditionAvailable, appsv1beta1.ConditionProgressing, appsv1beta1.ConditionReplicaFailure,
}

var conditionStatuses = []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown}

// Recorder turns observations into series. It remembers when each rollout
// under way started, to observe its duration when it completes. Safe for
// concurrent use; a nil Recorder records nothing.
type Recorder struct {
	mu       sync.Mutex
	rollouts map[types.NamespacedName]time.Time
	// last is what each MyDeployment's gauges were last set from: a sync
	// that changes none of it sets nothing (looking up 30 series by label
	// values on every sync was 3% of the manager's CPU in a scale-out).
	last map[types.NamespacedName]gaugeInputs
	// waiting holds the MyDeployments whose expectations gauge is not 0.
	waiting map[types.NamespacedName]bool
}

// gaugeInputs is everything the per-object gauges are set from.
type gaugeInputs struct {
	specReplicas, replicas, ready, available, updated, unavailable int32
	generation, observedGeneration, current, update                int64
	canaryStep, canarySteps                                        int
	paused, complete, aborted                                      bool
	conditions                                                     [3]corev1.ConditionStatus
}

func inputsOf(o Observation, complete bool) gaugeInputs {
	md, st := o.Object, o.Status
	in := gaugeInputs{
		specReplicas: ptr.Deref(md.Spec.Replicas, 1), replicas: st.Replicas, ready: st.ReadyReplicas,
		available: st.AvailableReplicas, updated: st.UpdatedReplicas, unavailable: st.UnavailableReplicas,
		generation: md.Generation, observedGeneration: st.ObservedGeneration, current: -1, update: -1,
		paused: md.Spec.Paused, complete: complete,
	}
	if o.Current != nil {
		in.current = o.Current.Revision
	}
	if o.Update != nil {
		in.update = o.Update.Revision
	}
	for i, t := range conditionTypes {
		if c := status.Get(st, t); c != nil {
			in.conditions[i] = c.Status
		}
	}
	if c := status.Get(st, appsv1beta1.ConditionProgressing); c != nil {
		in.aborted = c.Reason == appsv1beta1.ReasonRolloutAborted
	}
	in.canaryStep, in.canarySteps = canaryProgress(md, st)
	return in
}

// canaryProgress is the step (from 1) md's canary rollout is at, 0 when
// none is under way, and how many steps its annotation lists. The step is
// the controller's record (CanaryStepAnnotation) for the update revision,
// while that revision is not yet the current one; steps the canary module
// refuses count as none.
func canaryProgress(md *appsv1beta1.MyDeployment, st *appsv1beta1.MyDeploymentStatus) (step, steps int) {
	v, ok := md.Annotations[appsv1beta1.CanaryStepsAnnotation]
	if !ok {
		return 0, 0
	}
	list, err := canary.ParseSteps(v)
	if err != nil {
		return 0, 0
	}
	at := canary.Recorded(md)
	if at == nil || at.Revision != st.UpdateRevision || st.CurrentRevision == st.UpdateRevision || at.Index >= len(list) {
		return 0, len(list)
	}
	return at.Index + 1, len(list)
}

// NewRecorder returns a Recorder that times no rollout yet.
func NewRecorder() *Recorder {
	return &Recorder{rollouts: map[types.NamespacedName]time.Time{}, last: map[types.NamespacedName]gaugeInputs{},
		waiting: map[types.NamespacedName]bool{}}
}

// changed records in as key's last gauge inputs and reports whether they differ.
func (r *Recorder) changed(key types.NamespacedName, in gaugeInputs) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if last, ok := r.last[key]; ok && last == in {
		return false
	}
	r.last[key] = in
	return true
}

// Record sets the MyDeployment's gauges from o and, when o completes a
// rollout, observes its duration. A rollout already under way when the
// operator started is timed from its update revision's creation.
func (r *Recorder) Record(o Observation) {
	if r == nil || o.Object == nil || o.Status == nil {
		return
	}
	md, st := o.Object, o.Status
	key := types.NamespacedName{Namespace: md.Namespace, Name: md.Name}
	lv := []string{md.Namespace, md.Name}
	complete := status.RolloutComplete(md, st)
	if o.DeadlineExceeded {
		deadlineExceeded.WithLabelValues(lv...).Inc()
	}
	if d, ok := r.timeRollout(key, o, complete); ok {
		rolloutDuration.WithLabelValues(lv...).Observe(d.Seconds())
	}
	in := inputsOf(o, complete)
	if !r.changed(key, in) {
		return
	}

	specReplicas.WithLabelValues(lv...).Set(float64(ptr.Deref(md.Spec.Replicas, 1)))
	statusReplicas.WithLabelValues(lv...).Set(float64(st.Replicas))
	readyReplicas.WithLabelValues(lv...).Set(float64(st.ReadyReplicas))
	availableReplicas.WithLabelValues(lv...).Set(float64(st.AvailableReplicas))
	updatedReplicas.WithLabelValues(lv...).Set(float64(st.UpdatedReplicas))
	unavailableReplicas.WithLabelValues(lv...).Set(float64(st.UnavailableReplicas))
	generation.WithLabelValues(lv...).Set(float64(md.Generation))
	observedGeneration.WithLabelValues(lv...).Set(float64(st.ObservedGeneration))
	paused.WithLabelValues(lv...).Set(boolValue(md.Spec.Paused))
	canaryStep.WithLabelValues(lv...).Set(float64(in.canaryStep))
	canarySteps.WithLabelValues(lv...).Set(float64(in.canarySteps))
	rolloutAborted.WithLabelValues(lv...).Set(boolValue(in.aborted))
	if o.Current != nil {
		currentRevision.WithLabelValues(lv...).Set(float64(o.Current.Revision))
	}
	if o.Update != nil {
		updateRevision.WithLabelValues(lv...).Set(float64(o.Update.Revision))
	}
	for _, t := range conditionTypes {
		c := status.Get(st, t)
		if c == nil {
			// By full label values: a partial match walks every series of
			// every MyDeployment, on every sync.
			for _, s := range conditionStatuses {
				conditionStatus.DeleteLabelValues(md.Namespace, md.Name, string(t), strings.ToLower(string(s)))
			}
			continue
		}
		for _, s := range conditionStatuses {
			conditionStatus.WithLabelValues(md.Namespace, md.Name, string(t), strings.ToLower(string(s))).Set(boolValue(c.Status == s))
		}
	}
	startCounters(md)
	rolloutInProgress.WithLabelValues(lv...).Set(boolValue(!complete))
}

// startCounters creates md's counters and rollout duration histogram at
// zero, so increase() sees their first event (a series born at 1 shows no
// increase); the in-place results only for an object that opts in.
func startCounters(md *appsv1beta1.MyDeployment) {
	lv := []string{md.Namespace, md.Name}
	podsCreated.WithLabelValues(lv...)
	podsDeleted.WithLabelValues(lv...)
	podWriteFailures.WithLabelValues(md.Namespace, md.Name, opCreate)
	podWriteFailures.WithLabelValues(md.Namespace, md.Name, opDelete)
	expectationTimeouts.WithLabelValues(lv...)
	deadlineExceeded.WithLabelValues(lv...)
	rolloutAborts.WithLabelValues(lv...)
	drainReplacements.WithLabelValues(lv...)
	rolloutDuration.WithLabelValues(lv...)
	if updatemode.InPlaceOf(md) {
		for _, result := range []string{InPlaceStarted, InPlaceCompleted, InPlaceFallback} {
			inPlaceUpdates.WithLabelValues(md.Namespace, md.Name, result)
		}
	}
}

// timeRollout tracks the rollout of key; it returns its duration when o
// completes it.
func (r *Recorder) timeRollout(key types.NamespacedName, o Observation, complete bool) (time.Duration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	start, timing := r.rollouts[key]
	switch {
	case o.NewRevision:
		start, timing = o.Now, true
	case !timing && !complete && o.Update != nil && o.Status.CurrentRevision != o.Status.UpdateRevision:
		// Found under way (the operator restarted mid-rollout).
		start, timing = o.Update.CreationTimestamp.Time, true
	}
	if !timing {
		return 0, false
	}
	if !complete {
		r.rollouts[key] = start
		return 0, false
	}
	delete(r.rollouts, key)
	return max(0, o.Now.Sub(start)), true
}

// RolloutAborted counts one abort of md's rollout (on-failure Abort), when
// its record is written.
func (r *Recorder) RolloutAborted(md *appsv1beta1.MyDeployment) {
	if r == nil {
		return
	}
	rolloutAborts.WithLabelValues(md.Namespace, md.Name).Inc()
}

// AnalysisMeasured counts one canary analysis measurement of md's query
// with result ("success", "failure", "inconclusive") and, unless
// inconclusive, sets the query's last value.
func (r *Recorder) AnalysisMeasured(md *appsv1beta1.MyDeployment, query, result string, value float64) {
	if r == nil {
		return
	}
	analysisMeasurements.WithLabelValues(md.Namespace, md.Name, query, result).Inc()
	if result != "inconclusive" {
		analysisValue.WithLabelValues(md.Namespace, md.Name, query).Set(value)
	}
}

// DrainReplaced counts one pod of md removed from a draining node once its
// replacement was available.
func (r *Recorder) DrainReplaced(md *appsv1beta1.MyDeployment) {
	if r == nil {
		return
	}
	drainReplacements.WithLabelValues(md.Namespace, md.Name).Inc()
}

// ExpectationTimeouts counts n leaked expectations of md.
func (r *Recorder) ExpectationTimeouts(md *appsv1beta1.MyDeployment, n int) {
	if r == nil || n <= 0 {
		return
	}
	expectationTimeouts.WithLabelValues(md.Namespace, md.Name).Add(float64(n))
}

// In-place update results (InPlaceUpdates).
const (
	InPlaceStarted   = "started"
	InPlaceCompleted = "completed"
	InPlaceFallback  = "fallback"
)

// InPlaceUpdates counts n in-place updates of md's pods with result
// (InPlaceStarted, InPlaceCompleted, InPlaceFallback).
func (r *Recorder) InPlaceUpdates(md *appsv1beta1.MyDeployment, result string, n int) {
	if r == nil || n <= 0 {
		return
	}
	inPlaceUpdates.WithLabelValues(md.Namespace, md.Name, result).Add(float64(n))
}

// ExpectationsPending sets how long md's sync has waited for the cache to
// observe its earlier pod writes; 0 once it no longer waits. Only a change
// from or to 0 touches the series of an object that never waits.
func (r *Recorder) ExpectationsPending(md *appsv1beta1.MyDeployment, age time.Duration) {
	if r == nil {
		return
	}
	key := types.NamespacedName{Namespace: md.Namespace, Name: md.Name}
	r.mu.Lock()
	was := r.waiting[key]
	if age > 0 {
		r.waiting[key] = true
	} else {
		delete(r.waiting, key)
	}
	r.mu.Unlock()
	if age > 0 || was {
		expectationsPending.WithLabelValues(md.Namespace, md.Name).Set(age.Seconds())
	}
}

// Forget deletes every series of the MyDeployment key (it was deleted) and
// stops timing its rollout.
func (r *Recorder) Forget(key types.NamespacedName) {
	if r == nil {
		return
	}
	r.mu.Lock()
	delete(r.rollouts, key)
	delete(r.last, key)
	delete(r.waiting, key)
	r.mu.Unlock()
	labels := map[string]string{LabelNamespace: key.Namespace, LabelName: key.Name}
	for _, v := range perObject {
		v.DeletePartialMatch(labels)
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
