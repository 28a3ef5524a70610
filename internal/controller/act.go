package controller

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/inplace"
	"github.com/mydeployment-io/mydeployment-operator/internal/metrics"
	"github.com/mydeployment-io/mydeployment-operator/internal/podcontrol"
	"github.com/mydeployment-io/mydeployment-operator/internal/revision"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
	"github.com/mydeployment-io/mydeployment-operator/internal/status"
)

// outcome is what act did that the status and the next look need: what
// the cache cannot show yet (the pods it created, the in-place updates it
// began), the writes that failed, and when to look again.
type outcome struct {
	// planned: a plan was made and its claims written, so the status
	// counts what it keeps and creates.
	planned bool
	// revisionsFailed: a revision write failed before the pods were
	// claimed: the status counts the pods as cached against the revisions
	// status names. unclaimed: adopting or releasing pods failed, so the
	// claimed pods lack some that are ours or about to be: no status is
	// written.
	revisionsFailed, unclaimed bool
	// update is the update revision as written (nil: not written by this
	// sync); collisionCount the count it was written under.
	update         *appsv1.ControllerRevision
	collisionCount int32
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
	failure   *status.Failure
	// retryAfter, when positive, is when to try evictions a budget refused
	// again, to look again at a revision an opt-in holds (config access
	// denied: revision.Input.RetryAfter), or
	// at a hand-over (handover.go).
	retryAfter time.Duration
	// handOver is what a hand-over sync (adopt-from, handover.go) tells
	// the status.
	handOver handOverState
	// What the metrics count once act returns (countOutcome): an abort
	// recorded, pods removed from draining nodes, in-place updates
	// started, completed, and failed (their pods replaced).
	abortRecorded                                     bool
	drainReplaced                                     atomic.Int32
	inPlaceStarted, inPlaceCompleted, inPlaceFallback int
	// mem is what the sync leaves to the next (memory): the claim's, with
	// what act changed (the eviction backoff).
	mem memory
	// md is the MyDeployment as this sync's annotation writes left it (its
	// records, its resourceVersion: what the status write must see); nil
	// when it wrote none. The observation's object is never modified.
	md *appsv1beta1.MyDeployment
}

