/*
Copyright 2026.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package controller

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/metrics"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/podcontrol"
	"github.com/mydeployment-io/mydeployment-operator/internal/podwatch"
	"github.com/mydeployment-io/mydeployment-operator/internal/revision"
	"github.com/mydeployment-io/mydeployment-operator/internal/shard"
	"github.com/mydeployment-io/mydeployment-operator/internal/status"
)

// MyDeploymentReconciler drives a MyDeployment's pods towards its spec. It
// only decides and wires: the planner (internal/rollout), the revision
// history (internal/revision), pod writes (internal/podcontrol) and status
// (internal/status) each live in their own package.
type MyDeploymentReconciler struct {
	client.Client
	// APIReader reads around the cache where a stale read could do harm
	// (adoption, revision collisions).
	APIReader client.Reader
	// PodIndex lists the cached pods by controller, without copies.
	PodIndex  *podwatch.Index
	Recorder  events.EventRecorder
	Pods      podcontrol.Interface
	Revisions *revision.Store
	Clock     clock.PassiveClock
	// Workers is how many MyDeployments are reconciled in parallel.
	Workers int
	// Metrics records each sync's outcome as Prometheus series.
	Metrics *metrics.Recorder
	// StatusBatchPeriod spaces out a rollout's progress-only status
	// writes (see memory.paceStatus); 0 writes every change at once.
	StatusBatchPeriod time.Duration
	// InPlaceTimeout is how long an in-place update may take before the
	// pod is replaced; 0 means DefaultInPlaceTimeout.
	InPlaceTimeout time.Duration
	// Shards admits the syncs of the namespaces this replica holds (issue
	// 56, shards.go); nil without shards: every namespace.
	Shards *shard.Gate
	// shardQueue is the controller's work queue once it started, for the
	// objects of a slot taken (TookSlots).
	shardQueue atomic.Pointer[workqueue.TypedRateLimitingInterface[reconcile.Request]]
	// objects is what the controller knows of each MyDeployment beyond
	// the cache: its freshness record, pacing and backoff (objects.go).
	objects *objects
	// sweepBefore: MyDeployments created before it (the controller's setup
	// plus sweepMargin) have their possible strays listed once (sweep).
	sweepBefore time.Time
	// parts are the opt-in modules' long-lived parts (optin.Builder), by
	// module: drain's watch of Nodes, config rollouts' of ConfigMaps and
	// Secrets, update-mode's memo of revision templates and in-place
	// diffs, the canary analysis' Prometheus client. A module without one
	// observes nothing (config rollouts: reads from the API server,
	// nothing denied; update mode: a memo per sync; analysis: Prometheus
	// asked with http.DefaultClient).
	parts map[string]optin.Part
}

// +kubebuilder:rbac:groups=apps.mydeployment.io,resources=mydeployments,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=apps.mydeployment.io,resources=mydeployments/status,verbs=patch
// +kubebuilder:rbac:groups=apps.mydeployment.io,resources=mydeployments/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete;patch
// +kubebuilder:rbac:groups="",resources=pods/eviction,verbs=create
// +kubebuilder:rbac:groups="",resources=pods/status;pods/resize,verbs=patch
// +kubebuilder:rbac:groups=apps,resources=controllerrevisions,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// Read around the cache, only while a MyDeployment takes over a Deployment's pods (handover.go):
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get
// +kubebuilder:rbac:groups=apps,resources=replicasets,verbs=list

// Reconcile syncs one MyDeployment: observe, decide, act, then write status
// once. Errors are returned (and retried with backoff) only when retrying can
// help; a spec that can never work is reported as a condition and an event.
func (r *MyDeploymentReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	leave, ok := r.enterShard(req.Namespace)
	if !ok {
		return ctrl.Result{}, nil // another replica holds its slot
	}
	defer leave()
	md := &appsv1beta1.MyDeployment{}
	if err := r.Get(ctx, req.NamespacedName, md); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	obj := r.objects.get(md)
	obj.CatchUp(md) // our last write, if the cache does not show it yet
	if md.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	o, err := r.observer().observe(ctx, md, obj)
	// What this sync leaves to the next: observe's memory, then the last
	// phase's (out.mem) and the status write's time, committed on every path.
	mem := o.mem
	defer func() { obj.commit(mem) }()
	switch {
	case err != nil:
		return ctrl.Result{}, err
	case o.invalid != nil:
		return ctrl.Result{}, r.reportInvalid(ctx, o)
	case !o.settled:
		return requeue(false, o.retryAfter), nil
	}
	var (
		c       *claimed
		p       *syncPlan
		out     *outcome
		syncErr error
	)
	if handingOver(o.optIn) != "" {
		c, out, syncErr = r.handOverSync().handOver(ctx, o)
	} else {
		c, p, out, syncErr = r.sync(ctx, o)
	}
	r.countOutcome(md, out)
	mem = out.mem
	if out.unclaimed {
		// Counted without the orphans it failed to adopt, the status would
		// say 0 replicas beside running pods. Deployment returns before its
		// status too when claiming fails; the retry writes it.
		return ctrl.Result{}, syncErr
	}
	o = o.written(out) // the object as the sync's writes left it: the status's
	st := status.Compute(statusInput(o, c, p, out, syncErr == nil))
	r.Metrics.Record(metricsObservation(o, countedOf(o, c, out), st))
	r.statusEvents(md, st)
	deferred, statusErr := r.patchStatus(ctx, o, st, &mem)
	if err := kerrors.NewAggregate([]error{syncErr, statusErr}); err != nil {
		return ctrl.Result{}, err // retried with backoff; a result beside an error is ignored
	}
	after := []time.Duration{st.RequeueAfter, deferred, o.retryAfter, out.retryAfter}
	if p != nil {
		after = append(after, p.RequeueAfter, p.inPlaceAfter, p.analysisAfter)
	}
	return requeue(true, after...), nil
}

// The phases of a sync, over the seams each uses (made per sync: a few
// pointers, and a test's reconciler needs no setup to have them).
func (r *MyDeploymentReconciler) observer() observer {
	ob := observer{pods: r.PodIndex, apiReader: r.APIReader, metrics: r.Metrics, clock: r.Clock, parts: r.parts}
	if r.objects != nil {
		ob.vetTimeout = r.objects.timeout
	}
	return ob
}

func (r *MyDeploymentReconciler) claimer() claimer {
	return claimer{apiReader: r.APIReader, revisions: r.Revisions, objects: r.objects, sweepBefore: r.sweepBefore}
}

func (r *MyDeploymentReconciler) actor() actor {
	return actor{pods: r.Pods, revisions: r.Revisions, writer: r.Client, apiReader: r.APIReader, recorder: r.Recorder,
		inPlaceTimeout: r.inPlaceTimeout()}
}

func (r *MyDeploymentReconciler) handOverSync() handOverSync {
	return handOverSync{claimer: r.claimer(), actor: r.actor()}
}

// patchStatus writes the status st computed for o, unless it says what md's
// says already, or it says only progress and is paced (memory.paceStatus of
// mem, the sync's memory: deferred, when to write it); a write is noted in
// mem. A status that met a newer object is not
// written, and no error: the change's event syncs the object again, and
// deferred is a safety net.
func (r *MyDeploymentReconciler) patchStatus(ctx context.Context, o *observation, st status.Result, mem *memory) (deferred time.Duration, err error) {
	md := o.md
	if statusEqual(md.Status, st.Status) {
		return 0, nil
	}
	if !status.Pressing(md.Status, st.Status, ptr.Deref(md.Spec.Replicas, 1)) {
		deferred = mem.paceStatus(o.now, r.StatusBatchPeriod)
	}
	if deferred > 0 {
		return deferred, nil
	}
	if err = r.writeStatus(ctx, o.obj, md, st.Status); err == nil {
		mem.statusWrittenAt = o.now
	}
	if apierrors.IsConflict(err) {
		logf.FromContext(ctx).V(1).Info("status not written: the MyDeployment changed since it was read")
		return requeueConflict, nil
	}
	return 0, err
}

// statusEvents records what a new status newly says, once: the progress
// deadline exceeded, the rollout held at its partition, referenced config
// missing (once per set of missing objects, not once per sync).
func (r *MyDeploymentReconciler) statusEvents(md *appsv1beta1.MyDeployment, st status.Result) {
	if st.DeadlineExceeded {
		r.Recorder.Eventf(md, nil, corev1.EventTypeWarning, appsv1beta1.ReasonProgressDeadlineExceeded, "Rollout",
			"MyDeployment %q has timed out progressing.", md.Name)
	}
	r.drainDeniedEvent(md, st)
	r.handOverEvents(md, st)
	if c := status.Get(&st.Status, appsv1beta1.ConditionReplicaFailure); c != nil &&
		(c.Reason == appsv1beta1.ReasonConfigMissing || c.Reason == appsv1beta1.ReasonConfigAccessDenied) {
		if prev := status.Get(&md.Status, appsv1beta1.ConditionReplicaFailure); prev == nil || prev.Message != c.Message {
			r.Recorder.Eventf(md, nil, corev1.EventTypeWarning, c.Reason, "Sync", "%s", c.Message)
		}
	}
	if st.PartitionHeld {
		r.Recorder.Eventf(md, nil, corev1.EventTypeNormal, appsv1beta1.EventPartitionHeld, "Rollout",
			"Rollout held by partition: %s", st.HeldMessage)
	}
}

// reportInvalid records a spec that can never work as a condition and an
// event, without an error (a retry cannot fix it; a spec change requeues).
func (r *MyDeploymentReconciler) reportInvalid(ctx context.Context, o *observation) error {
	md := o.md
	if c := status.Get(&md.Status, appsv1beta1.ConditionReplicaFailure); c == nil || c.Message != o.invalid.Error() {
		r.Recorder.Eventf(md, nil, corev1.EventTypeWarning, o.invalidReason, "Sync", "%v", o.invalid)
	}
	st := md.Status.DeepCopy()
	status.SetFailure(st, &status.Failure{Reason: o.invalidReason, Message: o.invalid.Error()}, o.now)
	if statusEqual(md.Status, *st) {
		return nil
	}
	return r.writeStatus(ctx, o.obj, md, *st)
}

// forget drops everything kept of the MyDeployment named key: it is gone
// (its pods go with it, by their owner references).
func (r *MyDeploymentReconciler) forget(key types.NamespacedName) {
	r.objects.forget(key)
	r.Metrics.Forget(key)
}

// PendingWrites counts the MyDeployments with pod writes their cache does
// not show yet (the upgrade reporter holds upgrades while any has).
func (r *MyDeploymentReconciler) PendingWrites() int { return r.objects.pending() }

// sync brings the revisions and pods of o's MyDeployment towards its
// spec, in three phases that each return a value the next takes: claim
// reads what the ownership claims need and decides them (claimed), decide
// plans every write from the observation and the claims alone (syncPlan),
// and act carries the plan out (outcome). It returns what each phase
// made, for the status, even on error: no claims when the claim failed
// (no status is written then), no plan when none was made (paused before
// the first revision).
func (r *MyDeploymentReconciler) sync(ctx context.Context, o *observation) (*claimed, *syncPlan, *outcome, error) {
	c, err := r.claimer().claim(ctx, o)
	if err != nil {
		return nil, nil, &outcome{unclaimed: true, mem: c.mem}, err
	}
	// Nothing acted: what the claims found is all the outcome says.
	unacted := &outcome{collisionCount: c.collisionCount, retryAfter: c.retryAfter, mem: c.mem}
	if c.update == nil {
		return c, nil, unacted, nil // paused before its first revision: nothing to run yet
	}
	p, err := decide(o, c, r.parts, r.inPlaceTimeout())
	if err != nil {
		return c, p, unacted, err
	}
	logPlan(ctx, p)
	out, err := r.actor().act(ctx, p)
	return c, p, out, err
}

// writeStatus writes st as md's whole status, computed from one observation,
// only if md is still the object stored (its resourceVersion is the patch's
// precondition): a status computed from a stale copy is refused with a
// conflict rather than merged into fields another sync wrote, which could
// say a rollout is complete while old or unavailable pods run.
func (r *MyDeploymentReconciler) writeStatus(ctx context.Context, obj *object, md *appsv1beta1.MyDeployment, st appsv1beta1.MyDeploymentStatus) error {
	// Diff the status alone: marshalling the whole object (its pod template)
	// twice per write was a tenth of the manager's CPU.
	from := &appsv1beta1.MyDeployment{ObjectMeta: metav1.ObjectMeta{ResourceVersion: md.ResourceVersion}, Status: md.Status}
	to := &appsv1beta1.MyDeployment{ObjectMeta: metav1.ObjectMeta{ResourceVersion: md.ResourceVersion}, Status: st}
	patch, err := client.MergeFromWithOptions(from, client.MergeFromWithOptimisticLock{}).Data(to)
	if err != nil {
		return fmt.Errorf("computing the status patch: %w", err)
	}
	target := &appsv1beta1.MyDeployment{ObjectMeta: metav1.ObjectMeta{Name: md.Name, Namespace: md.Namespace}}
	if err := r.Status().Patch(ctx, target, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("patching status: %w", err)
	}
	wroteObject(obj, writeStatus, md.ResourceVersion, target)
	return nil
}

// countOutcome counts in the metrics what out says act did for md.
func (r *MyDeploymentReconciler) countOutcome(md *appsv1beta1.MyDeployment, out *outcome) {
	if out.abortRecorded {
		r.Metrics.RolloutAborted(md)
	}
	for range out.drainReplaced.Load() {
		r.Metrics.DrainReplaced(md)
	}
	r.Metrics.InPlaceUpdates(md, metrics.InPlaceStarted, out.inPlaceStarted)
	r.Metrics.InPlaceUpdates(md, metrics.InPlaceCompleted, out.inPlaceCompleted)
	r.Metrics.InPlaceUpdates(md, metrics.InPlaceFallback, out.inPlaceFallback)
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

// DefaultInPlaceTimeout is how long an in-place update may take, from its
// start until the pod runs the new template, before the pod is replaced.
const DefaultInPlaceTimeout = 2 * time.Minute

// inPlaceTimeout is how long an in-place update may take (DefaultInPlaceTimeout if unset).
func (r *MyDeploymentReconciler) inPlaceTimeout() time.Duration {
	if r.InPlaceTimeout <= 0 {
		return DefaultInPlaceTimeout
	}
	return r.InPlaceTimeout
}
