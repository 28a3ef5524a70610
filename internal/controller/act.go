package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/inplace"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/ownership"
	"github.com/mydeployment-io/mydeployment-operator/internal/podcontrol"
	"github.com/mydeployment-io/mydeployment-operator/internal/revision"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
	"github.com/mydeployment-io/mydeployment-operator/internal/status"
)

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
	modulesErr := a.writeModules(ctx, p, out)
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
	return kerrors.NewAggregate(append(errs, modulesErr, a.truncateHistory(ctx, p.truncate)))
}

// writeModules carries out the modules' own writes (optin.Write: a hook's
// Job), before any pod moves. Its names are the modules' (a hook's Job is
// named for its object, revision, point and retry), so a create whose
// reply was lost, or whose object the cache does not show yet, finds it
// taken on the next try and reads it back instead of making another. A
// failed write is the status's ReplicaFailure with the write's reason. One
// only the user can mend (a template missing or unusable, a name taken,
// a create the API server refuses) is no sync error, which would retry
// in a loop: the object is looked at again after moduleWriteRetry (no
// watch of ours sees a template created, or another's Job deleted). Any
// other error is the sync's, tried again with its backoff.
func (a actor) writeModules(ctx context.Context, p *syncPlan, out *outcome) error {
	var errs []error
	for _, w := range p.writes {
		err := a.writeModule(ctx, p.md, w)
		if err == nil {
			continue
		}
		out.failure = &status.Failure{Reason: w.Reason, Message: err.Error(), Current: true}
		if !errors.As(err, new(userFailure)) {
			errs = append(errs, err)
		} else if out.retryAfter <= 0 || out.retryAfter > moduleWriteRetry {
			out.retryAfter = moduleWriteRetry
		}
	}
	return kerrors.NewAggregate(errs)
}

// moduleWriteRetry is when an object whose module write the user must
// mend is looked at again.
const moduleWriteRetry = 30 * time.Second

// userFailure is a module write only the user can mend.
type userFailure struct{ error }

func (f userFailure) Unwrap() error { return f.error }

// userFailed is err as a userFailure when the API server refused the
// request itself (not found, invalid, forbidden), else err.
func userFailed(err error) error {
	if apierrors.IsNotFound(err) || apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
		return userFailure{err}
	}
	return err
}

