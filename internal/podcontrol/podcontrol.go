// Package podcontrol is the only place that writes Pods for a MyDeployment
// (create, delete, adopt, release) and records the events users see for
// those writes. Everything goes through [Interface] so tests can inject
// failures.
package podcontrol

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/inplace"
	"github.com/mydeployment-io/mydeployment-operator/internal/ownerref"
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
	// Evict removes pod through the Eviction API (policy/v1) if it is still
	// the same object (UID precondition), so that a PodDisruptionBudget over
	// it holds; a pod already gone is success. A refusal by a budget is an
	// error for which EvictionRefused reports true.
	Evict(ctx context.Context, owner *appsv1beta1.MyDeployment, pod *corev1.Pod) error
	// Adopt makes owner the controller of an orphan pod whose template is
	// rev's (the caller checked: its hash label, or the ReplicaSet it was
	// handed over from) and labels it as rev's pods are (revision name and
	// hash), in one write guarded by the pod's resourceVersion. It returns
	// the adopted pod; pod itself (maybe the cache's) is not modified.
	Adopt(ctx context.Context, owner *appsv1beta1.MyDeployment, pod *corev1.Pod, rev *appsv1.ControllerRevision) (*corev1.Pod, error)
	// Release removes owner's references from pod, guarded by the pod's
	// resourceVersion; a pod already gone is success.
	Release(ctx context.Context, owner *appsv1beta1.MyDeployment, pod *corev1.Pod) error

	// SetGate writes pod's in-place readiness gate condition
	// (inplace.Gate) with status, reason and message (pods/status).
	SetGate(ctx context.Context, owner *appsv1beta1.MyDeployment, pod *corev1.Pod, status corev1.ConditionStatus, reason, message string) error
	// UpdateInPlace moves pod to rev, whose decoded template is target, in
	// place: one pod patch of whatever differs among the container and
	// init container images, rev's labels (revision, template hash) and
	// change's template labels and annotations (nil: none), so that its
	// labels change with what it runs; then, where container resources
	// differ, the pods/resize subresource. Nothing the pod already has is
	// written. An error for which Refused reports true will not go away by
	// retrying.
	UpdateInPlace(ctx context.Context, owner *appsv1beta1.MyDeployment, pod *corev1.Pod, rev *appsv1.ControllerRevision,
		target *corev1.PodTemplateSpec, change *inplace.Change) error
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

// Evict implements [Interface]. A refusal by a budget gets no event here:
// the caller retries and says so once per spell, not once per retry.
func (r *Real) Evict(ctx context.Context, owner *appsv1beta1.MyDeployment, pod *corev1.Pod) error {
	eviction := &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}},
	}
	err := r.Client.SubResource("eviction").Create(ctx, pod, eviction)
	if err == nil || apierrors.IsNotFound(err) {
		return nil
	}
	if refused, _ := EvictionRefused(err); !refused {
		r.Recorder.Eventf(owner, pod, corev1.EventTypeWarning, EventFailedDelete, "Evict", "Error evicting: %v", err)
	}
	return fmt.Errorf("evicting pod %s: %w", pod.Name, err)
}

// EvictionRefused reports whether err is an eviction refused because of a
// PodDisruptionBudget (429 Too Many Requests), and returns the API server's
// words naming the budget ("The disruption budget web needs 9 healthy pods
// and has 9 currently"), or its message when it names none.
func EvictionRefused(err error) (bool, string) {
	var status apierrors.APIStatus
	if !apierrors.IsTooManyRequests(err) || !errors.As(err, &status) {
		return false, ""
	}
	if d := status.Status().Details; d != nil {
		for _, c := range d.Causes {
			if c.Type == policyv1.DisruptionBudgetCause {
				return true, c.Message
			}
		}
	}
	return true, status.Status().Message
}

// Adopt implements [Interface]: a JSON merge patch of the owner references
// and, if it names another revision, the revision label, guarded by the
// pod's resourceVersion (a pod re-created under its name has another) so a
// pod that changed meanwhile (for example adopted by someone else) is left
// alone with a Conflict. A reference to owner the
// pod already has (not as controller) becomes the controller reference:
// one reference per owner, as the ControllerRefManager merges by UID.
//
// The revision label: an orphan whose template hash is the update
// revision's runs that template, but its label may name the revision of a
// deleted owner (revision names are <owner>-<hash>); relabelled, it counts
// as updated instead of being replaced. The hash label: a Deployment's pod
// handed over (adopt-from) carries its ReplicaSet's, and takes rev's, so
// that its labels say what it runs.
func (r *Real) Adopt(ctx context.Context, owner *appsv1beta1.MyDeployment, pod *corev1.Pod, rev *appsv1.ControllerRevision) (*corev1.Pod, error) {
	adopted := pod.DeepCopy()
	adopted.OwnerReferences = ownerref.WithController(pod.OwnerReferences, *controllerRef(owner))
	if adopted.Labels == nil {
		adopted.Labels = map[string]string{}
	}
	adopted.Labels[appsv1beta1.RevisionLabel] = rev.Name
	adopted.Labels[appsv1beta1.PodTemplateHashLabel] = rev.Labels[revision.HashLabel]
	if err := r.patch(ctx, pod, adopted, "adopting"); err != nil {
		return nil, err
	}
	return adopted, nil
}

