package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/podcontrol"
)

// controllingMyDeployment names the MyDeployment that is pod's controller,
// if any.
func controllingMyDeployment(pod *corev1.Pod) (types.NamespacedName, bool) {
	ref := podcontrol.ControllerOf(pod)
	if ref == nil || ref.Kind != "MyDeployment" {
		return types.NamespacedName{}, false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || gv.Group != appsv1beta1.GroupVersion.Group {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: pod.Namespace, Name: ref.Name}, true
}

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

func (h podDeletes) Delete(ctx context.Context, e event.DeleteEvent, q queue) {
	if pod, ok := e.Object.(*corev1.Pod); ok {
		if _, ours := controllingMyDeployment(pod); ours {
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
