package application

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/mydeployment-io/mydeployment-operator/internal/shard"
)

// TestReconcileAsksTheShardGateFirst: with shards, an Application of a
// namespace whose slot this replica does not hold is not synced at all:
// Reconcile returns before any read (the reconciler here has no client, so
// a read would panic) and asks for no retry; the holder syncs it.
func TestReconcileAsksTheShardGateFirst(t *testing.T) {
	r := &Reconciler{Shards: shard.NewGate(clock.RealClock{}, time.Minute)} // holds no slot
	res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "team-a", Name: "web"}})
	if err != nil || !res.IsZero() {
		t.Fatalf("a namespace of a slot not held: %+v, %v; want nothing", res, err)
	}
}
