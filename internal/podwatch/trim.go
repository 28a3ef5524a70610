package podwatch

import (
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mydeployment-io/mydeployment-operator/internal/inplace"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
)

// Trim keeps of a pod only what the controller reads from its cache and
// drops the rest (images, env, volumes, probes, most of the status), so that
// ten thousand cached pods cost a few MiB, not a few hundred (2,650 bytes a
// pod with the informer's indexes before the restart counts were pruned
// and the strings interned, 2,166 after: BenchmarkCachedPod): identity and
// ownership (name, namespace, UID, resourceVersion for the optimistic lock
// of adoption, labels, owner references, creation and deletion timestamps),
// the pod-deletion-cost annotation and the wave a pod was pinned to
// (rollout.WavePodAnnotation: a pod of a wave not yet scheduled is of its
// domain), the node name, the phase, the Ready condition
// (it and its transition time decide availability), the restart counts of
// the containers that restarted and which init containers are sidecars
// (the deletion ranking). Strings that repeat across pods (namespace,
// labels, owner, node) are interned. A pod with the in-place readiness gate (update-mode
// InPlaceIfPossible) keeps what its in-place update is judged by too
// (keepInPlace). Anything that writes a pod from the cache must patch the fields
// it changes (podcontrol does), never update the whole object.
//
// It is the cache's transform for pods: it runs once per watch event, before
// the object is stored, and returns a new pod so nothing points into the
// decoded original.
func Trim(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	out := &corev1.Pod{
		TypeMeta: pod.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name:                       pod.Name,
			Namespace:                  intern(pod.Namespace),
			UID:                        pod.UID,
			ResourceVersion:            pod.ResourceVersion,
			CreationTimestamp:          pod.CreationTimestamp,
			DeletionTimestamp:          pod.DeletionTimestamp,
			DeletionGracePeriodSeconds: pod.DeletionGracePeriodSeconds,
			Labels:                     internMap(pod.Labels),
			OwnerReferences:            internOwners(pod.OwnerReferences),
		},
		Spec: corev1.PodSpec{NodeName: intern(pod.Spec.NodeName)},
		Status: corev1.PodStatus{
			Phase:                 pod.Status.Phase,
			Conditions:            trimConditions(pod.Status.Conditions),
			ContainerStatuses:     restarted(pod.Status.ContainerStatuses),
			InitContainerStatuses: restarted(pod.Status.InitContainerStatuses),
		},
	}
	for _, k := range keptAnnotations {
		if v, ok := pod.Annotations[k]; ok {
			if out.Annotations == nil {
				out.Annotations = make(map[string]string, len(keptAnnotations))
			}
			out.Annotations[k] = intern(v)
		}
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

// keptAnnotations are the annotations the controller reads of every pod.
var keptAnnotations = []string{corev1.PodDeletionCost, rollout.WavePodAnnotation}

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

// restarted keeps, of each container that restarted, its name and restart
// count: the deletion ranking compares the highest count, and a container
// that never restarted (most of them) changes no maximum.
func restarted(in []corev1.ContainerStatus) []corev1.ContainerStatus {
	var out []corev1.ContainerStatus
	for _, s := range in {
		if s.RestartCount > 0 {
			out = append(out, corev1.ContainerStatus{Name: intern(s.Name), RestartCount: s.RestartCount})
		}
	}
	return out
}

// intern returns the one copy of s the process keeps (unique.Make): label
// keys and values, namespaces, node names and owners repeat across the pods
// of an object, and every watch event decodes fresh copies of them.
func intern(s string) string { return unique.Make(s).Value() }

// internMap rebuilds m with interned keys and values.
func internMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[intern(k)] = intern(v)
	}
	return out
}

// internOwners interns the strings of owner references, in place (the
// decoded pod is the transform's own).
func internOwners(refs []metav1.OwnerReference) []metav1.OwnerReference {
	for i := range refs {
		r := &refs[i]
		r.APIVersion, r.Kind, r.Name, r.UID = intern(r.APIVersion), intern(r.Kind), intern(r.Name), types.UID(intern(string(r.UID)))
	}
	return refs
}
