package main

import (
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// fleetSelector narrows the per-MyDeployment series to the chosen namespaces.
const fleetSelector = `namespace=~"$namespace"`

// fleet is the operator's overview: every MyDeployment's rollouts and pods,
// and the controllers' own work.
func fleet() *dashboard.DashboardBuilder {
	s := func(extra string) string {
		if extra == "" {
			return "{" + fleetSelector + "}"
		}
		return "{" + fleetSelector + "," + extra + "}"
	}
	rate := func(metric, extra string) string {
		return "rate(" + metric + s(extra) + "[$__rate_interval])"
	}
	ctrl := `{controller=~"` + controllers + `"}`
	return base("mydeployment-fleet", "MyDeployment: fleet",
		"Every MyDeployment's rollouts and pods, and the operator's reconciles (mydeployment-operator).").
		WithVariable(labelVariable("namespace", "namespace", "mydeployment_spec_replicas").
			Multi(true).IncludeAll(true).AllValue(".*")).
		WithRow(dashboard.NewRowBuilder("Rollouts")).
		WithPanel(single("In progress", "MyDeployments whose rollout or scale is not complete (as kubectl rollout status judges).", "none",
			query("sum(mydeployment_rollout_in_progress"+s("")+")", "in progress"))).
		WithPanel(warnAbove(single("Failed", "MyDeployments whose Progressing condition is False: past their progress deadline, or aborted.", "none",
			query("sum(mydeployment_status_condition"+s(`condition="Progressing",status="false"`)+")", "failed")))).
		WithPanel(warnAbove(single("Aborted", "Rollouts aborted back to the stable pods (on-failure Abort); kubectl mydeployment rollout retry starts one over.", "none",
			query("sum(mydeployment_rollout_aborted"+s("")+")", "aborted")))).
		WithPanel(warnAbove(single("Replica failures", "MyDeployments with ReplicaFailure=True: pod writes refused (quota, admission) or an invalid spec.", "none",
			query("sum(mydeployment_status_condition"+s(`condition="ReplicaFailure",status="true"`)+") or vector(0)", "replica failures")))).
		WithPanel(warnAbove(single("Deadlines exceeded", "Rollouts that passed their progress deadline in the time range.", "none",
			query("sum(increase(mydeployment_progress_deadline_exceeded_total"+s("")+"[$__range]))", "deadlines")))).
		WithPanel(single("Replicas available", "Available pods of every MyDeployment against the pods they ask for.", "none",
			query("sum(mydeployment_status_replicas_available"+s("")+")", "available"),
			query("sum(mydeployment_spec_replicas"+s("")+")", "desired"))).
		WithPanel(graph("Rollouts", "MyDeployments rolling out, failed (Progressing=False) and aborted.", "none", 12,
			query("sum(mydeployment_rollout_in_progress"+s("")+")", "in progress"),
			query("sum(mydeployment_status_condition"+s(`condition="Progressing",status="false"`)+")", "failed"),
			query("sum(mydeployment_rollout_aborted"+s("")+")", "aborted"))).
		WithPanel(graph("Replicas", "Pods of every MyDeployment: desired, available, updated.", "none", 12,
			query("sum(mydeployment_spec_replicas"+s("")+")", "desired"),
			query("sum(mydeployment_status_replicas_available"+s("")+")", "available"),
			query("sum(mydeployment_status_replicas_updated"+s("")+")", "updated"))).
		WithRow(dashboard.NewRowBuilder("Pods")).
		WithPanel(graph("Pod writes", "Pods created and deleted per second, and writes the API server refused, by operation.", "ops", 8,
			query("sum("+rate("mydeployment_pods_created_total", "")+")", "created"),
			query("sum("+rate("mydeployment_pods_deleted_total", "")+")", "deleted"),
			query("sum by (operation) ("+rate("mydeployment_pod_write_failures_total", "")+")", "refused {{operation}}"))).
		WithPanel(graph("In-place updates", "Pods updated in place per second (update-mode InPlaceIfPossible), by result; fallback: the pod was replaced.", "ops", 8,
			query("sum by (result) ("+rate("mydeployment_in_place_updates_total", "")+")", "{{result}}"))).
		WithPanel(graph("Rollout duration", "From a new revision until every desired pod of it is available, over the rollouts completed in the interval.", "s", 8,
			query("histogram_quantile(0.5, sum by (le) ("+rate("mydeployment_rollout_duration_seconds_bucket", "")+"))", "p50"),
			query("histogram_quantile(0.9, sum by (le) ("+rate("mydeployment_rollout_duration_seconds_bucket", "")+"))", "p90"))).
		WithRow(dashboard.NewRowBuilder("Controller")).
		WithPanel(graph("Reconciles", "Reconciles per second by controller and result (controller-runtime).", "ops", 6,
			query("sum by (controller, result) (rate(controller_runtime_reconcile_total"+ctrl+"[$__rate_interval]))", "{{controller}} {{result}}"))).
		WithPanel(graph("Reconcile errors", "Reconciles that returned an error, per second (controller-runtime).", "ops", 6,
			query("sum by (controller) (rate(controller_runtime_reconcile_errors_total"+ctrl+"[$__rate_interval]))", "{{controller}}"))).
		WithPanel(graph("Reconcile latency", "Time one reconcile takes, 50th and 99th percentile (controller-runtime).", "s", 6,
			query("histogram_quantile(0.5, sum by (le, controller) (rate(controller_runtime_reconcile_time_seconds_bucket"+ctrl+"[$__rate_interval])))", "{{controller}} p50"),
			query("histogram_quantile(0.99, sum by (le, controller) (rate(controller_runtime_reconcile_time_seconds_bucket"+ctrl+"[$__rate_interval])))", "{{controller}} p99"))).
		WithPanel(graph("Work queue depth", "Objects waiting for a reconcile, by controller.", "none", 6,
			query(`sum by (name) (workqueue_depth{name=~"`+controllers+`"})`, "{{name}}"))).
		WithRow(dashboard.NewRowBuilder("Shards (--shards)")).
		WithPanel(graph("Slots per replica", "Slots of the namespace hash each manager replica holds and syncs, of 64 (with --shards; no data without).", "none", 8,
			query("sum by (instance) (mydeployment_shard_slots)", "{{instance}}"))).
		WithPanel(graph("MyDeployments per replica", "MyDeployments in the namespaces of each replica's slots: how evenly the names spread (with --shards).", "none", 8,
			query("sum by (instance) (mydeployment_shard_objects)", "{{instance}}"))).
		WithPanel(graph("Pods per replica", "Pods of each replica's slots, and every pod its cache holds: the same where the API server filters by shard, every pod where it does not (with --shards).", "none", 8,
			query("sum by (instance) (mydeployment_shard_pods)", "{{instance}}"),
			query("sum by (instance) (mydeployment_shard_cached_pods)", "{{instance}} cached")))
}
