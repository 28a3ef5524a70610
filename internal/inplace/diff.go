// Package inplace decides whether a pod can move from one pod template to
// another without being recreated (update-mode InPlaceIfPossible), and
// reads, from the pod alone, where its in-place update stands. It is pure:
// the controller writes (through podcontrol) what these functions say.
package inplace

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// Change is what an in-place update writes to a running pod so that it runs
// another template: nothing else differs between the two templates.
type Change struct {
	// Images are the new images by container name, of containers and init
	// containers whose image changes (a pod patch).
	Images map[string]string
	// Resources are the new resources by container name, of containers whose
	// cpu or memory requests or limits change (the pods/resize subresource).
	Resources map[string]corev1.ResourceRequirements
	// Labels and Annotations are the template's metadata to set, a nil
	// value removing the key (a pod patch).
	Labels, Annotations map[string]*string
}

// RestartedAtAnnotation is the template annotation `kubectl rollout
// restart` (and the plugin's) sets: a change of it asks for new pods.
const RestartedAtAnnotation = "kubectl.kubernetes.io/restartedAt"

// Restarts says whether the change restarts a container (a new image),
// rather than only resizing one.
func (c *Change) Restarts() bool { return len(c.Images) > 0 }

// Diff returns the Change that takes a pod of template from to template to
// in place, or an error saying why it cannot: the first difference that
// needs a new pod. In place are: container and init container images;
// cpu and memory requests and limits of (non-init) containers, as long as
// the pod's QoS class stays the same (kube-apiserver refuses a resize that
// changes it); template labels and annotations, but for
// RestartedAtAnnotation (a restart asks for new pods) and ConfigHashAnnotation
// (new config is read by a new container). Anything else (a
// command, an env var, a volume, a port, an init container's resources,
// another resource name) needs a new pod. Neither template is modified.
func Diff(from, to *corev1.PodTemplateSpec) (*Change, error) {
	if from == nil || to == nil {
		return nil, fmt.Errorf("no template to compare")
	}
	if from.Annotations[RestartedAtAnnotation] != to.Annotations[RestartedAtAnnotation] {
		return nil, fmt.Errorf("the template's %s changed: a restart replaces the pods", RestartedAtAnnotation)
	}
	if from.Annotations[appsv1beta1.ConfigHashAnnotation] != to.Annotations[appsv1beta1.ConfigHashAnnotation] {
		return nil, fmt.Errorf("the ConfigMaps or Secrets it reads changed: env and mounted config are read at container start")
	}
	c := &Change{
		Images:      map[string]string{},
		Resources:   map[string]corev1.ResourceRequirements{},
		Labels:      metadataChange(from.Labels, to.Labels),
		Annotations: metadataChange(from.Annotations, to.Annotations),
	}
	// Apply what can change in place to a copy of from: what is left
	// different needs a new pod.
	moved := from.DeepCopy()
	moved.Labels, moved.Annotations = to.Labels, to.Annotations
	if err := moveContainers(moved.Spec.InitContainers, to.Spec.InitContainers, c, false); err != nil {
		return nil, err
	}
	if err := moveContainers(moved.Spec.Containers, to.Spec.Containers, c, true); err != nil {
		return nil, err
	}
	if !apiequality.Semantic.DeepEqual(moved.Spec, to.Spec) {
		return nil, fmt.Errorf("the pod spec changes beyond container images and resources")
	}
	if len(c.Resources) > 0 && qosClass(&from.Spec) != qosClass(&to.Spec) {
		return nil, fmt.Errorf("the resources change the pod's QoS class from %s to %s", qosClass(&from.Spec), qosClass(&to.Spec))
	}
	return c, nil
}

// moveContainers sets, in moved, each container's image (and, when
// resizable, its cpu and memory) to its namesake's in want, recording the
// changes in c. Containers added, removed or reordered are left for the
// caller's comparison to find.
func moveContainers(moved, want []corev1.Container, c *Change, resizable bool) error {
	if len(moved) != len(want) {
		return nil
	}
	for i := range moved {
		m, w := &moved[i], &want[i]
		if m.Name != w.Name {
			return nil
		}
		if m.Image != w.Image {
			c.Images[w.Name] = w.Image
			m.Image = w.Image
		}
		if apiequality.Semantic.DeepEqual(m.Resources, w.Resources) {
			continue
		}
		if !resizable {
			return fmt.Errorf("init container %q changes its resources", w.Name)
		}
		if !onlyCPUAndMemory(m.Resources, w.Resources) {
			return fmt.Errorf("container %q changes resources other than cpu and memory requests and limits", w.Name)
		}
		c.Resources[w.Name] = *w.Resources.DeepCopy()
		m.Resources = *w.Resources.DeepCopy()
	}
	return nil
}

// onlyCPUAndMemory says a and b differ in nothing but cpu and memory
// requests and limits.
func onlyCPUAndMemory(a, b corev1.ResourceRequirements) bool {
	strip := func(r corev1.ResourceRequirements) corev1.ResourceRequirements {
		r = *r.DeepCopy()
		for _, l := range []corev1.ResourceList{r.Requests, r.Limits} {
			delete(l, corev1.ResourceCPU)
			delete(l, corev1.ResourceMemory)
		}
		if len(r.Requests) == 0 {
			r.Requests = nil
		}
		if len(r.Limits) == 0 {
			r.Limits = nil
		}
		return r
	}
	return apiequality.Semantic.DeepEqual(strip(a), strip(b))
}

// metadataChange is the merge patch from one label or annotation map to
// another: changed and new keys with their values, removed keys with nil.
func metadataChange(from, to map[string]string) map[string]*string {
	out := map[string]*string{}
	for k, v := range to {
		if old, ok := from[k]; !ok || old != v {
			out[k] = &v
		}
	}
	for k := range from {
		if _, ok := to[k]; !ok {
			out[k] = nil
		}
	}
	return out
}

// qosClass is the pod's QoS class as Kubernetes computes it from its
// containers' cpu and memory (pod-level resources aside): BestEffort with
// none set, Guaranteed when every container's requests equal its limits for
// both, Burstable otherwise.
func qosClass(spec *corev1.PodSpec) corev1.PodQOSClass {
	any, guaranteed := false, true
	for _, c := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, hasReq := c.Resources.Requests[name]
			lim, hasLim := c.Resources.Limits[name]
			if hasReq && !req.IsZero() || hasLim && !lim.IsZero() {
				any = true
			}
			if !hasLim || lim.IsZero() || hasReq && req.Cmp(lim) != 0 {
				guaranteed = false
			}
		}
	}
	switch {
	case !any:
		return corev1.PodQOSBestEffort
	case guaranteed:
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}
