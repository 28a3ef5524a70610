package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/inplace"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
	"github.com/mydeployment-io/mydeployment-operator/internal/status"
)

// scope is everything one sync of a MyDeployment observed and decided.
type scope struct {
	md *appsv1beta1.MyDeployment
	// obj is what the controller keeps of md between syncs: its freshness
	// record above all.
	obj      *object
	now      time.Time
	selector labels.Selector
	// invalid is set when the spec can never work (the selector, the
	// strategy, an opt-in annotation); invalidReason is the ReplicaFailure
	// reason to report it under.
	invalid       error
	invalidReason string
	// settled: the cache reflects every pod write of earlier syncs.
	settled bool
	// orphans: the namespace's pods without a controller, as readPods
	// found them (claim adopts those that match).
	orphans []*corev1.Pod
	// claim is what the ownership step found (claim.go).
	claim claimed
	// pods the MyDeployment controls (after adoption and release).
	pods      []*corev1.Pod
	revisions []*appsv1.ControllerRevision

	current, update *appsv1.ControllerRevision
	// target is the revision the plan moves pods to (rollout.Input.Target):
	// the update revision, or the current one while the rollout is
	// aborted; nil until decide. aborted says the rollout is (abort.go).
	target         *appsv1.ControllerRevision
	aborted        bool
	newRevision    bool
	collisionCount int32
	maxSurge       int32
	maxUnavailable int32
	optIn          optin.Options
	// drainingNodes are the nodes being drained, and drainDenied says the
	// manager may not watch Nodes; read only when optIn.Drain (drain.go).
	drainingNodes map[string]bool
	drainDenied   bool
	// stepsPending are the pods with an in-place step written and not yet
	// in the cache: not stepped again (rollout.StepsInput.Pending).
	stepsPending map[types.UID]bool
	plan         syncPlan
	// retryAfter, when positive, is when to try evictions a budget refused
	// again, or to look again at config access denied (configwatch.go).
	retryAfter time.Duration
	planned    bool // plan was computed
	// created counts the pods this sync created, and createdUpdated those
	// of the update revision: they exist when the status is written.
	created, createdUpdated int32
	// startedInPlace are the pods whose in-place update this sync began
	// (their gate False written, or a lost reply that landed): counted in
	// the status it writes as the next sync's cache will show them, on
	// their way and not ready. Otherwise the status a sync writes after
	// one batch became Ready and the next began is written again once the
	// cache shows the gates (issue 31: a status write a batch).
	startedInPlace []*corev1.Pod
	// uncertain counts creates whose reply was lost (they may exist).
	uncertain atomic.Int32
	// unclaimed: adopting or releasing pods failed, so pods lacks some
	// that are ours or about to be; no status is written from it.
	unclaimed bool
	failure   *status.Failure
	// config is the config watch of the object's namespace, read only
	// when optIn.RolloutOnConfigChange (configwatch.go).
	config configView
	// configHold says why, under the config opt-in, no revision can be
	// recorded now (ReplicaFailure ConfigMissing or ConfigAccessDenied):
	// the pods are planned as if the template were unchanged.
	configHold *status.Failure
}

var (
	errEmptySelector = errors.New("spec.selector: empty selector is invalid for a MyDeployment")
	// errTemplateNotSelected is Deployment's validation error, on the field it names.
	errTemplateNotSelected = errors.New("spec.template.metadata.labels: Invalid value: `selector` does not match template `labels`")
)

// selectorOf returns md's selector, or an error if it can never work: absent,
// empty, malformed, or not selecting the template's labels (its pods would
// be released as soon as they were created). Admission refuses all of these;
// an object it did not check (webhook off, stored before) can still have one.
func selectorOf(md *appsv1beta1.MyDeployment) (labels.Selector, error) {
	if md.Spec.Selector == nil {
		return nil, errEmptySelector
	}
	sel, err := metav1.LabelSelectorAsSelector(md.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("spec.selector: %w", err)
	}
	if sel.Empty() {
		return nil, errEmptySelector
	}
	if !sel.Matches(labels.Set(md.Spec.Template.Labels)) {
		return nil, errTemplateNotSelected
	}
	return sel, nil
}

// parseOptIn reads md's opt-in annotations; an error names each one whose
// value can never work (admission refuses them; an object it did not check
// can still have one).
func parseOptIn(md *appsv1beta1.MyDeployment) (optin.Options, error) {
	o, errs := optin.Parse(md)
	return o, errs.ToAggregate()
}

