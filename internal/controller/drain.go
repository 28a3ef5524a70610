package controller

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/status"
)

// What a sync of a MyDeployment that opts into drain SurgeFirst adds to
// the controller's path (the drain module, internal/optin/drain, has the
// rest: the Node watch, the draining nodes for the planner, the status
// when Nodes are denied): act records DrainReplaced for each pod the plan
// drained once its removal succeeded, and the event of a denial.

// statusFailure is the ReplicaFailure the status reports before the
// modules' (drain: DrainAccessDenied) and the config's hold: a hand-over
// that cannot go on, else the sync's refused write if any.
func statusFailure(out *outcome) *status.Failure {
	if out.handOver.failure != nil {
		return out.handOver.failure
	}
	return out.failure
}

// drainReplaced records the DrainReplaced event of pod, removed by this
// sync, and counts it in out, if the plan drained it.
func (a actor) drainReplaced(p *syncPlan, out *outcome, pod *corev1.Pod) {
	if slices.Contains(p.Drained, pod) {
		out.drainReplaced.Add(1)
		a.recorder.Eventf(p.md, pod, corev1.EventTypeNormal, appsv1beta1.EventDrainReplaced, "Drain",
			"Replaced pod %s on draining node %s", pod.Name, pod.Spec.NodeName)
	}
}

// drainDeniedEvent records a warning when the status newly says access to
// Nodes is denied.
func (r *MyDeploymentReconciler) drainDeniedEvent(md *appsv1beta1.MyDeployment, st status.Result) {
	now := status.Get(&st.Status, appsv1beta1.ConditionReplicaFailure)
	if now == nil || now.Reason != appsv1beta1.ReasonDrainAccessDenied {
		return
	}
	if before := status.Get(&md.Status, appsv1beta1.ConditionReplicaFailure); before != nil && before.Reason == now.Reason {
		return
	}
	r.Recorder.Eventf(md, nil, corev1.EventTypeWarning, appsv1beta1.ReasonDrainAccessDenied, "Drain", "%s", now.Message)
}
