package controller

import (
	"context"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/metrics"
	"github.com/mydeployment-io/mydeployment-operator/internal/shard"
)

// The MyDeployment controller's side of active-active shards (issue 56,
// docs/architecture.md): Reconcile asks the gate first (a replica syncs
// only the namespaces of the slots it holds); a slot given up forgets its
// objects' memory once their syncs are over; a slot taken starts as after
// a restart (its objects vetted: the previous holder's writes are nobody's
// expectations here) and its objects are synced at once (their syncs were
// refused until now).

// enterShard admits the sync of an object in namespace: ok false when this
// replica does not hold its slot (no shards: always admitted).
func (r *MyDeploymentReconciler) enterShard(namespace string) (leave func(), ok bool) {
	if r.Shards == nil {
		return func() {}, true
	}
	return r.Shards.Enter(namespace)
}

// ForgetSlots drops what the controller keeps of the MyDeployments in
// slots' namespaces (shard.Holder): their syncs are over and another
// replica is about to hold them.
func (r *MyDeploymentReconciler) ForgetSlots(slots shard.Slots) {
	for _, key := range r.objects.forgetNamespaces(slots.HasNamespace) {
		r.Metrics.Forget(key)
	}
}

// TakingSlots makes the MyDeployments of slots start as after a restart,
// before the gate admits their syncs (shard.Holder): what events
// noted of them while another replica held them is dropped, and each is
// marked for vetting. Not ready (none of slots) if the cache cannot list
// them: an object not marked would be synced from a cache that may lack
// the pods the previous holder made.
func (r *MyDeploymentReconciler) TakingSlots(ctx context.Context, slots shard.Slots) shard.Slots {
	r.objects.forgetNamespaces(slots.HasNamespace)
	mds, err := r.inSlots(ctx, slots)
	if err != nil {
		logf.FromContext(ctx).Error(err, "listing MyDeployments of the shard slots taken: next round", "slots", slots.String())
		return 0
	}
	now := r.Clock.Now()
	for _, md := range mds {
		r.objects.get(md).MarkVet(now)
	}
	return slots
}

// TookSlots syncs the MyDeployments of slots now admitted
// (shard.Holder). Before the controller started there is no queue:
// its initial list brings them.
func (r *MyDeploymentReconciler) TookSlots(ctx context.Context, slots shard.Slots) {
	q := r.shardQueue.Load()
	if q == nil {
		return
	}
	mds, err := r.inSlots(ctx, slots)
	if err != nil {
		logf.FromContext(ctx).Error(err, "listing MyDeployments of the shard slots taken", "slots", slots.String())
		return
	}
	for _, md := range mds {
		(*q).Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(md)})
	}
}

// shardSource hands the controller's queue to TookSlots.
func (r *MyDeploymentReconciler) shardSource() source.Source {
	return source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		r.shardQueue.Store(&q)
		return nil
	})
}

// inSlots are the cached MyDeployments of slots' namespaces.
func (r *MyDeploymentReconciler) inSlots(ctx context.Context, slots shard.Slots) ([]*appsv1beta1.MyDeployment, error) {
	var list appsv1beta1.MyDeploymentList
	if err := r.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	var out []*appsv1beta1.MyDeployment
	for i := range list.Items {
		if slots.HasNamespace(list.Items[i].Namespace) {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

// ShardCounts counts what this replica holds now, for the shard series
// (metrics.SetShardCounts): its slots, and the cached MyDeployments and
// pods of their namespaces.
func (r *MyDeploymentReconciler) ShardCounts(ctx context.Context) metrics.ShardCounts {
	if r.Shards == nil {
		return metrics.ShardCounts{}
	}
	held := r.Shards.Acting()
	mds, _ := r.inSlots(ctx, held) // a series of 0 for a scrape whose list failed
	c := metrics.ShardCounts{Slots: held.Len(), Objects: len(mds)}
	if pods, cached, err := r.PodIndex.Count(held.HasNamespace); err == nil {
		c.Pods, c.Cached = pods, cached
	}
	return c
}

// shardHolder is the controller as shard.Membership tells it of moves.
type shardHolder struct{ r *MyDeploymentReconciler }

func (h shardHolder) Forget(s shard.Slots) { h.r.ForgetSlots(s) }
func (h shardHolder) Taking(ctx context.Context, s shard.Slots) shard.Slots {
	return h.r.TakingSlots(ctx, s)
}
func (h shardHolder) Taken(ctx context.Context, s shard.Slots) { h.r.TookSlots(ctx, s) }
