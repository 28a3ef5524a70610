package controller

import (
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/mydeployment-io/mydeployment-operator/internal/metrics"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
	"github.com/mydeployment-io/mydeployment-operator/internal/status"
)

// counted is what the status of a sync counts: the claimed pods against
// the claimed revisions, or, when a revision write failed before the pods
// were claimed, the pods as cached against the revisions status names
// (as if nothing were claimed). A revision this sync wrote is the one as
// written.
type counted struct {
	pods            []*corev1.Pod
	current, update *appsv1.ControllerRevision
	newRevision     bool
}

func countedOf(o *observation, c *claimed, out *outcome) counted {
	written := out.asWritten
	switch {
	case c == nil:
		return counted{pods: o.pods}
	case out.revisionsFailed:
		return counted{pods: c.cached, current: written(named(c.revisions, o.md.Status.CurrentRevision)),
			update: written(named(c.revisions, o.md.Status.UpdateRevision))}
	}
	return counted{pods: c.pods, current: written(c.current), update: written(c.update), newRevision: c.newRevision}
}

// statusInput is what status.Compute takes, from the observation, the
// claims (nil: none made), the plan (nil: none made) and the outcome;
// synced says the sync met no error.
func statusInput(o *observation, c *claimed, p *syncPlan, out *outcome, synced bool) status.Input {
	v := countedOf(o, c, out)
	in := status.Input{
		Object: o.md,
		// A held revision (missing config) is not observed either: its
		// module's ReportInput says so.
		Synced:         synced,
		NewRevision:    v.newRevision,
		CollisionCount: out.collisionCount,
		LabelSelector:  o.selector.String(),
		MaxUnavailable: o.maxUnavailable,
		Failure:        statusFailure(out),
		Now:            o.now,
	}
	if handingOver(o.optIn) != "" {
		in.WaitingForHandOver = out.handOver.wait
	}
	if v.update != nil {
		in.UpdateRevision = v.update.Name
	}
	// Pods are counted even with no update revision known (its write
	// failed): a status of 0 replicas while pods run would mislead scalers.
	in.Counts = rollout.Count(v.pods, in.UpdateRevision, o.md.Spec.MinReadySeconds, o.now)
	started := rollout.Count(out.startedInPlace, in.UpdateRevision, o.md.Spec.MinReadySeconds, o.now)
	aborted := p != nil && p.aborted
	if out.planned {
		// What the plan keeps or creates, as Deployment sums its ReplicaSets'
		// desired sizes: 0 while Recreate waits for the old pods to go.
		deleted := rollout.Count(slices.Concat(p.Delete, p.Evict), in.UpdateRevision, 0, o.now).Replicas
		in.Planned = ptr.To(in.Counts.Replicas - deleted + p.Creates())
		in.Canary = p.Canary
		in.Plan = &p.Plan
		if !aborted {
			// A pod on its way to the update revision in place still carries
			// its old revision's labels until its spec patch; it counts as
			// updated from its gate False on, as a new ReplicaSet's pod does
			// from its creation. Counted from the patch on, each batch cost
			// one more status write (issue 31). So do the pods this sync
			// started (startedInPlace).
			in.Counts.Updated += int32(len(p.MovingInPlace)) + started.Replicas - started.Updated
		}
	}
	// Pods created by this sync run (unready) when the status is written:
	// without them a replacement made at rest (a specified delete) would
	// be written as "complete" beside its new pod.
	in.Counts.Replicas += out.created
	in.Counts.Updated += out.createdUpdated
	in.Counts.Ready -= started.Ready // their gates are False
	in.Counts.Available -= started.Available
	if aborted || !out.planned && recordedAbort(o, v.update, v.newRevision) {
		in.Aborted = in.UpdateRevision
	}
	if p != nil {
		in.AbortedBy = p.abortCause.Message
	}
	if v.current != nil {
		in.CurrentRevision = v.current.Name
		in.CurrentReplicas = in.Counts.Updated
		if v.update == nil || v.current.Name != v.update.Name {
			// Mid-rollout only: count the current revision's pods too.
			in.CurrentReplicas = rollout.Count(v.pods, v.current.Name, o.md.Spec.MinReadySeconds, o.now).Updated
		}
	}
	for r := range optin.Each[status.Reporter](o.optIn) {
		r.ReportInput(&in)
	}
	return in
}

// requeue is when to look at the MyDeployment again: the soonest of after
// (a pod becoming available, the progress deadline, a retry of refused
// evictions, an in-place update's timeout, ...) and, when unsettled, a
// safety net for leaked expectations. Events requeue it earlier.
func requeue(settled bool, after ...time.Duration) ctrl.Result {
	var d time.Duration
	if !settled {
		d = requeueUnsettled
	}
	for _, a := range after {
		if a > 0 && (d == 0 || a < d) {
			d = a
		}
	}
	return ctrl.Result{RequeueAfter: d}
}

// metricsObservation is the sync's outcome as the metrics recorder needs it.
func metricsObservation(o *observation, v counted, st status.Result) metrics.Observation {
	return metrics.Observation{
		Object:           o.md,
		Status:           &st.Status,
		Current:          v.current,
		Update:           v.update,
		NewRevision:      v.newRevision,
		DeadlineExceeded: st.DeadlineExceeded,
		Now:              o.now,
	}
}

// statusFailure is the ReplicaFailure the status reports before the
// modules' (drain: DrainAccessDenied) and the config's hold: a hand-over
// that cannot go on, else the sync's refused write if any.
func statusFailure(out *outcome) *status.Failure {
	if out.handOver.failure != nil {
		return out.handOver.failure
	}
	return out.failure
}
