package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/expectations"
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

// observeGone wraps the pod event handler: a pod's delete event observes
// whatever its MyDeployment expected of it before the MyDeployment is
// enqueued, as the ReplicaSet controller's deletePod does. A pod created and
// deleted before a sync listed it would otherwise hold the MyDeployment's
// syncs until its expectation timed out.
type observeGone struct {
	handler.EventHandler
	expectations *expectations.Store
}

var _ handler.EventHandler = observeGone{}

func (o observeGone) Delete(ctx context.Context, e event.DeleteEvent, q queue) {
	if pod, ok := e.Object.(*corev1.Pod); ok {
		if owner, ok := controllingMyDeployment(pod); ok {
			o.expectations.Gone(owner.String(), pod.Name)
		}
	}
	o.EventHandler.Delete(ctx, e, q)
}
