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

// sync brings the revisions and pods of o's MyDeployment towards its
// spec, in three phases that each return a value the next takes: claim
// reads what the ownership claims need and decides them (claimed), decide
// plans every write from the observation and the claims alone (syncPlan),
// and act carries the plan out (outcome). It returns what each phase
// made, for the status, even on error: no claims when the claim failed
// (no status is written then), no plan when none was made (paused before
// the first revision).
func (r *MyDeploymentReconciler) sync(ctx context.Context, o *observation) (*claimed, *syncPlan, *outcome, error) {
	c, err := r.claim(ctx, o)
	if err != nil {
		return nil, nil, &outcome{unclaimed: true}, err
	}
	out := &outcome{collisionCount: c.collisionCount, retryAfter: c.retryAfter}
	if c.update == nil {
		return c, nil, out, nil // paused before its first revision: nothing to run yet
	}
	p, err := decide(o, c, &r.inPlace, r.inPlaceTimeout())
	if err != nil {
		return c, p, out, err
	}
	out.planned = true
	logPlan(ctx, p)
	return c, p, out, r.act(ctx, p, out)
}

// annotations are what md's annotations must say after this sync: the
// update revision's number (not while paused) and what the pods are
// sized for when the plan says it must be recorded, or with the revision
// number's write anyway. A size recorded for the pods this plan creates or
// deletes comes in afterPods: written once they are, or the next plan would
// not know the scale is unfinished. A size the plan must record first
// (RecordFirst) comes in now, which the caller then writes before any pod.
func annotations(md *appsv1beta1.MyDeployment, update *appsv1.ControllerRevision, p rollout.Plan) (now, afterPods map[string]string) {
	now = map[string]string{}
	if !md.Spec.Paused {
		now[appsv1beta1.RevisionAnnotation] = strconv.FormatInt(update.Revision, 10)
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
func (r *MyDeploymentReconciler) setAnnotations(ctx context.Context, md *appsv1beta1.MyDeployment, obj *object, want map[string]string) (wait func() error) {
	if !annotationsDiffer(md.Annotations, want) {
		return func() error { return nil } // most syncs: no copy of the object either
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
	go func() { done <- r.Patch(ctx, patched, client.MergeFrom(orig)) }()
	return func() error {
		if err := <-done; err != nil {
			return fmt.Errorf("setting annotations: %w", err)
		}
		obj.Wrote(orig.ResourceVersion, patched)
		md.Annotations = patched.Annotations
		md.ResourceVersion = patched.ResourceVersion
		return nil
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

func named(revs []*appsv1.ControllerRevision, name string) *appsv1.ControllerRevision {
	for _, r := range revs {
		if r.Name == name {
			return r
		}
	}
	return nil
}
