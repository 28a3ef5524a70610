package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/podcontrol"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
	"github.com/mydeployment-io/mydeployment-operator/internal/status"
)

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
