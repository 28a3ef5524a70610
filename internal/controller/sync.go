package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/inplace"
	"github.com/mydeployment-io/mydeployment-operator/internal/podcontrol"
	"github.com/mydeployment-io/mydeployment-operator/internal/revision"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
	"github.com/mydeployment-io/mydeployment-operator/internal/status"
)

// Event reasons of the controller (pod writes have podcontrol's).
const (
	EventScalingRevision = "ScalingRevision"
	EventNewRevision     = "NewRevision"
)

// sync brings the revisions and pods towards the spec. It records what it
// did in s (update revision, plan, failure) for the status, even on error.
func (r *MyDeploymentReconciler) sync(ctx context.Context, s *scope) (err error) {
	if err := r.syncRevisions(ctx, s); err != nil {
		// Status goes on counting the pods against the last revisions it named.
		s.current, s.update = named(s.revisions, s.md.Status.CurrentRevision), named(s.revisions, s.md.Status.UpdateRevision)
		return err
	}
	if s.update == nil {
		return nil // paused before its first revision: nothing to run yet
	}
	if err := r.claimPods(ctx, s); err != nil {
		s.unclaimed = true
		return err
	}
	current := s.update.Name
	if s.current != nil {
		current = s.current.Name
	}
	in, err := rollout.NewInput(s.md, current, s.update.Name, s.revisions, s.pods, s.now)
	if err != nil {
		return fmt.Errorf("planning: %w", err)
	}
	if s.optIn.InPlace {
		in.InPlace = r.inPlaceRevisions(ctx, s)
	}
	s.plan = rollout.Compute(in)
	s.planned = true
	logPlan(ctx, s, in.InPlace)
	// The annotations do not gate the pods: write them while the pods are
	// created, one round trip less per new revision. Only a size that
	// records pods this plan creates or deletes waits for them.
	now, afterPods := s.annotations()
	if s.plan.RecordFirst {
		// The pods must not move before the record says what they are
		// sized for (rollout.Plan.RecordFirst): written first, and a
		// failure stops the sync before any pod write.
		if err := r.setAnnotations(ctx, s, now)(); err != nil {
			return err
		}
		now = nil
	}
	annotated := r.setAnnotations(ctx, s, now)
	actErr := r.act(ctx, s)
	errs := []error{actErr, annotated(), r.advanceInPlace(ctx, s)}
	if actErr == nil && len(afterPods) > 0 {
		errs = append(errs, r.setAnnotations(ctx, s, afterPods)())
	}
	return kerrors.NewAggregate(append(errs, r.truncateHistory(ctx, s)))
}

// annotations are what the object's annotations must say after this sync:
// the update revision's number (not while paused) and what the pods are
// sized for when the plan says it must be recorded, or with the revision
// number's write anyway. A size recorded for the pods this plan creates or
// deletes comes in afterPods: written once they are, or the next plan would
// not know the scale is unfinished. A size the plan must record first
// (RecordFirst) comes in now, which the caller then writes before any pod.
func (s *scope) annotations() (now, afterPods map[string]string) {
	md := s.md
	now = map[string]string{}
	if !md.Spec.Paused {
		now[appsv1beta1.RevisionAnnotation] = strconv.FormatInt(s.update.Revision, 10)
	}
	if recorded := rollout.SizedForOf(md); recorded != nil && *recorded == s.plan.SizedFor {
		return now, nil
	}
	switch {
	case s.plan.RecordFirst:
		maps.Copy(now, s.plan.SizedFor.Annotations())
	case s.plan.RecordSize && (len(s.plan.Create) > 0 || s.plan.Removes() > 0):
		afterPods = s.plan.SizedFor.Annotations()
	case s.plan.RecordSize || md.Annotations[appsv1beta1.RevisionAnnotation] != now[appsv1beta1.RevisionAnnotation]:
		maps.Copy(now, s.plan.SizedFor.Annotations())
	}
	return now, afterPods
}