// observe reads the MyDeployment's pods from the cache and whether the
// cache has caught up with our earlier writes. Its revisions are read by
// claim (readRevisions), after the orphan ones.
func (r *MyDeploymentReconciler) observe(ctx context.Context, md *appsv1beta1.MyDeployment, obj *object) (*scope, error) {
	s := &scope{md: md, obj: obj, now: r.Clock.Now()}
	sel, err := selectorOf(md)
	if err != nil {
		s.invalid, s.invalidReason = err, appsv1beta1.ReasonInvalidSelector
		return s, nil
	}
	s.selector = sel
	if s.maxSurge, s.maxUnavailable, err = rollout.StrategyFenceposts(md.Spec.Strategy, ptr.Deref(md.Spec.Replicas, 1)); err != nil {
		s.invalid, s.invalidReason = err, appsv1beta1.ReasonInvalidStrategy
		return s, nil
	}
	if s.optIn, err = parseOptIn(md); err != nil {
		s.invalid, s.invalidReason = err, appsv1beta1.ReasonInvalidAnnotation
		return s, nil
	}
	if s.optIn.Drain {
		s.drainingNodes, s.drainDenied = r.nodes.snapshot()
	}
	if s.optIn.RolloutOnConfigChange {
		if s.config = r.config.view(md.Namespace); s.config.state == configStarting {
			// The watch enqueues this object once it knows.
			logf.FromContext(ctx).V(1).Info("waiting for the config watch of the namespace")
			return s, nil
		}
	}

	if err := r.vetStart(ctx, s); err != nil {
		return s, err
	}
	if err := r.readPods(s); err != nil {
		return s, err
	}
	exp := obj.Observe(s.pods, s.now)
	if len(exp.Leaked) > 0 {
		r.Metrics.ExpectationTimeouts(md, len(exp.Leaked))
		logf.FromContext(ctx).Info("expectations timed out; syncing anyway", "pods", exp.Leaked)
	}
	var waited time.Duration
	if !exp.Satisfied {
		waited = s.now.Sub(exp.Since)
	}
	r.Metrics.ExpectationsPending(md, waited)
	if s.settled = exp.Satisfied; !s.settled {
		log := logf.FromContext(ctx).V(1)
		if waited >= slowExpectations {
			log = logf.FromContext(ctx) // a wait this long is news: say it at the default level
		}
		log.Info("waiting for the cache to observe earlier pod writes", "pending", exp.Waiting, "waited", waited.Round(time.Second).String())
		return s, nil
	}

	held, err := r.heldByNamesake(ctx, s)
	if err != nil || held {
		s.settled, s.retryAfter = false, requeueConflict
		return s, err
	}
	return s, nil
}

// readPods reads s's pods from the cache: the orphans of its namespace,
// then its own. In that order, a pod whose adoption (an earlier sync's)
// reaches the cache between the two reads is in the second; the other way
// round it was in neither, and the plan created its replacement (chaos
// suite: an orphan delete and re-create where one adoption of several
// failed). readStrays reads the strays after both (see there).
func (r *MyDeploymentReconciler) readPods(s *scope) error {
	var err error
	if s.orphans, err = r.PodIndex.Orphans(s.md.Namespace); err != nil {
		return fmt.Errorf("listing orphan pods: %w", err)
	}
	if s.pods, err = r.PodIndex.Owned(s.md.UID); err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	return nil
}

// slowExpectations is how long a wait for the cache is normal; a longer one
// is logged at the default level.
const slowExpectations = 10 * time.Second

// result is when to look at the MyDeployment again: the soonest of a pod
// becoming available, the progress deadline, a retry of refused evictions,
// and (when unsettled) a safety net for leaked expectations. Events requeue it earlier.
func (s *scope) result(after ...time.Duration) ctrl.Result {
	var d time.Duration
	if !s.settled {
		d = requeueUnsettled
	}
	for _, a := range append(after, s.plan.RequeueAfter, s.retryAfter, s.plan.inPlaceAfter) {
		if a > 0 && (d == 0 || a < d) {
			d = a
		}
	}
	return ctrl.Result{RequeueAfter: d}
}

