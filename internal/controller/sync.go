package controller

import (
	"context"
	"fmt"
	"maps"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
)

// Event reasons of the controller (pod writes have podcontrol's).
const (
	EventScalingRevision = "ScalingRevision"
	EventNewRevision     = "NewRevision"
)

// sync brings the revisions and pods towards the spec: it claims what s's
// MyDeployment owns (claim: revisions, then pods), decides every write in
// one plan (decide), and acts on it (act). It records what it did in s (update revision,
// plan, failure) for the status, even on error.
func (r *MyDeploymentReconciler) sync(ctx context.Context, s *scope) (err error) {
	if err := r.claim(ctx, s); err != nil {
		s.unclaimed = true
		return err
	}
	if s.update == nil {
		return nil // paused before its first revision: nothing to run yet
	}
	// What the freshness record says of the claimed pods, read before the
	// plan (which reads the record only through s).
	s.stepsPending = stepsPending(s.obj, s.pods, s.now)
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

// setAnnotations sets want's annotations on md (the revision number, like
// deployment.kubernetes.io/revision, and what the pods are sized for) with
// one merge patch of those that differ (a value "" removes the annotation),
// in the background, and returns the
// wait for it; md must not be written until that wait returns (which then
// updates md's annotations and resourceVersion). Nothing to change: no request.
func (r *MyDeploymentReconciler) setAnnotations(ctx context.Context, s *scope, want map[string]string) (wait func() error) {
	md := s.md
	orig, patched := md.DeepCopy(), md.DeepCopy()
	changed := false
	for k, v := range want {
		if cur, ok := md.Annotations[k]; v == "" && ok {
			delete(patched.Annotations, k) // "" removes (a stale abort record)
			changed = true
		} else if v != "" && (!ok || cur != v) {
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