// object is md as out's annotation writes left it: out.md, or md when
// they wrote none.
func (out *outcome) object(md *appsv1beta1.MyDeployment) *appsv1beta1.MyDeployment {
	if out != nil && out.md != nil {
		return out.md
	}
	return md
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

// revision is p's revision named name, as this sync wrote it if it did.
func (out *outcome) revision(p *syncPlan, name string) *appsv1.ControllerRevision {
	if out.update != nil && out.update.Name == name {
		return out.update
	}
	if rev := named(p.revisions, name); rev != nil {
		return rev
	}
	if p.update != nil && p.update.Name == name {
		return p.update
	}
	return nil
}

// actor is the act phase: the one writer of a sync's pods, revisions,
// records and events, through these seams only.
type actor struct {
	pods      podcontrol.Interface
	revisions *revision.Store
	// writer patches the object's records (its annotations).
	writer client.Writer
	// apiReader reads a write's outcome back when its reply was lost.
	apiReader client.Reader
	recorder  events.EventRecorder
	// inPlaceTimeout is how long an in-place update may take before its
	// pod is replaced.
	inPlaceTimeout time.Duration
}

// act carries out p in its order and decides nothing:
//  0. the claims (writeClaims: revisions adopted, the update revision
//     written, pods released and adopted), and a failure stops the sync;
//     then the plan's events;
//  1. recordFirst (with an abort's event), and a failure stops the sync
//     before any pod moves (a canary step recorded there has its event
//     once written);
//  2. record, in the background, beside
//  3. the pod writes (writePods: deletes, evictions, in-place starts, creates);
//  4. the in-place steps of pods already under way;
//  5. recordAfterPods, only once the pod writes succeeded (a size recorded
//     for pods that were not made would hide an unfinished scale);
//  6. the revisions to truncate.
//
// It returns what it did, and every error.
func (a actor) act(ctx context.Context, p *syncPlan) (*outcome, error) {
	out := &outcome{planned: true, collisionCount: p.claims.collisionCount, retryAfter: p.claims.retryAfter, mem: p.claims.mem}
	return out, a.carryOut(ctx, p, out)
}

// carryOut is act's phases, each recording in out what it did.
func (a actor) carryOut(ctx context.Context, p *syncPlan, out *outcome) error {
	if err := a.writeClaims(ctx, p, out); err != nil {
		return err
	}
	for _, e := range p.events {
		a.recorder.Eventf(p.md, e.related, e.eventType, e.reason, e.action, "%s", e.note)
	}
	var err error
	if len(p.recordFirst) > 0 {
		if out.md, err = a.setAnnotations(ctx, out.object(p.md), p.obj, p.recordFirst)(); err != nil {
			return err
		}
		if c := p.Canary; c != nil && c.NewStep {
			a.recorder.Eventf(p.md, out.revision(p, p.update.Name), corev1.EventTypeNormal, appsv1beta1.EventCanaryStep, "Rollout",
				"Canary of revision %q at %s", c.State.Revision, c.Message)
		}
		if p.abortRecorded {
			a.abortEvent(p, out)
		}
	}
	recorded := a.setAnnotations(ctx, out.object(p.md), p.obj, p.record)
	podErr := a.writePods(ctx, p, out)
	out.md, err = recorded()
	errs := []error{podErr, err, a.writeInPlaceSteps(ctx, p, out)}
	if podErr == nil && len(p.recordAfterPods) > 0 {
		out.md, err = a.setAnnotations(ctx, out.object(p.md), p.obj, p.recordAfterPods)()
		errs = append(errs, err)
	}
	return kerrors.NewAggregate(append(errs, a.truncateHistory(ctx, p.truncate)))
}

// setAnnotations sets want's annotations on md (the revision number, like
// deployment.kubernetes.io/revision, and what the pods are sized for) with
// one merge patch of those that differ (a value "" removes the annotation),
// in the background, and returns the wait for it, which returns md as the
// write left it: a copy with the annotations and resourceVersion written
// (md itself when nothing was to change: no request, no copy; or when the
// write failed). md is never modified: it is the observation's.
func (a actor) setAnnotations(ctx context.Context, md *appsv1beta1.MyDeployment, obj *object, want map[string]string) (wait func() (*appsv1beta1.MyDeployment, error)) {
	if !annotationsDiffer(md.Annotations, want) {
		return func() (*appsv1beta1.MyDeployment, error) { return md, nil } // most syncs
	}
	orig, patched := md.DeepCopy(), md.DeepCopy()
	for k, v := range want {
		if _, ok := md.Annotations[k]; v == "" && ok {
			delete(patched.Annotations, k) // "" removes (a stale abort record)
		} else if v != "" {
			if patched.Annotations == nil {
				patched.Annotations = map[string]string{}
			}
			patched.Annotations[k] = v
		}
	}
	done := make(chan error, 1)
	go func() { done <- a.writer.Patch(ctx, patched, client.MergeFrom(orig)) }()
	return func() (*appsv1beta1.MyDeployment, error) {
		if err := <-done; err != nil {
			return md, fmt.Errorf("setting annotations: %w", err)
		}
		wroteObject(obj, writeAnnotations, orig.ResourceVersion, patched)
		// md as the status write must see it: its spec and status as
		// observed, its annotations and resourceVersion as written.
		written := *md
		written.Annotations, written.ResourceVersion = patched.Annotations, patched.ResourceVersion
		return &written, nil
	}
}

// annotationsDiffer says setting want on have would change it: a value ""
// of a key have holds, or another value than have's.
func annotationsDiffer(have, want map[string]string) bool {
	for k, v := range want {
		if cur, ok := have[k]; v == "" && ok || v != "" && (!ok || cur != v) {
			return true
		}
	}
	return false
}

// truncateHistory deletes the revisions the plan names.
func (a actor) truncateHistory(ctx context.Context, revs []*appsv1.ControllerRevision) error {
	var errs []error
	for _, rev := range revs {
		if err := a.revisions.Delete(ctx, rev); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		logf.FromContext(ctx).Error(kerrors.NewAggregate(errs), "truncating revision history")
	}
	return kerrors.NewAggregate(errs)
}

// writePods carries out the plan's pod writes: deletions, evictions
// (evict.go), in-place starts, then creations in slow start (one in
// flight, then one more per success) so that a create refused for a
// systematic reason (quota, admission) costs one request, not one per
// missing pod. Every successful write is recorded as an expectation before
// the next sync may plan again.
func (a actor) writePods(ctx context.Context, p *syncPlan, out *outcome) error {
	if len(p.Create) > 0 {
		p.obj.Open(p.now) // a pod deleted as soon as created is observed too
	}
	var errs []error
	if n := len(p.Delete); n > 0 {
		deleted := parallel(n, func(i int) error {
			pod := p.Delete[i]
			err := a.pods.Delete(ctx, p.md, pod)
			if a.wrote(ctx, p, out, writeDelete, pod, nil, err) && err == nil {
				a.drainReplaced(p, out, pod)
			}
			return err
		}, func(err error) { errs = append(errs, err) })
		if len(errs) > 0 {
			out.failure = &status.Failure{Reason: appsv1beta1.ReasonFailedDelete, Message: errs[0].Error()}
		}
		if deleted > 0 {
			a.recorder.Eventf(p.md, nil, corev1.EventTypeNormal, EventScalingRevision, "Scale",
				"Deleted %d pod(s): %s", deleted, p.Reason)
		}
	}
	if err := a.evict(ctx, p, out); err != nil {
		errs = append(errs, err)
	}
	if err := a.beginInPlace(ctx, p, out); err != nil {
		errs = append(errs, err)
	}
	if err := a.createPods(ctx, p, out); err != nil {
		errs = append(errs, err)
	}
	return kerrors.NewAggregate(errs)
}

// createPods makes the plan's creations, revision by revision; the first
// refusal ends them (it is likely systematic: the next sync tries again)
// and is the status's failure.
func (a actor) createPods(ctx context.Context, p *syncPlan, out *outcome) error {
	for _, c := range p.Create {
		rev := out.revision(p, c.Revision)
		before := out.uncertain.Load()
		created, err := a.create(ctx, p, out, rev, c)
		// A create whose reply was lost counts as made: the status must
		// not claim a rollout complete beside a pod it may have created.
		made := int32(created) + out.uncertain.Load() - before
		out.created += made
		if rev != nil && rev.Name == p.update.Name {
			out.createdUpdated += made
		}
		if created > 0 {
			a.recorder.Eventf(p.md, rev, corev1.EventTypeNormal, EventScalingRevision, "Scale",
				"Created %d pod(s) of revision %q: %s", created, rev.Name, p.Reason)
		}
		if err != nil {
			out.failure = &status.Failure{Reason: appsv1beta1.ReasonFailedCreate, Message: err.Error()}
			return err
		}
	}
	return nil
}

// create makes c.Count pods of revision rev (c.Revision, nil if not
// found) in slow start, each expected before the next sync plans again; it
// returns how many it made.
func (a actor) create(ctx context.Context, p *syncPlan, out *outcome, rev *appsv1.ControllerRevision, c rollout.Creation) (int, error) {
	if rev == nil {
		return 0, fmt.Errorf("creating pods of revision %s: no such ControllerRevision", c.Revision)
	}
	// Decoded only to create: most syncs of a rollout create nothing.
	template, err := revision.Template(rev)
	if err != nil {
		return 0, fmt.Errorf("decoding revision %s: %w", rev.Name, err)
	}
	if p.inPlace {
		inplace.WithGate(&template.Spec) // readiness gates cannot be added later
	}
	var mu sync.Mutex
	var gated []*corev1.Pod
	created, err := slowStart(int(c.Count), func() error {
		pod, err := a.pods.Create(ctx, p.md, template, rev)
		if !a.wrote(ctx, p, out, writeCreate, pod, nil, err) {
			return err
		}
		if p.inPlace {
			mu.Lock()
			gated = append(gated, pod)
			mu.Unlock()
		}
		return nil
	})
	// Ready only once its gate is True: marked at once, not a sync later,
	// but after the creates, so they go at their own pace. A failure here
	// is mended by the next sync's in-place steps.
	parallel(len(gated), func(i int) error {
		return a.pods.SetGate(ctx, p.md, gated[i], corev1.ConditionTrue, inplace.ReasonReady, "")
	}, func(err error) {
		logf.FromContext(ctx).V(1).Info("marking a new pod's in-place gate", "error", err.Error())
	})
	return created, err
}

// slowStart calls fn count times, concurrently, with at most one call more
// in flight than have succeeded (1, then 2 after the first success, ...),
// and starts no call after one has failed. So a create refused for a
// systematic reason (quota, admission) costs at most successes+1 requests,
// as the ReplicaSet controller's batches of 1, 2, 4, ... do, but no call
// waits for the slowest of a batch: each success starts the next two. It
// returns how many calls succeeded and the errors of those that failed.
func slowStart(count int, fn func() error) (int, error) {
	var (
		mu   sync.Mutex
		done = sync.NewCond(&mu)
		wg   sync.WaitGroup
		ok   int
		errs []error
	)
	mu.Lock()
	for started := 0; started < count && len(errs) == 0; {
		if inFlight := started - ok - len(errs); inFlight > ok {
			done.Wait()
			continue
		}
		started++
		wg.Go(func() {
			err := fn()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			} else {
				ok++
			}
			done.Signal()
		})
	}
	mu.Unlock()
	wg.Wait()
	return ok, kerrors.NewAggregate(errs)
}

// parallel runs fn(0..n-1) concurrently, passes each error to onErr (called
// serially) and returns how many calls succeeded.
func parallel(n int, fn func(int) error, onErr func(error)) int {
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for i := range n {
		wg.Go(func() {
			err := fn(i)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				onErr(err)
				return
			}
			ok++
		})
	}
	wg.Wait()
	return ok
}
