package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"

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
	"github.com/mydeployment-io/mydeployment-operator/internal/podcontrol"
	"github.com/mydeployment-io/mydeployment-operator/internal/revision"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
)

// Event reasons of the controller (pod writes have podcontrol's).
const (
	EventScalingRevision = "ScalingRevision"
	EventNewRevision     = "NewRevision"
)

// sync brings the revisions and pods towards the spec: it claims what s's
// MyDeployment owns (revisions, then pods), decides every write in one
// plan, and acts on it. It records what it did in s (update revision,
// plan, failure) for the status, even on error.
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
	if s.plan, err = r.decide(ctx, s); err != nil {
		return err
	}
	s.planned = true
	logPlan(ctx, s)
	return r.act(ctx, s)
}

// annotations are what the object's annotations must say after this sync:
// the update revision's number (not while paused) and what the pods are
// sized for when the plan says it must be recorded, or with the revision
// number's write anyway. A size recorded for the pods this plan creates or
// deletes comes in afterPods: written once they are, or the next plan would
// not know the scale is unfinished. A size the plan must record first
// (RecordFirst) comes in now, which the caller then writes before any pod.
func (s *scope) annotations(p rollout.Plan) (now, afterPods map[string]string) {
	md := s.md
	now = map[string]string{}
	if !md.Spec.Paused {
		now[appsv1beta1.RevisionAnnotation] = strconv.FormatInt(s.update.Revision, 10)
	}
	if recorded := rollout.SizedForOf(md); recorded != nil && *recorded == p.SizedFor {
		return now, nil
	}
	switch {
	case p.RecordFirst:
		maps.Copy(now, p.SizedFor.Annotations())
	case p.RecordSize && (len(p.Create) > 0 || p.Removes() > 0):
		afterPods = p.SizedFor.Annotations()
	case p.RecordSize || md.Annotations[appsv1beta1.RevisionAnnotation] != now[appsv1beta1.RevisionAnnotation]:
		maps.Copy(now, p.SizedFor.Annotations())
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
