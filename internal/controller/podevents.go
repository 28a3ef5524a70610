package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	"github.com/mydeployment-io/mydeployment-operator/internal/podcontrol"
	"github.com/mydeployment-io/mydeployment-operator/internal/podwatch"
)

// podDeletes wraps the pod event handler. A pod's delete event, before its
// MyDeployment is enqueued:
//   - observes whatever the MyDeployment expected of the pod, as the
//     ReplicaSet controller's deletePod does: a pod created and deleted
//     before a sync listed it would otherwise hold the MyDeployment's syncs
//     until its expectation timed out;
//   - notes the pod as a stray when it may still exist (mayHaveLeft): it
//     left the cache's label selector, or the event is a tombstone.
type podDeletes struct {
	handler.EventHandler
	r *MyDeploymentReconciler
}

var _ handler.EventHandler = podDeletes{}

func (h podDeletes) Delete(ctx context.Context, e event.DeleteEvent, q podwatch.Queue) {
	if pod, ok := e.Object.(*corev1.Pod); ok {
		if _, ours := podwatch.Controller(pod); ours {
			if obj := h.r.objects.lookup(podcontrol.ControllerOf(pod).UID); obj != nil {
				obj.Gone(pod.Name)
			}
			if mayHaveLeft(e, pod) {
				h.r.noteStray(pod)
			}
		}
	}
	h.EventHandler.Delete(ctx, e, q)
}
