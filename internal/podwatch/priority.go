package podwatch

import (
	"context"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// SpecChanged(true) passes what must be synced first: creates, deletes and
// updates that change the generation; SpecChanged(false) passes the other
// updates (status, metadata).
func SpecChanged(changed bool) predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return changed },
		DeleteFunc:  func(event.DeleteEvent) bool { return changed },
		GenericFunc: func(event.GenericEvent) bool { return changed },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return (e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration()) == changed
		},
	}
}

// LowPriority enqueues h's requests below the MyDeployments' own events. With
// every worker busy (a scale-out of many objects), a MyDeployment that has
// no pod yet is synced before another one's status follows its pods' progress;
// when workers are free nothing waits.
func LowPriority(h handler.EventHandler) handler.EventHandler {
	return lowPriorityHandler{h}
}

type lowPriorityHandler struct{ h handler.EventHandler }

var _ handler.EventHandler = lowPriorityHandler{}

// Queue is the controller's work queue, as event handlers see it.
type Queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

func (l lowPriorityHandler) Create(ctx context.Context, e event.CreateEvent, q Queue) {
	l.h.Create(ctx, e, lowered(q))
}

func (l lowPriorityHandler) Update(ctx context.Context, e event.UpdateEvent, q Queue) {
	l.h.Update(ctx, e, lowered(q))
}

func (l lowPriorityHandler) Delete(ctx context.Context, e event.DeleteEvent, q Queue) {
	l.h.Delete(ctx, e, lowered(q))
}

func (l lowPriorityHandler) Generic(ctx context.Context, e event.GenericEvent, q Queue) {
	l.h.Generic(ctx, e, lowered(q))
}

func lowered(q Queue) Queue {
	if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok {
		return lowPriorityQueue{pq}
	}
	return q
}

// lowPriorityQueue adds at handler.LowPriority unless told a priority.
type lowPriorityQueue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
}

func (q lowPriorityQueue) Add(item reconcile.Request) {
	q.AddWithOpts(priorityqueue.AddOpts{}, item)
}

func (q lowPriorityQueue) AddAfter(item reconcile.Request, d time.Duration) {
	q.AddWithOpts(priorityqueue.AddOpts{After: d}, item)
}

func (q lowPriorityQueue) AddRateLimited(item reconcile.Request) {
	q.AddWithOpts(priorityqueue.AddOpts{RateLimited: true}, item)
}

func (q lowPriorityQueue) AddWithOpts(o priorityqueue.AddOpts, items ...reconcile.Request) {
	if o.Priority == nil {
		low := handler.LowPriority
		o.Priority = &low
	}
	q.PriorityQueue.AddWithOpts(o, items...)
}
