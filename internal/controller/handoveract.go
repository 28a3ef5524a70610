package controller

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
)

// actHandOver carries out a hand-over's plan in its order and decides
// nothing (handover.Plan says why the order makes a stopped sync
// resumable):
//  1. the ReplicaSets' revisions created, then the orphan revisions
//     adopted and the update revision written (writeHistory); a name
//     found taken is created under the next collision count, and what
//     names it follows (out.written);
//  2. the record, naming each revision as written;
//  3. the pods adopted into the revisions the record names;
//  4. or both annotations removed, then the HandedOver event.
//
// A failed step stops it (the adoptions are all tried, in parallel). It
// returns what it did, and the error.
func (a actor) actHandOver(ctx context.Context, p *handOverPlan) (*outcome, error) {
	c := p.claims
	out := &outcome{collisionCount: c.collisionCount, retryAfter: p.retryAfter, mem: c.mem,
		handOver: handOverState{wait: p.Wait, failure: p.Failure}}
	if err := a.writeHandOverRevisions(ctx, p, out); err != nil {
		return out, err
	}
	if p.Record != nil {
		if err := a.writeRecord(ctx, p, out); err != nil {
			return out, err
		}
	}
	switch {
	case len(p.Adopt) > 0:
		return out, a.adoptHandedOver(ctx, p, out)
	case p.Finish:
		return out, a.finishHandOver(ctx, p, out)
	}
	return out, nil
}

// writeHandOverRevisions creates the ReplicaSets' revisions, then writes
// the claims' revisions (writeHistory) unless no update revision is
// decided (held before the first), keeping in out each as written.
func (a actor) writeHandOverRevisions(ctx context.Context, p *handOverPlan, out *outcome) error {
	for _, n := range p.Revisions {
		rev, err := a.revisions.Create(ctx, n.Revision, &out.collisionCount)
		if err != nil {
			return fmt.Errorf("recording ReplicaSet %s: %w", n.ReplicaSet, err)
		}
		out.wrote(n.Revision, rev)
	}
	c := p.claims
	if c.update == nil {
		return nil
	}
	update, err := a.writeHistory(ctx, p.md, c, &out.collisionCount)
	if update != nil {
		out.update = update
		out.wrote(c.update, update)
	}
	return err
}

// writeRecord writes the plan's record (AdoptRevisionsAnnotation), each
// revision named as written.
func (a actor) writeRecord(ctx context.Context, p *handOverPlan, out *outcome) error {
	record := make(map[string]string, len(p.Record))
	for hash, t := range p.Record {
		record[hash] = t.Name
		if t.Revision != nil {
			record[hash] = out.asWritten(t.Revision).Name
		}
	}
	md, err := a.setAnnotations(ctx, out.object(p.md), p.obj,
		map[string]string{appsv1beta1.AdoptRevisionsAnnotation: optin.FormatAdoptRevisions(record)})()
	if err != nil {
		return err
	}
	out.md = md
	return nil
}

// adoptHandedOver adopts the plan's pods into the revisions the record
// names, relabelled as those revisions' pods (the object was re-read
// around the cache first: handOver). A pod that changed meanwhile is left
// for the next sync, which lists the pods again.
func (a actor) adoptHandedOver(ctx context.Context, p *handOverPlan, out *outcome) error {
	var errs []error
	adopted := parallel(len(p.Adopt), func(i int) error {
		pod, name := p.Adopt[i].Pod, p.Adopt[i].Revision
		rev := out.asWritten(named(p.claims.revisions, name))
		if rev == nil {
			return fmt.Errorf("pod %s: its revision %s is gone", pod.Name, name)
		}
		_, err := a.pods.Adopt(ctx, p.md, pod, rev)
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil // changed or gone since listed: the next sync looks again
		}
		return err
	}, func(err error) { errs = append(errs, err) })
	logf.FromContext(ctx).V(1).Info("adopted handed-over pods", "deployment", klog.KRef(p.md.Namespace, p.From),
		"adopted", adopted, "of", len(p.Adopt))
	return kerrors.NewAggregate(errs)
}

// finishHandOver removes the hand-over's annotations and says so: the
// cache lists every pod taken over, so the next sync plans from it.
func (a actor) finishHandOver(ctx context.Context, p *handOverPlan, out *outcome) error {
	md, err := a.setAnnotations(ctx, out.object(p.md), p.obj, map[string]string{appsv1beta1.AdoptFromAnnotation: "",
		appsv1beta1.AdoptRevisionsAnnotation: ""})()
	if err != nil {
		return err
	}
	out.md = md
	a.recorder.Eventf(p.md, nil, corev1.EventTypeNormal, appsv1beta1.EventHandedOver, "HandOver",
		"Took over %d pods of Deployment %s, none restarted", p.Owned, p.From)
	return nil
}

// wrote notes that the revision planned was written as written.
func (out *outcome) wrote(planned, written *appsv1.ControllerRevision) {
	if out.written == nil {
		out.written = map[*appsv1.ControllerRevision]*appsv1.ControllerRevision{}
	}
	out.written[planned] = written
}
