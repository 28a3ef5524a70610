package controller

import (
	"context"
	"fmt"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/inplace"
	"github.com/mydeployment-io/mydeployment-operator/internal/revision"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
	"github.com/mydeployment-io/mydeployment-operator/internal/status"
)

// act carries out s.plan in its order and decides nothing:
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
// It returns every error; what it did is in s (created, failure, retryAfter).
func (r *MyDeploymentReconciler) act(ctx context.Context, s *scope) error {
	p := s.plan
	if err := r.writeClaims(ctx, s); err != nil {
		return err
	}
	for _, e := range p.events {
		r.Recorder.Eventf(s.md, e.related, e.eventType, e.reason, e.action, "%s", e.note)
	}
	if len(p.recordFirst) > 0 {
		if err := r.setAnnotations(ctx, s, p.recordFirst)(); err != nil {
			return err
		}
		if c := p.Canary; c != nil && c.NewStep {
			r.Recorder.Eventf(s.md, s.update, corev1.EventTypeNormal, appsv1beta1.EventCanaryStep, "Rollout",
				"Canary of revision %q at %s", c.State.Revision, c.Message)
		}
		if p.abortRecorded {
			r.abortEvent(s)
		}
	}
	recorded := r.setAnnotations(ctx, s, p.record)
	podErr := r.writePods(ctx, s)
	errs := []error{podErr, recorded(), r.writeInPlaceSteps(ctx, s, p.steps)}
	if podErr == nil && len(p.recordAfterPods) > 0 {
		errs = append(errs, r.setAnnotations(ctx, s, p.recordAfterPods)())
	}
	return kerrors.NewAggregate(append(errs, r.truncateHistory(ctx, p.truncate)))
}

// truncateHistory deletes the revisions the plan names.
func (r *MyDeploymentReconciler) truncateHistory(ctx context.Context, revs []*appsv1.ControllerRevision) error {
	var errs []error
	for _, rev := range revs {
		if err := r.Revisions.Delete(ctx, rev); err != nil {
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
func (r *MyDeploymentReconciler) writePods(ctx context.Context, s *scope) error {
	if len(s.plan.Create) > 0 {
		s.obj.Open(s.now) // a pod deleted as soon as created is observed too
	}
	var errs []error
	if n := len(s.plan.Delete); n > 0 {
		deleted := parallel(n, func(i int) error {
			pod := s.plan.Delete[i]
			err := r.Pods.Delete(ctx, s.md, pod)
			if r.wrote(ctx, s, writeDelete, pod, nil, err) && err == nil {
				r.drainReplaced(s, pod)
			}
			return err
		}, func(err error) { errs = append(errs, err) })
		if len(errs) > 0 {
			s.failure = &status.Failure{Reason: appsv1beta1.ReasonFailedDelete, Message: errs[0].Error()}
		}
		if deleted > 0 {
			r.Recorder.Eventf(s.md, nil, corev1.EventTypeNormal, EventScalingRevision, "Scale",
				"Deleted %d pod(s): %s", deleted, s.plan.Reason)
		}
	}
	if err := r.evict(ctx, s); err != nil {
		errs = append(errs, err)
	}
	if err := r.beginInPlace(ctx, s); err != nil {
		errs = append(errs, err)
	}
	for _, c := range s.plan.Create {
		rev := named(s.revisions, c.Revision)
		if rev == nil && c.Revision == s.update.Name {
			rev = s.update
		}
		before := s.uncertain.Load()
		created, err := r.create(ctx, s, rev, c)
		// A create whose reply was lost counts as made: the status must
		// not claim a rollout complete beside a pod it may have created.
		made := int32(created) + s.uncertain.Load() - before
		s.created += made
		if rev != nil && s.update != nil && rev.Name == s.update.Name {
			s.createdUpdated += made
		}
		if created > 0 {
			r.Recorder.Eventf(s.md, rev, corev1.EventTypeNormal, EventScalingRevision, "Scale",
				"Created %d pod(s) of revision %q: %s", created, rev.Name, s.plan.Reason)
		}
		if err != nil {
			errs = append(errs, err)
			s.failure = &status.Failure{Reason: appsv1beta1.ReasonFailedCreate, Message: err.Error()}
			break // a refusal is likely systematic: the next sync tries again
		}
	}
	return kerrors.NewAggregate(errs)
}

// create makes c.Count pods of revision rev (c.Revision, nil if not
// found) in slow start, each expected before the next sync plans again; it
// returns how many it made.
func (r *MyDeploymentReconciler) create(ctx context.Context, s *scope, rev *appsv1.ControllerRevision, c rollout.Creation) (int, error) {
	if rev == nil {
		return 0, fmt.Errorf("creating pods of revision %s: no such ControllerRevision", c.Revision)
	}
	// Decoded only to create: most syncs of a rollout create nothing.
	template, err := revision.Template(rev)
	if err != nil {
		return 0, fmt.Errorf("decoding revision %s: %w", rev.Name, err)
	}
	if s.optIn.InPlace {
		inplace.WithGate(&template.Spec) // readiness gates cannot be added later
	}
	var mu sync.Mutex
	var gated []*corev1.Pod
	created, err := slowStart(int(c.Count), func() error {
		pod, err := r.Pods.Create(ctx, s.md, template, rev)
		if !r.wrote(ctx, s, writeCreate, pod, nil, err) {
			return err
		}
		if s.optIn.InPlace {
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
		return r.Pods.SetGate(ctx, s.md, gated[i], corev1.ConditionTrue, inplace.ReasonReady, "")
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
