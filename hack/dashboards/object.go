package main

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// objectSelector picks the series of the chosen MyDeployment.
const objectSelector = `{namespace="$namespace",name="$name"}`

// object is one MyDeployment: its pods, revisions, canary step and rollout
// durations over time, with its new revisions, aborts and drain
// replacements marked on the time axis.
func object() *dashboard.DashboardBuilder {
	m := func(metric string) string { return metric + objectSelector }
	changed := func(metric string) string { return "increase(" + m(metric) + "[$__rate_interval]) > 0" }
	return base("mydeployment-object", "MyDeployment",
		"One MyDeployment: its pods against spec.replicas, revisions, canary step and rollouts (mydeployment-operator).").
		WithVariable(labelVariable("namespace", "namespace", "mydeployment_spec_replicas")).
		WithVariable(labelVariable("name", "name", `mydeployment_spec_replicas{namespace="$namespace"}`)).
		Annotation(annotation("New revision", "blue", "changes("+m("mydeployment_status_update_revision")+"[$__rate_interval]) > 0",
			"New revision")).
		Annotation(annotation("Aborts", "red", changed("mydeployment_rollout_aborts_total"),
			"Rollout aborted: pods go back to the current revision")).
		Annotation(annotation("Drain replacements", "orange", changed("mydeployment_drain_replacements_total"),
			"Pods replaced on a draining node")).
		WithPanel(single("Desired", "spec.replicas", "none", query(m("mydeployment_spec_replicas"), "desired"))).
		WithPanel(single("Available", "Pods ready for minReadySeconds.", "none", query(m("mydeployment_status_replicas_available"), "available"))).
		WithPanel(single("Update revision", "The revision being rolled out (the current one once the rollout is complete).", "none",
			query(m("mydeployment_status_update_revision"), "revision"))).
		WithPanel(single("Canary step", "The step a canary rollout is at, of how many its canary-steps annotation lists; 0: no canary rollout under way.", "none",
			query(m("mydeployment_canary_step"), "step"), query(m("mydeployment_canary_steps"), "of"))).
		WithPanel(warnAbove(single("Aborted", "1 while the rollout is aborted (on-failure Abort): kubectl mydeployment rollout retry starts it over.", "none",
			query(m("mydeployment_rollout_aborted"), "aborted")).
			Mappings(yesNo()))).
		WithPanel(single("Paused", "spec.paused", "none", query(m("mydeployment_spec_paused"), "paused")).Mappings(yesNo())).
		WithPanel(graph("Pods", "Updated, ready and available pods against spec.replicas, and every pod of it.", "none", 12,
			query(m("mydeployment_spec_replicas"), "desired"),
			query(m("mydeployment_status_replicas"), "pods"),
			query(m("mydeployment_status_replicas_updated"), "updated"),
			query(m("mydeployment_status_replicas_ready"), "ready"),
			query(m("mydeployment_status_replicas_available"), "available"))).
		WithPanel(graph("Revisions", "The current revision (most pods) and the update revision (being rolled out).", "none", 12,
			query(m("mydeployment_status_current_revision"), "current"),
			query(m("mydeployment_status_update_revision"), "update"))).
		WithPanel(graph("Canary step", "The step of the canary rollout under way, and how many steps there are.", "none", 8,
			query(m("mydeployment_canary_step"), "step"),
			query(m("mydeployment_canary_steps"), "steps"))).
		WithPanel(graph("Rollout duration", "How long the rollouts completed in the interval took, from their new revision until every pod of it was available.", "s", 8,
			query("increase("+m("mydeployment_rollout_duration_seconds_sum")+"[$__rate_interval]) / increase("+
				m("mydeployment_rollout_duration_seconds_count")+"[$__rate_interval]) > 0", "duration"))).
		WithPanel(graph("Conditions", "Each condition that is True: Available, Progressing, ReplicaFailure.", "none", 8,
			query("mydeployment_status_condition"+`{namespace="$namespace",name="$name",status="true"}`, "{{condition}}"))).
		WithPanel(graph("Pod writes", "Pods created and deleted per second, and writes the API server refused.", "ops", 12,
			query("rate("+m("mydeployment_pods_created_total")+"[$__rate_interval])", "created"),
			query("rate("+m("mydeployment_pods_deleted_total")+"[$__rate_interval])", "deleted"),
			query("sum by (operation) (rate("+m("mydeployment_pod_write_failures_total")+"[$__rate_interval]))", "refused {{operation}}"))).
		WithPanel(graph("In-place updates", "Pods updated in place per second, by result (update-mode InPlaceIfPossible).", "ops", 12,
			query("sum by (result) (rate("+m("mydeployment_in_place_updates_total")+"[$__rate_interval]))", "{{result}}")))
}

// yesNo shows 0 and 1 as No and Yes.
func yesNo() []dashboard.ValueMapping {
	return []dashboard.ValueMapping{{ValueMap: &dashboard.ValueMap{Type: dashboard.MappingTypeValueToText,
		Options: map[string]dashboard.ValueMappingResult{
			"0": {Text: cog.ToPtr("No"), Index: cog.ToPtr[int32](0)},
			"1": {Text: cog.ToPtr("Yes"), Color: cog.ToPtr("red"), Index: cog.ToPtr[int32](1)},
		}}}}
}