// writeModule carries out w for md: a create (from w.From read around the
// cache, when set), or a delete.
func (a actor) writeModule(ctx context.Context, md *appsv1beta1.MyDeployment, w optin.Write) error {
	if w.Delete != nil {
		return client.IgnoreNotFound(a.writer.Delete(ctx, w.Delete, client.PropagationPolicy(metav1.DeletePropagationBackground)))
	}
	var from client.Object
	if w.From != nil {
		from = w.From.DeepCopyObject().(client.Object)
		if err := a.apiReader.Get(ctx, client.ObjectKeyFromObject(w.From), from); err != nil {
			return userFailed(fmt.Errorf("reading %s: %w", w.From.GetName(), err))
		}
	}
	obj, err := w.Create(from)
	if err != nil {
		return userFailure{err}
	}
	if err = a.writer.Create(ctx, obj); !apierrors.IsAlreadyExists(err) {
		return userFailed(err)
	}
	found := obj.DeepCopyObject().(client.Object)
	if err := a.apiReader.Get(ctx, client.ObjectKeyFromObject(obj), found); err != nil {
		return fmt.Errorf("reading %s back: %w", obj.GetName(), err)
	}
	if ref := metav1.GetControllerOfNoCopy(found); ref == nil || ref.UID != md.UID {
		return userFailure{fmt.Errorf("%s: name taken by an object the MyDeployment does not control", obj.GetName())}
	}
	return nil // made by an earlier sync
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
// (evict), in-place starts, then creations in slow start (one in
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
	if c.Pin != nil {
		rollout.PinTemplate(template, *c.Pin) // a wave's pods go to its domain only
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

// evict removes p.Evict through the Eviction API (respect-pdb), each
// success expected as a delete is, and sums them up in one event. A
// refusal by a budget is no failure: the sync is retried with backoff
// (out.retryAfter), with one event naming the budget per spell of refusals,
// and the time counts toward the progress deadline as any lack of
// progress does. Other errors are returned, and set ReplicaFailure as a
// refused delete does.
func (a actor) evict(ctx context.Context, p *syncPlan, out *outcome) error {
	if len(p.Evict) == 0 {
		if p.Reason == rollout.ReasonInSync || p.Reason == rollout.ReasonPartitionHeld || p.Reason == rollout.ReasonAborted {
			out.mem.evictionsEnd() // nothing left to replace: the spell is over
		}
		return nil
	}
	var (
		errs    []error
		refusal string
		refused int
	)
	evicted := parallel(len(p.Evict), func(i int) error {
		pod := p.Evict[i]
		err := a.pods.Evict(ctx, p.md, pod)
		if a.wrote(ctx, p, out, writeEvict, pod, nil, err) && err == nil {
			a.drainReplaced(p, out, pod)
		}
		return err
	}, func(err error) {
		if ok, msg := podcontrol.EvictionRefused(err); ok {
			refused++
			refusal = msg
			return
		}
		errs = append(errs, err)
	})
	if evicted > 0 {
		out.mem.evictionsEnd()
		a.recorder.Eventf(p.md, nil, corev1.EventTypeNormal, appsv1beta1.EventEvicted, "Evict",
			"Evicted %d pod(s): %s", evicted, p.Reason)
	}
	if refused > 0 {
		var first bool
		out.retryAfter, first = out.mem.evictionsRefused()
		if first {
			a.recorder.Eventf(p.md, nil, corev1.EventTypeWarning, appsv1beta1.EventEvictionRefused, "Evict",
				"Cannot evict %d pod(s), retrying with backoff: %s", refused, refusal)
		}
		logf.FromContext(ctx).V(1).Info("evictions refused by a disruption budget", "pods", refused, "budget", refusal,
			"retryAfter", out.retryAfter)
	}
	if len(errs) > 0 {
		out.failure = &status.Failure{Reason: appsv1beta1.ReasonFailedDelete, Message: errs[0].Error()}
	}
	return kerrors.NewAggregate(errs)
}

// writeClaims writes what the claims decided, the first phase of act:
// the orphan revisions adopted, the update revision created or
// renumbered, then the pods released and adopted. A failed revision write
// leaves out counting the pods against the revisions status names (as if
// nothing were claimed: out.revisionsFailed); a failed pod write leaves
// out unclaimed (no status is written from it: counted without the
// orphans it failed to adopt, it would say 0 replicas beside running
// pods). Either way act stops.
func (a actor) writeClaims(ctx context.Context, p *syncPlan, out *outcome) error {
	update, err := a.writeRevisions(ctx, p.md, p.claims, &out.collisionCount)
	if update != nil {
		out.update = update
	}
	if err != nil {
		out.revisionsFailed, out.planned = true, false
		return err
	}
	if err := a.writePodClaims(ctx, p, out); err != nil {
		out.unclaimed = true
		return err
	}
	return nil
}

// writeRevisions writes c's revisions (writeHistory) and returns the
// update revision as written (nil: none written). A name taken by another
// revision is recorded under a new collision count (*collisionCount), and
// the sync plans again: its plan names the revision as decided.
func (a actor) writeRevisions(ctx context.Context, md *appsv1beta1.MyDeployment, c *claimed,
	collisionCount *int32) (*appsv1.ControllerRevision, error) {
	update, err := a.writeHistory(ctx, md, c, collisionCount)
	if err == nil && update != nil && update.Name != c.revision.Update.Name {
		return update, fmt.Errorf("revision name %s taken: recorded as %s, planning again", c.revision.Update.Name, update.Name)
	}
	return update, err
}

// writeHistory adopts the orphan revisions of c, then writes the update
// revision (revision.Store.Apply) and returns it as written (nil: none
// written), under the next collision count (*collisionCount) if its name
// was taken by another revision.
func (a actor) writeHistory(ctx context.Context, md *appsv1beta1.MyDeployment, c *claimed,
	collisionCount *int32) (*appsv1.ControllerRevision, error) {
	owner := revision.Owner{Object: md, GVK: appsv1beta1.GroupVersion.WithKind("MyDeployment")}
	var errs []error
	for _, rev := range c.revisionClaims.Adopt {
		// Gone: nothing to adopt. Anything else (changed since the cache saw
		// it, a failed write) retries the sync: going on could record a
		// colliding revision under another name while the orphan, whose
		// pods carry its hash, waits to be adopted.
		if _, err := a.revisions.Adopt(ctx, owner, rev); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("adopting revisions: %w", kerrors.NewAggregate(errs))
	}
	d := c.revision
	if !d.Create && !d.Renumber {
		return nil, nil
	}
	update, err := a.revisions.Apply(ctx, d, collisionCount)
	if err != nil {
		return nil, fmt.Errorf("syncing revisions: %w", err)
	}
	a.recorder.Eventf(md, update, corev1.EventTypeNormal, EventNewRevision, "Rollout",
		"Revision %q is now revision %d", update.Name, update.Revision)
	return update, nil
}

// writePodClaims releases and adopts the pods the claims name. An
// adoption that met a conflict or a lost reply is read back
// (ownership.AdoptedAfterAll); one that did not end ours stops the sync.
// A stray whose release failed is noted again.
func (a actor) writePodClaims(ctx context.Context, p *syncPlan, out *outcome) error {
	var errs []error
	md, claims := p.md, p.claims.podClaims
	for _, pod := range claims.Release {
		if err := a.pods.Release(ctx, md, pod); err != nil {
			if !ownership.InCache(pod) {
				p.obj.NoteStray(pod.UID, ownership.Stray{Name: pod.Name, Owner: md.UID})
			}
			errs = append(errs, err)
		}
	}
	if len(claims.Adopt) == 0 {
		return kerrors.NewAggregate(errs)
	}
	logf.FromContext(ctx).V(1).Info("adopting orphans", "uid", md.UID, "pods", klog.KObjSlice(claims.Adopt))
	update := out.revision(p, p.update.Name)
	for _, pod := range claims.Adopt {
		_, err := a.pods.Adopt(ctx, md, pod, update)
		if apierrors.IsConflict(err) || outcomeUnknown(err) {
			// Changed since the cache saw it, maybe by our own earlier
			// adoption whose reply was lost.
			err = a.adoptedAfterAll(ctx, md, pod, err)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return kerrors.NewAggregate(errs)
}

// abortEvent records, once the abort record is written, that the rollout
// to the update revision is aborted: an event, and in out a count of aborts.
func (a actor) abortEvent(p *syncPlan, out *outcome) {
	out.abortRecorded = true
	if c := p.abortCause; c.Message != "" {
		a.recorder.Eventf(p.md, out.revision(p, p.update.Name), corev1.EventTypeWarning, c.Reason, "Rollout",
			"Rollout to revision %q aborted: %s; every pod goes back to revision %q",
			p.update.Name, c.Message, p.towards.Name)
		return
	}
	a.recorder.Eventf(p.md, out.revision(p, p.update.Name), corev1.EventTypeWarning, appsv1beta1.EventRolloutAborted, "Rollout",
		"Rollout to revision %q made no progress within progressDeadlineSeconds: aborted, every pod goes back to revision %q",
		p.update.Name, p.towards.Name)
}

// What a sync of a MyDeployment that opts into drain SurgeFirst adds to
// the controller's path (the drain module, internal/optin/drain, has the
// rest: the Node watch, the draining nodes for the planner, the status
// when Nodes are denied): act records DrainReplaced for each pod the plan
// drained once its removal succeeded, and the event of a denial.

// drainReplaced records the DrainReplaced event of pod, removed by this
// sync, and counts it in out, if the plan drained it.
func (a actor) drainReplaced(p *syncPlan, out *outcome, pod *corev1.Pod) {
	if slices.Contains(p.Drained, pod) {
		out.drainReplaced.Add(1)
		a.recorder.Eventf(p.md, pod, corev1.EventTypeNormal, appsv1beta1.EventDrainReplaced, "Drain",
			"Replaced pod %s on draining node %s", pod.Name, pod.Spec.NodeName)
	}
}

// Event reasons of the controller (pod writes have podcontrol's).
const (
	EventScalingRevision = "ScalingRevision"
	EventNewRevision     = "NewRevision"
)

// beginInPlace starts the in-place updates the plan chose: each pod's gate
// False, its one write in this sync, expected in the cache before the next
// plan. The pod keeps its labels (and spec) until its spec patch, a later
// step: from the gate on, the planner counts it as on its way to the
// update revision (rollout.Plan.MovingInPlace), so it is neither started
// again nor replaced as an old pod, and no surge pod is made for it.
func (a actor) beginInPlace(ctx context.Context, p *syncPlan, out *outcome) error {
	pods := p.UpdateInPlace
	if len(pods) == 0 {
		return nil
	}
	var errs []error
	gated := make([]bool, len(pods))
	started := parallel(len(pods), func(i int) error {
		pod := pods[i]
		// The gate first: the pod leaves Service endpoints before anything
		// else changes. Once it is False (or may be: a lost reply that
		// landed), the next plan must see the pod on its way, so it waits
		// for the cache to show it so.
		err := a.pods.SetGate(ctx, p.md, pod, corev1.ConditionFalse, inplace.ReasonUpdating,
			fmt.Sprintf("updating in place to revision %s", p.towards.Name))
		if !a.wrote(ctx, p, out, writeGateStart, pod, nil, err) {
			return err
		}
		gated[i] = true
		return err
	}, func(err error) { errs = append(errs, err) })
	for i, pod := range pods {
		if gated[i] {
			out.startedInPlace = append(out.startedInPlace, pod)
		}
	}
	if out.inPlaceStarted = started; started > 0 {
		a.recorder.Eventf(inSeries(p.md), revisionInSeries(p.towards), corev1.EventTypeNormal, appsv1beta1.EventInPlaceUpdate, "Rollout",
			"Updating pods in place to revision %q", p.towards.Name)
	}
	return kerrors.NewAggregate(errs)
}

// writeInPlaceSteps writes the steps rollout.Steps decided, all at once
// (thousands of pods can be on their way in one sync); each written step
// is recorded (StepWritten) until the cache shows it (rollout.InPlaceStep.Shown).
func (a actor) writeInPlaceSteps(ctx context.Context, p *syncPlan, out *outcome) error {
	var errs []error
	var mu sync.Mutex
	completed, failed := 0, 0
	parallel(len(p.steps), func(i int) error {
		ps := p.steps[i]
		var err error
		switch ps.Step {
		case inplace.StepMarkReady:
			err = a.pods.SetGate(ctx, p.md, ps.Pod, corev1.ConditionTrue, inplace.ReasonReady, "")
			if err == nil && ps.Ends {
				logf.FromContext(ctx).V(1).Info("in-place update ended where it stood", "pod", klog.KObj(ps.Pod), "revision", ps.Revision.Name)
			} else if err == nil && inplace.Condition(ps.Pod) != nil {
				mu.Lock()
				completed++
				mu.Unlock()
			}
		case inplace.StepPatch:
			err = a.pods.UpdateInPlace(ctx, p.md, ps.Pod, ps.Revision, ps.Target, ps.Change)
			if ps.FailIfRefused && podcontrol.Refused(err) { // the plan's contingency (rollout.InPlaceStep)
				ps.Step, ps.Why = inplace.StepFail, "the API server refused it: "+err.Error()
			}
		}
		if ps.Step != inplace.StepFail {
			a.wrote(ctx, p, out, writeStep, ps.Pod, ps.Shown(), err)
			return err
		}
		err = a.pods.SetGate(ctx, p.md, ps.Pod, corev1.ConditionFalse, inplace.ReasonFailed, ps.Why)
		if a.wrote(ctx, p, out, writeStep, ps.Pod, ps.Shown(), err); err != nil {
			return err
		}
		mu.Lock()
		failed++
		mu.Unlock()
		a.recorder.Eventf(p.md, ps.Pod, corev1.EventTypeWarning, appsv1beta1.EventInPlaceUpdateFailed, "Rollout",
			"Pod %s is replaced: its in-place update to revision %q failed: %s", ps.Pod.Name, ps.Revision.Name, ps.Why)
		logf.FromContext(ctx).Info("in-place update failed; replacing the pod", "pod", klog.KObj(ps.Pod), "why", ps.Why)
		return nil
	}, func(err error) { errs = append(errs, err) })
	out.inPlaceCompleted, out.inPlaceFallback = completed, failed
	return kerrors.NewAggregate(errs)
}

// inSeries refers to md without its resourceVersion, so that the events
// of one rollout's batches are one event series: events.k8s.io folds
// events of the same reason, regarding and related object into a series
// (one create, one patch, then counted in memory; a new event after 6
// minutes without one). With the resourceVersion, which every status
// write changes, each batch was an event of its own: 10 writes or more an
// object in an in-place rollout of 50 pods (issue 31). How many pods each
// batch started is in mydeployment_in_place_updates_total. The UID stays:
// kubectl describe finds an object's events by it.
func inSeries(md *appsv1beta1.MyDeployment) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: appsv1beta1.GroupVersion.String(), Kind: "MyDeployment",
		Namespace: md.Namespace, Name: md.Name, UID: md.UID}
}

// revisionInSeries refers to rev by name only, for the same reason: the
// revision a sync has just created has no UID in memory yet, the next
// sync's copy from the cache has.
func revisionInSeries(rev *appsv1.ControllerRevision) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: "apps/v1", Kind: "ControllerRevision", Namespace: rev.Namespace, Name: rev.Name}
}

// object is md as out's annotation writes left it: out.md, or md when
// they wrote none.
func (out *outcome) object(md *appsv1beta1.MyDeployment) *appsv1beta1.MyDeployment {
	if out != nil && out.md != nil {
		return out.md
	}
	return md
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

// asWritten is rev as this sync wrote it: the revision a hand-over's plan
// named, as its create named it (out.written), or the update revision as
// written (out.update, by name); rev otherwise, nil for nil.
func (out *outcome) asWritten(rev *appsv1.ControllerRevision) *appsv1.ControllerRevision {
	if w := out.written[rev]; w != nil {
		return w
	}
	if rev != nil && out.update != nil && rev.Name == out.update.Name {
		return out.update
	}
	return rev
}