// Release implements [Interface]: every reference to owner goes, not only
// the controller one (the ControllerRefManager deletes by UID too).
func (r *Real) Release(ctx context.Context, owner *appsv1beta1.MyDeployment, pod *corev1.Pod) error {
	released := pod.DeepCopy()
	released.OwnerReferences = nil
	for _, ref := range pod.OwnerReferences {
		if ref.UID != owner.UID {
			released.OwnerReferences = append(released.OwnerReferences, ref)
		}
	}
	err := r.patch(ctx, pod, released, "releasing")
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// patch writes the difference from pod to changed as a JSON merge patch.
func (r *Real) patch(ctx context.Context, pod, changed *corev1.Pod, verb string) error {
	// Optimistic lock: fail with a conflict if the pod changed since we read it.
	patch := client.MergeFromWithOptions(pod, client.MergeFromWithOptimisticLock{})
	if err := r.Client.Patch(ctx, changed, patch); err != nil {
		return fmt.Errorf("%s pod %s: %w", verb, pod.Name, err)
	}
	return nil
}

// ControllerOf returns pod's controller reference without copying it, or nil.
func ControllerOf(pod *corev1.Pod) *metav1.OwnerReference {
	return metav1.GetControllerOfNoCopy(pod)
}

// SetGate implements [Interface]: a strategic merge patch of the one
// condition (merged by type), its transition time now.
func (r *Real) SetGate(ctx context.Context, owner *appsv1beta1.MyDeployment, pod *corev1.Pod, status corev1.ConditionStatus, reason, message string) error {
	cond := corev1.PodCondition{Type: inplace.Gate, Status: status, Reason: reason, Message: message,
		LastTransitionTime: metav1.NewTime(time.Now())}
	if old := inplace.Condition(pod); old != nil && old.Status == status {
		cond.LastTransitionTime = old.LastTransitionTime
	}
	data, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.PodCondition{cond}}})
	if err != nil {
		return fmt.Errorf("encoding the gate of pod %s: %w", pod.Name, err)
	}
	if err := r.Client.Status().Patch(ctx, pod.DeepCopy(), client.RawPatch(types.StrategicMergePatchType, data)); err != nil {
		return fmt.Errorf("setting the in-place gate of pod %s to %s: %w", pod.Name, status, err)
	}
	return nil
}

// UpdateInPlace implements [Interface]. The pod patch is a strategic merge
// patch, which carries metadata and the containers (merged by name) in one
// request; a label or annotation change's nil value removes the key.
func (r *Real) UpdateInPlace(ctx context.Context, owner *appsv1beta1.MyDeployment, pod *corev1.Pod, rev *appsv1.ControllerRevision,
	target *corev1.PodTemplateSpec, change *inplace.Change) error {
	patch := map[string]any{}
	meta := map[string]any{}
	name, hash := rev.Name, rev.Labels[revision.HashLabel]
	labels := map[string]*string{appsv1beta1.RevisionLabel: &name, appsv1beta1.PodTemplateHashLabel: &hash}
	var annotations map[string]*string
	if change != nil {
		for k, v := range change.Labels {
			if k != appsv1beta1.RevisionLabel && k != appsv1beta1.PodTemplateHashLabel {
				labels[k] = v
			}
		}
		annotations = change.Annotations
	}
	if l := metadataToWrite(pod.Labels, labels); len(l) > 0 {
		meta["labels"] = l
	}
	if a := metadataToWrite(pod.Annotations, annotations); len(a) > 0 {
		meta["annotations"] = a
	}
	if len(meta) > 0 {
		patch["metadata"] = meta
	}
	images := func(have, want []corev1.Container) []map[string]string {
		var out []map[string]string
		for _, w := range want {
			for _, h := range have {
				if h.Name == w.Name && h.Image != w.Image {
					out = append(out, map[string]string{"name": w.Name, "image": w.Image})
				}
			}
		}
		return out
	}
	spec := map[string]any{}
	if c := images(pod.Spec.Containers, target.Spec.Containers); len(c) > 0 {
		spec["containers"] = c
	}
	if c := images(pod.Spec.InitContainers, target.Spec.InitContainers); len(c) > 0 {
		spec["initContainers"] = c
	}
	if len(spec) > 0 {
		patch["spec"] = spec
	}
	if len(patch) > 0 {
		if err := r.strategicPatch(ctx, pod, patch, ""); err != nil {
			return fmt.Errorf("updating pod %s in place to revision %s: %w", pod.Name, rev.Name, err)
		}
	}
	var resized []map[string]any
	for _, w := range target.Spec.Containers {
		for _, h := range pod.Spec.Containers {
			if h.Name == w.Name && !equality.Semantic.DeepEqual(h.Resources, w.Resources) {
				resized = append(resized, map[string]any{"name": w.Name, "resources": w.Resources})
			}
		}
	}
	if len(resized) > 0 {
		if err := r.strategicPatch(ctx, pod, map[string]any{"spec": map[string]any{"containers": resized}}, "resize"); err != nil {
			return fmt.Errorf("resizing pod %s: %w", pod.Name, err)
		}
	}
	return nil
}

// metadataToWrite is the part of want (a label or annotation patch, nil
// removing a key) that have does not show yet.
func metadataToWrite(have map[string]string, want map[string]*string) map[string]*string {
	out := map[string]*string{}
	for k, v := range want {
		if old, ok := have[k]; v == nil && ok || v != nil && (!ok || old != *v) {
			out[k] = v
		}
	}
	return out
}

// strategicPatch writes body as a strategic merge patch of pod, or of one
// of its subresources.
func (r *Real) strategicPatch(ctx context.Context, pod *corev1.Pod, body map[string]any, subresource string) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	patch := client.RawPatch(types.StrategicMergePatchType, data)
	if subresource == "" {
		return r.Client.Patch(ctx, pod.DeepCopy(), patch)
	}
	return r.Client.SubResource(subresource).Patch(ctx, pod.DeepCopy(), patch)
}

// Refused reports whether err is the API server refusing an in-place
// update for good (invalid, forbidden: a resize it cannot apply), rather
// than a failure a retry may mend.
func Refused(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err)
}
