// Package metrics exposes what the MyDeployment controller sees and does as
// Prometheus metrics on the manager's /metrics endpoint (controller-runtime's
// registry): per MyDeployment (labels namespace and name) the numbers
// kube-state-metrics gives for a Deployment, the rollout state and duration,
// the canary step and aborts, and counters of pod writes, failures,
// deadlines, aborts, drain replacements and leaked expectations.
// Every series of a MyDeployment is deleted when the object is gone.
//
// The controller feeds it with one [Recorder.Record] per sync, from the
// status it computed; pod writes are counted by wrapping its pod control
// ([InstrumentPods]).
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Label names of every per-MyDeployment series.
const (
	LabelNamespace = "namespace"
	LabelName      = "name"
)

var objectLabels = []string{LabelNamespace, LabelName}

func gauge(name, help string, extra ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, append(objectLabels, extra...))
}

func counter(name, help string, extra ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, append(objectLabels, extra...))
}

var (
	specReplicas = gauge("mydeployment_spec_replicas",
		"Desired number of pods (spec.replicas).")
	statusReplicas = gauge("mydeployment_status_replicas",
		"Non-terminating pods of the MyDeployment (status.replicas).")
	readyReplicas = gauge("mydeployment_status_replicas_ready",
		"Pods with a Ready condition (status.readyReplicas).")
	availableReplicas = gauge("mydeployment_status_replicas_available",
		"Pods ready for at least minReadySeconds (status.availableReplicas).")
	updatedReplicas = gauge("mydeployment_status_replicas_updated",
		"Pods of the update revision (status.updatedReplicas).")
	unavailableReplicas = gauge("mydeployment_status_replicas_unavailable",
		"Pods missing for the MyDeployment to be fully available (status.unavailableReplicas).")
	currentRevision = gauge("mydeployment_status_current_revision",
		"Number of the ControllerRevision most pods run until a rollout completes (status.currentRevision).")
	updateRevision = gauge("mydeployment_status_update_revision",
		"Number of the ControllerRevision being rolled out (status.updateRevision).")
	generation = gauge("mydeployment_metadata_generation",
		"Generation of the MyDeployment's spec.")
	observedGeneration = gauge("mydeployment_status_observed_generation",
		"Generation last acted upon by the controller (status.observedGeneration).")
	paused = gauge("mydeployment_spec_paused",
		"1 if the MyDeployment is paused (spec.paused), else 0.")
	conditionStatus = gauge("mydeployment_status_condition",
		"1 for the status (true, false, unknown) each condition of the MyDeployment has, 0 for the others.",
		"condition", "status")
	rolloutInProgress = gauge("mydeployment_rollout_in_progress",
		"1 while a rollout or scale is not complete (as kubectl rollout status judges), else 0.")
	rolloutDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "mydeployment_rollout_duration_seconds",
		Help:    "Time from a new revision until every desired pod of it is available (Progressing reason NewRevisionAvailable).",
		Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600},
	}, objectLabels)
	podsCreated = counter("mydeployment_pods_created_total",
		"Pods the controller created.")
	podsDeleted = counter("mydeployment_pods_deleted_total",
		"Pods the controller deleted.")
	podWriteFailures = counter("mydeployment_pod_write_failures_total",
		"Pod creations, deletions or evictions the API server refused (operation=create|delete|evict; not an eviction a disruption budget refused); they set ReplicaFailure.",
		"operation")
	deadlineExceeded = counter("mydeployment_progress_deadline_exceeded_total",
		"Times a rollout made no progress for progressDeadlineSeconds (Progressing=False, ProgressDeadlineExceeded).")
	expectationsPending = gauge("mydeployment_expectations_pending_seconds",
		"Age of the oldest pod creation or deletion not yet seen in the cache, while the controller waits for it before syncing again; 0 when none.")
	inPlaceUpdates = counter("mydeployment_in_place_updates_total",
		"Pods updated in place (update-mode InPlaceIfPossible), by result: started, completed, or fallback (refused or not finished in time: the pod is replaced).",
		"result")
	expectationTimeouts = counter("mydeployment_expectation_timeouts_total",
		"Pod creations or deletions not observed in the cache before the expectations timeout (leaked expectations).")
	canaryStep = gauge("mydeployment_canary_step",
		"The step (from 1) a canary rollout (canary-steps) is at; 0 when no canary rollout is under way.")
	canarySteps = gauge("mydeployment_canary_steps",
		"How many steps the canary-steps annotation lists; 0 without it.")
	rolloutAborted = gauge("mydeployment_rollout_aborted",
		"1 while the rollout is aborted (on-failure Abort: Progressing=False, RolloutAborted), else 0.")
	rolloutAborts = counter("mydeployment_rollout_aborts_total",
		"Rollouts aborted, one per abort: past their progress deadline (on-failure Abort), or on a failed canary analysis.")
	analysisMeasurements = counter("mydeployment_analysis_measurements_total",
		"Canary analysis measurements (analysis annotation), by query and result: success (the threshold met), failure, or inconclusive (no value: Prometheus unreachable, an error, no data).",
		"query", "result")
	analysisValue = gauge("mydeployment_analysis_value",
		"The last value a canary analysis query returned (analysis annotation), by query.",
		"query")
	drainReplacements = counter("mydeployment_drain_replacements_total",
		"Pods on a draining node removed once their replacement was available (drain SurgeFirst).")
	// The operator's own state, not a MyDeployment's: no labels.
	upgradeGating = prometheus.NewGauge(prometheus.GaugeOpts{Name: "mydeployment_upgrade_gating_enabled",
		Help: "1 while the operator reports Upgradeable on its OperatorCondition, so OLM v0 holds operator upgrades during rollouts; 0 when it does not (not installed by OLM v0: OLM v1 has no OperatorCondition; or the OperatorCondition is missing)."})
)

