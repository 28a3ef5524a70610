package controller

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mydeployment-io/mydeployment-operator/internal/inplace"
)

// trimPod keeps of a pod only what the controller reads from its cache and
// drops the rest (images, env, volumes, probes, most of the status), so that
// ten thousand cached pods cost a few MiB, not a few hundred: identity and
// ownership (name, namespace, UID, resourceVersion for the optimistic lock
// of adoption, labels, owner references, creation and deletion timestamps),
// the pod-deletion-cost annotation, the node name, the phase, the Ready condition
// (it and its transition time decide availability), the containers'
// restart counts and which init containers are sidecars (the deletion
// ranking). A pod with the in-place readiness gate (update-mode
// InPlaceIfPossible) keeps what its in-place update is judged by too
// (keepInPlace). Anything that writes a pod from the cache must patch the fields
// it changes (podcontrol does), never update the whole object.
//
// It is the cache's transform for pods: it runs once per watch event, before
// the object is stored, and returns a new pod so nothing points into the
// decoded original.
func trimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	out := &corev1.Pod{
		TypeMeta: pod.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name:                       pod.Name,
			Namespace:                  pod.Namespace,
			UID:                        pod.UID,
			ResourceVersion:            pod.ResourceVersion,
			CreationTimestamp:          pod.CreationTimestamp,
			DeletionTimestamp:          pod.DeletionTimestamp,
			DeletionGracePeriodSeconds: pod.DeletionGracePeriodSeconds,
			Labels:                     pod.Labels,
			OwnerReferences:            pod.OwnerReferences,
		},
		Spec: corev1.PodSpec{NodeName: pod.Spec.NodeName},
		Status: corev1.PodStatus{
			Phase:                 pod.Status.Phase,
			Conditions:            trimConditions(pod.Status.Conditions),
			ContainerStatuses:     trimContainerStatuses(pod.Status.ContainerStatuses),
			InitContainerStatuses: trimContainerStatuses(pod.Status.InitContainerStatuses),
		},
	}
	if cost, ok := pod.Annotations[corev1.PodDeletionCost]; ok {
		out.Annotations = map[string]string{corev1.PodDeletionCost: cost}
	}
	if inplace.HasGate(pod) {
		keepInPlace(pod, out)
		return out, nil
	}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil {
			out.Spec.InitContainers = append(out.Spec.InitContainers,
				corev1.Container{Name: c.Name, RestartPolicy: c.RestartPolicy})
		}
	}
	return out, nil
}

// keepInPlace copies into out, a trimmed pod, what inplace.Next judges an
// in-place update by: the readiness gates, generation and observed
// generation, each container's name, image, resources (and an init
// container's restart policy), the containers' reported image, readiness
// and resources, and the gate's and resize conditions; and what its update
// patches against: every annotation (a template annotation removed is
// removed from the pod only if the cache shows the pod has it).
func keepInPlace(pod, out *corev1.Pod) {
	out.Annotations = pod.Annotations
	out.Generation = pod.Generation
	out.Spec.ReadinessGates = pod.Spec.ReadinessGates
	out.Status.ObservedGeneration = pod.Status.ObservedGeneration
	containers := func(in []corev1.Container) []corev1.Container {
		kept := make([]corev1.Container, len(in))
		for i, c := range in {
			kept[i] = corev1.Container{Name: c.Name, Image: c.Image, Resources: c.Resources, RestartPolicy: c.RestartPolicy}
		}
		return kept
	}
	out.Spec.Containers = containers(pod.Spec.Containers)
	out.Spec.InitContainers = containers(pod.Spec.InitContainers)
	statuses := func(in []corev1.ContainerStatus) []corev1.ContainerStatus {
		kept := make([]corev1.ContainerStatus, len(in))
		for i, s := range in {
			kept[i] = corev1.ContainerStatus{Name: s.Name, RestartCount: s.RestartCount, Image: s.Image, Ready: s.Ready, Resources: s.Resources}
		}
		return kept
	}
	out.Status.ContainerStatuses = statuses(pod.Status.ContainerStatuses)
	out.Status.InitContainerStatuses = statuses(pod.Status.InitContainerStatuses)
	out.Status.Conditions = nil
	for _, c := range pod.Status.Conditions {
		switch c.Type {
		case corev1.PodReady, inplace.Gate, corev1.PodResizePending, corev1.PodResizeInProgress:
			out.Status.Conditions = append(out.Status.Conditions, corev1.PodCondition{Type: c.Type, Status: c.Status,
				Reason: c.Reason, Message: c.Message, LastTransitionTime: c.LastTransitionTime})
		}
	}
}

// trimConditions keeps the first Ready condition, the only one read (as
// podutil reads it).
func trimConditions(in []corev1.PodCondition) []corev1.PodCondition {
	for _, c := range in {
		if c.Type == corev1.PodReady {
			return []corev1.PodCondition{{Type: c.Type, Status: c.Status, LastTransitionTime: c.LastTransitionTime}}
		}
	}
	return nil
}

func trimContainerStatuses(in []corev1.ContainerStatus) []corev1.ContainerStatus {
	if len(in) == 0 {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(in))
	for i, s := range in {
		out[i] = corev1.ContainerStatus{Name: s.Name, RestartCount: s.RestartCount}
	}
	return out
}