// statusInput is the scope as the status computation needs it.
func (s *scope) statusInput(synced bool) status.Input {
	in := status.Input{
		Object: s.md,
		// Missing config: the spec's generation is not rolled out, so it
		// is not observed (no status may call it available).
		Synced:         synced && s.configHold == nil,
		NewRevision:    s.newRevision,
		CollisionCount: s.collisionCount,
		LabelSelector:  s.selector.String(),
		MaxUnavailable: s.maxUnavailable,
		Failure:        s.statusFailure(),
		Now:            s.now,
	}
	if s.update != nil {
		in.UpdateRevision = s.update.Name
	}
	if in.Failure == nil && s.configHold != nil {
		in.Failure = s.configHold
	}
	// Pods are counted even with no update revision known (its write
	// failed): a status of 0 replicas while pods run would mislead scalers.
	in.Counts = rollout.Count(s.pods, in.UpdateRevision, s.md.Spec.MinReadySeconds, s.now)
	started := rollout.Count(s.startedInPlace, in.UpdateRevision, s.md.Spec.MinReadySeconds, s.now)
	if s.planned {
		// What the plan keeps or creates, as Deployment sums its ReplicaSets'
		// desired sizes: 0 while Recreate waits for the old pods to go.
		deleted := rollout.Count(slices.Concat(s.plan.Delete, s.plan.Evict), in.UpdateRevision, 0, s.now).Replicas
		in.Planned = ptr.To(in.Counts.Replicas - deleted + s.plan.Creates())
		in.Canary = s.plan.Canary
		if !s.aborted {
			// A pod on its way to the update revision in place still carries
			// its old revision's labels until its spec patch; it counts as
			// updated from its gate False on, as a new ReplicaSet's pod does
			// from its creation. Counted from the patch on, each batch cost
			// one more status write (issue 31). So do the pods this sync
			// started (startedInPlace).
			in.Counts.Updated += int32(len(s.plan.MovingInPlace)) + started.Replicas - started.Updated
		}
	}
	// Pods created by this sync run (unready) when the status is written:
	// without them a replacement made at rest (a specified delete) would
	// be written as "complete" beside its new pod.
	in.Counts.Replicas += s.created
	in.Counts.Updated += s.createdUpdated
	in.Counts.Ready -= started.Ready // their gates are False
	in.Counts.Available -= started.Available
	if s.current != nil && s.update != nil && s.current.Name != s.update.Name {
		in.Partition = s.optIn.Partition.Pods(ptr.Deref(s.md.Spec.Replicas, 1))
	}
	in.AbortOnFailure, in.RetriedAt = s.optIn.Abort, s.optIn.RetriedAt
	if s.aborted || !s.planned && s.recordedAbort() {
		in.Aborted = in.UpdateRevision
	}
	if s.current != nil {
		in.CurrentRevision = s.current.Name
		in.CurrentReplicas = in.Counts.Updated
		if s.update == nil || s.current.Name != s.update.Name {
			// Mid-rollout only: count the current revision's pods too.
			in.CurrentReplicas = rollout.Count(s.pods, s.current.Name, s.md.Spec.MinReadySeconds, s.now).Updated
		}
	}
	return in
}

func statusEqual(a, b appsv1beta1.MyDeploymentStatus) bool {
	return apiequality.Semantic.DeepEqual(a, b)
}

// logPlan logs the plan once per sync at V(1), when it acts: what it does,
// and the pods it was computed from (up to maxLoggedPods of them: name,
// revision, ready, gate), so a plan can be checked against its input.
func logPlan(ctx context.Context, s *scope) {
	if s.plan.Removes() == 0 && len(s.plan.Create) == 0 && len(s.plan.UpdateInPlace) == 0 && len(s.plan.steps) == 0 {
		return
	}
	log := logf.FromContext(ctx).V(1)
	if !log.Enabled() {
		return
	}
	refs := func(pods []*corev1.Pod) []klog.ObjectRef {
		out := make([]klog.ObjectRef, 0, len(pods))
		for _, p := range pods {
			out = append(out, klog.KObj(p))
		}
		return out
	}
	observed := make([]string, 0, min(len(s.pods), maxLoggedPods))
	for _, p := range s.pods[:min(len(s.pods), maxLoggedPods)] {
		desc := p.Name + ":" + p.Labels[appsv1beta1.RevisionLabel]
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				desc += ":ready"
			}
		}
		if c := inplace.Condition(p); c != nil {
			desc += ":gate=" + string(c.Status) + "/" + c.Reason
		}
		if p.DeletionTimestamp != nil {
			desc += ":terminating"
		}
		observed = append(observed, desc)
	}
	log.Info("plan", "uid", s.md.UID, "step", s.plan.Reason, "create", s.plan.Create, "delete", refs(s.plan.Delete),
		"evict", refs(s.plan.Evict), "updateInPlace", refs(s.plan.UpdateInPlace), "updateRevision", s.update.Name,
		"target", s.towards().Name, "inPlaceSteps", len(s.plan.steps), "pods", observed)
}

const maxLoggedPods = 20