// syncRevisions finds or records the update revision (paused: keeps the
// one in status, so a template change does not roll) and the current one,
// and keeps the revision number on the object up to date.
func (r *MyDeploymentReconciler) syncRevisions(ctx context.Context, s *scope) error {
	md := s.md
	if err := r.claimRevisions(ctx, s); err != nil {
		return fmt.Errorf("adopting revisions: %w", err)
	}
	s.collisionCount = ptr.Deref(md.Status.CollisionCount, 0)
	if md.Spec.Paused {
		s.update = named(s.revisions, md.Status.UpdateRevision)
		if s.current = named(s.revisions, md.Status.CurrentRevision); s.current == nil {
			s.current = s.update
		}
		return nil
	}
	data, err := s.obj.revisionDataOf(md)
	if err != nil {
		return fmt.Errorf("syncing revisions: %w", err)
	}
	owner := revision.Owner{
		Object:   md,
		GVK:      appsv1beta1.GroupVersion.WithKind("MyDeployment"),
		Selector: md.Spec.Selector,
		Template: &md.Spec.Template,
		Data:     data,
	}
	if cause, ok := md.Annotations[appsv1beta1.ChangeCauseAnnotation]; ok {
		owner.Annotations = map[string]string{appsv1beta1.ChangeCauseAnnotation: cause}
	}
	before := s.revisions
	current, update, cc, err := r.Revisions.Sync(ctx, owner, s.revisions, md.Status.CurrentRevision, s.collisionCount)
	s.collisionCount = cc
	if err != nil {
		return fmt.Errorf("syncing revisions: %w", err)
	}
	s.current, s.update = current, update
	if prev := named(before, update.Name); prev == nil || prev.Revision != update.Revision {
		s.newRevision = true
		s.revisions = append(slices.DeleteFunc(slices.Clone(before), func(r *appsv1.ControllerRevision) bool {
			return r.Name == update.Name
		}), update)
		r.Recorder.Eventf(md, update, corev1.EventTypeNormal, EventNewRevision, "Rollout",
			"Revision %q is now revision %d", update.Name, update.Revision)
	}
	return nil
}

// setAnnotations sets want's annotations on md (the revision number, like
// deployment.kubernetes.io/revision, and what the pods are sized for) with
// one merge patch of those that differ, in the background, and returns the
// wait for it; md must not be written until that wait returns (which then
// updates md's annotations and resourceVersion). Nothing to change: no request.
func (r *MyDeploymentReconciler) setAnnotations(ctx context.Context, s *scope, want map[string]string) (wait func() error) {
	md := s.md
	orig, patched := md.DeepCopy(), md.DeepCopy()
	changed := false
	for k, v := range want {
		if cur, ok := md.Annotations[k]; !ok || cur != v {
			if patched.Annotations == nil {
				patched.Annotations = map[string]string{}
			}
			patched.Annotations[k] = v
			changed = true
		}
	}
	if !changed {
		return func() error { return nil }
	}
	done := make(chan error, 1)
	go func() { done <- r.Patch(ctx, patched, client.MergeFrom(orig)) }()
	return func() error {
		if err := <-done; err != nil {
			return fmt.Errorf("setting annotations: %w", err)
		}
		s.obj.Wrote(orig.ResourceVersion, patched)
		md.Annotations = patched.Annotations
		md.ResourceVersion = patched.ResourceVersion
		return nil
	}
}

func named(revs []*appsv1.ControllerRevision, name string) *appsv1.ControllerRevision {
	for _, r := range revs {
		if r.Name == name {
			return r
		}
	}
	return nil
}

// claimPods releases owned pods the selector no longer matches (those in
// the cache, and strays that left it: see strays) and adopts orphans that
// match both the selector and the update revision's template (its hash
// label), as a ReplicaSet's ControllerRefManager does. An adopted pod is
// relabelled with the update revision's name in the same write: it runs
// that template whatever revision (maybe a deleted owner's) its label named.
//
// It works on the pods readPods read (orphans, then ours) and reads the
// strays after them: a pod that leaves the cache is noted as a stray
// before the cache drops it (leaveWatcher), so one that left after the
// cache was read is a stray now; read the other way round, it could be in
// neither, and be replaced while still ours (chaos suite: label surgery).
func (r *MyDeploymentReconciler) claimPods(ctx context.Context, s *scope) error {
	candidates, owned := s.orphans, s.pods
	notOurs, err := r.releaseStrays(ctx, s)
	errs := []error{err}
	kept := make([]*corev1.Pod, 0, len(owned))
	for _, pod := range owned {
		if notOurs[pod.UID] {
			continue
		}
		if s.selector.Matches(labels.Set(pod.Labels)) {
			kept = append(kept, pod)
			continue
		}
		if err := r.Pods.Release(ctx, s.md, pod); err != nil {
			errs = append(errs, err)
		}
	}
	s.pods = kept

	// A pod adopted between the two reads is in both; its orphan copy is
	// stale. Most syncs have no orphan to check.
	var ours map[types.UID]bool
	if len(candidates) > 0 {
		ours = make(map[types.UID]bool, len(owned))
		for _, pod := range owned {
			ours[pod.UID] = true
		}
	}
	hash := s.update.Labels[revision.HashLabel]
	var orphans []*corev1.Pod
	for _, pod := range candidates {
		if !ours[pod.UID] && podcontrol.ControllerOf(pod) == nil && pod.DeletionTimestamp == nil &&
			pod.Labels[appsv1beta1.PodTemplateHashLabel] == hash && s.selector.Matches(labels.Set(pod.Labels)) &&
			s.selector.Matches(relabelled(pod.Labels, s.update.Name)) {
			orphans = append(orphans, pod)
		}
	}
	if len(orphans) > 0 {
		// Adopt only for the object as it is now, not a deleted namesake.
		if ok, err := r.mayAdopt(ctx, s.md); !ok {
			return kerrors.NewAggregate(append(errs, err))
		}
		logf.FromContext(ctx).V(1).Info("adopting orphans", "uid", s.md.UID, "pods", klog.KObjSlice(orphans))
		for _, pod := range orphans {
			adopted, err := r.Pods.Adopt(ctx, s.md, pod, s.update)
			if apierrors.IsConflict(err) || outcomeUnknown(err) {
				// Changed since the cache saw it, maybe by our own earlier
				// adoption whose reply was lost: planning without a pod
				// that is ours would create its replacement.
				adopted, err = r.adoptedAfterAll(ctx, s, pod, err)
			}
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				errs = append(errs, err)
			case adopted != nil:
				s.pods = append(s.pods, adopted)
			}
		}
	}
	return kerrors.NewAggregate(errs)
}