// SetUpgradeGating records whether operator upgrades are held while
// rollouts run (mydeployment_upgrade_gating_enabled).
func SetUpgradeGating(on bool) {
	if on {
		upgradeGating.Set(1)
	} else {
		upgradeGating.Set(0)
	}
}

// perObject lists every collector with namespace and name labels: the series
// a deleted MyDeployment leaves behind.
var perObject = []*prometheus.MetricVec{
	specReplicas.MetricVec, statusReplicas.MetricVec, readyReplicas.MetricVec, availableReplicas.MetricVec,
	updatedReplicas.MetricVec, unavailableReplicas.MetricVec, currentRevision.MetricVec, updateRevision.MetricVec,
	generation.MetricVec, observedGeneration.MetricVec, paused.MetricVec, conditionStatus.MetricVec,
	rolloutInProgress.MetricVec, rolloutDuration.MetricVec, podsCreated.MetricVec, podsDeleted.MetricVec,
	podWriteFailures.MetricVec, deadlineExceeded.MetricVec, expectationTimeouts.MetricVec, expectationsPending.MetricVec,
	inPlaceUpdates.MetricVec, canaryStep.MetricVec, canarySteps.MetricVec, rolloutAborted.MetricVec,
	rolloutAborts.MetricVec, drainReplacements.MetricVec, analysisMeasurements.MetricVec, analysisValue.MetricVec,
}

// Collectors returns every collector of this package, for a registry of
// one's own (tests); init registers them with controller-runtime's.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{
		specReplicas, statusReplicas, readyReplicas, availableReplicas, updatedReplicas, unavailableReplicas,
		currentRevision, updateRevision, generation, observedGeneration, paused, conditionStatus,
		rolloutInProgress, rolloutDuration, podsCreated, podsDeleted, podWriteFailures, deadlineExceeded,
		expectationTimeouts, expectationsPending, inPlaceUpdates, canaryStep, canarySteps, rolloutAborted,
		rolloutAborts, drainReplacements, analysisMeasurements, analysisValue, upgradeGating, shardCollector{},
	}
}

func init() {
	ctrlmetrics.Registry.MustRegister(Collectors()...)
}
