package application

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/shard"
)

// shardHolder is the Application controller as shard.Membership tells it
// of moves (issue 56): it keeps no memory of an Application between syncs,
// so it only syncs the Applications of a slot taken, whose syncs were
// refused while another replica held it.
type shardHolder struct{ r *Reconciler }

func (shardHolder) Forget(shard.Slots) {}

// Taking: ready at once, nothing to prepare.
func (shardHolder) Taking(_ context.Context, s shard.Slots) shard.Slots { return s }

// Taken puts the cached Applications of slots' namespaces on the queue.
// Before the controller started there is no queue: its initial list
// brings them.
func (h shardHolder) Taken(ctx context.Context, slots shard.Slots) {
	q := h.r.shardQueue.Load()
	if q == nil {
		return
	}
	var apps appsv1beta1.ApplicationList
	if err := h.r.List(ctx, &apps, client.UnsafeDisableDeepCopy); err != nil {
		logf.FromContext(ctx).Error(err, "listing Applications of the shard slots taken", "slots", slots.String())
		return
	}
	for i := range apps.Items {
		if slots.HasNamespace(apps.Items[i].Namespace) {
			(*q).Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&apps.Items[i])})
		}
	}
}