// relabelled is labels with the revision label set to name, as adoption
// writes them (a selector on that label would otherwise release the pod
// it just adopted).
func relabelled(podLabels map[string]string, name string) labels.Set {
	out := make(labels.Set, len(podLabels))
	for k, v := range podLabels {
		out[k] = v
	}
	out[appsv1beta1.RevisionLabel] = name
	return out
}

// act carries out the plan: deletions, evictions (evict.go), then
// creations in slow start (one
// in flight, then one more per success) so that a create refused for a
// systematic reason (quota, admission) costs one request, not one per
// missing pod. Every successful write is recorded as an expectation before
// the next sync may plan again.
func (r *MyDeploymentReconciler) act(ctx context.Context, s *scope) error {
	if len(s.plan.Create) > 0 {
		s.obj.Open(s.now) // a pod deleted as soon as created is observed too
	}
	var errs []error
	if n := len(s.plan.Delete); n > 0 {
		deleted := parallel(n, func(i int) error {
			pod := s.plan.Delete[i]
			if err := r.Pods.Delete(ctx, s.md, pod); err != nil {
				if outcomeUnknown(err) && r.deletedAfterAll(ctx, pod) {
					s.obj.ExpectDelete(pod.Name, s.now)
				}
				return err
			}
			s.obj.ExpectDelete(pod.Name, s.now)
			return nil
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
		if err != nil {
			if outcomeUnknown(err) {
				r.expectUnlistedPods(ctx, s)
				s.uncertain.Add(1)
			}
			return err
		}
		s.obj.ExpectCreate(pod.Name, s.now)
		if s.optIn.InPlace {
			mu.Lock()
			gated = append(gated, pod)
			mu.Unlock()
		}
		return nil
	})
	// Ready only once its gate is True: marked at once, not a sync later,
	// but after the creates, so they go at their own pace. A failure here
	// is mended by advanceInPlace.
	parallel(len(gated), func(i int) error {
		return r.Pods.SetGate(ctx, s.md, gated[i], corev1.ConditionTrue, inplace.ReasonReady, "")
	}, func(err error) {
		logf.FromContext(ctx).V(1).Info("marking a new pod's in-place gate", "error", err.Error())
	})
	return created, err
}

// truncateHistory deletes revisions beyond revisionHistoryLimit, never the
// current, the update, or one a live pod still runs.
func (r *MyDeploymentReconciler) truncateHistory(ctx context.Context, s *scope) error {
	podRevisions := make([]string, 0, len(s.pods))
	for _, pod := range s.pods {
		podRevisions = append(podRevisions, pod.Labels[appsv1beta1.RevisionLabel])
	}
	live := revision.Live(s.current, s.update, podRevisions...)
	var errs []error
	for _, rev := range revision.TruncateCandidates(s.revisions, live, ptr.Deref(s.md.Spec.RevisionHistoryLimit, 10)) {
		if err := r.Revisions.Delete(ctx, rev); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		logf.FromContext(ctx).Error(kerrors.NewAggregate(errs), "truncating revision history")
	}
	return kerrors.NewAggregate(errs)
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
