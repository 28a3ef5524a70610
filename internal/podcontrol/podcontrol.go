// Package podcontrol is the only place that writes Pods for a MyDeployment
// (create, delete, adopt, release) and records the events users see for
// those writes. Everything goes through [Interface] so tests can inject
// failures.
package podcontrol

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/revision"
)

// Event reasons, the ReplicaSet controller's words for the same acts. Only
// failures get an event per pod: a success per pod would double the API
// writes of a scale-out (the controller sums successes up in one event per
// sync instead; the ReplicaSet controller's own per-pod events are cut off by
// client-go's spam filter after 25 per object).
const (
	EventFailedCreate = "FailedCreate"
	EventFailedDelete = "FailedDelete"
)

// Interface writes pods on behalf of a MyDeployment.
type Interface interface {
	// Create creates one pod from rev's template (the caller passes the
	// decoded template) and returns it with its server-assigned name.
	Create(ctx context.Context, owner *appsv1beta1.MyDeployment, template *corev1.PodTemplateSpec, rev *appsv1.ControllerRevision) (*corev1.Pod, error)
	// Delete deletes pod if it is still the same object (UID precondition);
	// a pod already gone is success.
	Delete(ctx context.Context, owner *appsv1beta1.MyDeployment, pod *corev1.Pod) error
	// Adopt makes owner the controller of an orphan pod.
	Adopt(ctx context.Context, owner *appsv1beta1.MyDeployment, pod *corev1.Pod) error
	// Release removes owner's controller reference from pod.
	Release(ctx context.Context, owner *appsv1beta1.MyDeployment, pod *corev1.Pod) error
}

// Real writes through the API server.
type Real struct {
	Client   client.Client
	Recorder events.EventRecorder
}

var _ Interface = &Real{}

// NewPod builds, without creating it, a pod of owner from template and rev:
// generateName "<owner>-", the template's labels plus the revision labels,
// and a controller reference to owner so deleting owner deletes the pod.
func NewPod(owner *appsv1beta1.MyDeployment, template *corev1.PodTemplateSpec, rev *appsv1.ControllerRevision) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    owner.Name + "-",
			Namespace:       owner.Namespace,
			Labels:          make(map[string]string, len(template.Labels)+2),
			Annotations:     make(map[string]string, len(template.Annotations)),
			Finalizers:      append([]string(nil), template.Finalizers...),
			OwnerReferences: []metav1.OwnerReference{*controllerRef(owner)},
		},
	}
	for k, v := range template.Labels {
		pod.Labels[k] = v
	}
	for k, v := range template.Annotations {
		pod.Annotations[k] = v
	}
	pod.Labels[appsv1beta1.RevisionLabel] = rev.Name
	pod.Labels[appsv1beta1.PodTemplateHashLabel] = rev.Labels[revision.HashLabel]
	template.Spec.DeepCopyInto(&pod.Spec)
	return pod
}

func controllerRef(owner *appsv1beta1.MyDeployment) *metav1.OwnerReference {
	return metav1.NewControllerRef(owner, appsv1beta1.GroupVersion.WithKind("MyDeployment"))
}

// Create implements [Interface].
func (r *Real) Create(ctx context.Context, owner *appsv1beta1.MyDeployment, template *corev1.PodTemplateSpec, rev *appsv1.ControllerRevision) (*corev1.Pod, error) {
	pod := NewPod(owner, template, rev)
	if err := r.Client.Create(ctx, pod); err != nil {
		r.Recorder.Eventf(owner, nil, corev1.EventTypeWarning, EventFailedCreate, "Create", "Error creating: %v", err)
		return nil, fmt.Errorf("creating pod for revision %s: %w", rev.Name, err)
	}
	return pod, nil
}

// Delete implements [Interface].
func (r *Real) Delete(ctx context.Context, owner *appsv1beta1.MyDeployment, pod *corev1.Pod) error {
	err := r.Client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID})
	if err != nil && !apierrors.IsNotFound(err) {
		r.Recorder.Eventf(owner, pod, corev1.EventTypeWarning, EventFailedDelete, "Delete", "Error deleting: %v", err)
		return fmt.Errorf("deleting pod %s: %w", pod.Name, err)
	}
	return nil
}

// Adopt implements [Interface]: a JSON merge patch that sets the owner
// references, guarded by the pod's UID and resourceVersion so a pod that
// changed meanwhile (for example adopted by someone else) is left alone.
func (r *Real) Adopt(ctx context.Context, owner *appsv1beta1.MyDeployment, pod *corev1.Pod) error {
	refs := append(append([]metav1.OwnerReference(nil), pod.OwnerReferences...), *controllerRef(owner))
	return r.patchOwners(ctx, pod, refs, "adopting")
}

// Release implements [Interface].
func (r *Real) Release(ctx context.Context, owner *appsv1beta1.MyDeployment, pod *corev1.Pod) error {
	var refs []metav1.OwnerReference
	for _, ref := range pod.OwnerReferences {
		if ref.UID != owner.UID {
			refs = append(refs, ref)
		}
	}
	err := r.patchOwners(ctx, pod, refs, "releasing")
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func (r *Real) patchOwners(ctx context.Context, pod *corev1.Pod, refs []metav1.OwnerReference, verb string) error {
	patched := pod.DeepCopy()
	patched.OwnerReferences = refs
	// Optimistic lock: fail with a conflict if the pod changed since we read it.
	patch := client.MergeFromWithOptions(pod, client.MergeFromWithOptimisticLock{})
	if err := r.Client.Patch(ctx, patched, patch); err != nil {
		return fmt.Errorf("%s pod %s: %w", verb, pod.Name, err)
	}
	return nil
}

// ControllerOf returns pod's controller reference without copying it, or nil.
func ControllerOf(pod *corev1.Pod) *metav1.OwnerReference {
	return metav1.GetControllerOfNoCopy(pod)
}
