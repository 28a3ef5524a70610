package inplace

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// Gate is the readiness gate of pods created under update-mode
// InPlaceIfPossible, and the type of the pod condition behind it.
const Gate = corev1.PodConditionType(appsv1beta1.InPlaceUpdateReadyCondition)

// Reasons of the Gate condition, as the controller writes them.
const (
	// ReasonReady: True, no in-place update under way.
	ReasonReady = "Ready"
	// ReasonUpdating: False, an in-place update is under way; the message
	// names the revision.
	ReasonUpdating = "InPlaceUpdate"
	// ReasonFailed: False, the in-place update was refused or did not
	// finish in time; the pod is to be replaced. The message says why.
	ReasonFailed = "InPlaceUpdateFailed"
)

// HasGate says the pod carries the Gate readiness gate, so it can leave
// Service endpoints before an in-place update restarts a container. Only
// such pods are updated in place: readiness gates cannot be added to a
// running pod.
func HasGate(pod *corev1.Pod) bool {
	for _, g := range pod.Spec.ReadinessGates {
		if g.ConditionType == Gate {
			return true
		}
	}
	return false
}

// WithGate adds the Gate readiness gate to spec (once).
func WithGate(spec *corev1.PodSpec) {
	for _, g := range spec.ReadinessGates {
		if g.ConditionType == Gate {
			return
		}
	}
	spec.ReadinessGates = append(spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: Gate})
}

// Condition returns the pod's Gate condition, or nil.
func Condition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == Gate {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// Updating says an in-place update of the pod is under way or failed (its
// Gate condition is False): the pod is not available, whatever its Ready
// condition still says, from the moment the update began until the
// controller saw it run the new template.
func Updating(pod *corev1.Pod) bool {
	c := Condition(pod)
	return c != nil && c.Status == corev1.ConditionFalse
}

// UnderWay says an in-place update of the pod began and has neither
// finished nor failed: its Gate condition is False with ReasonUpdating.
// Until its spec patch, such a pod still carries the labels of the
// revision it leaves (and runs that revision's template): the patch that
// changes its images carries its new revision labels too.
func UnderWay(pod *corev1.Pod) bool {
	c := Condition(pod)
	return c != nil && c.Status == corev1.ConditionFalse && c.Reason == ReasonUpdating
}

// Failed says the pod's in-place update failed (the controller said so on
// its Gate condition): the pod is to be replaced.
func Failed(pod *corev1.Pod) bool {
	c := Condition(pod)
	return c != nil && c.Status == corev1.ConditionFalse && c.Reason == ReasonFailed
}

// Step is what the controller does next for one pod's in-place update.
type Step int

const (
	// StepNone: nothing (no gate, no update under way, or an update
	// waiting on the kubelet).
	StepNone Step = iota
	// StepMarkReady: set the Gate condition True; the pod was just created
	// (no condition yet) or runs its new template.
	StepMarkReady
	// StepPatch: write the new images with the target revision's labels
	// and the template's label and annotation changes (one pod patch), and
	// the new resources (pods/resize): the pod has left Service endpoints
	// (not Ready).
	StepPatch
	// StepFail: mark the update failed (Gate False, ReasonFailed, with
	// Why); the planner then replaces the pod.
	StepFail
)

// Next is the next step of pod towards target, the template of the
// revision it is to run: the update revision's for a pod of it or on its
// way to it (UnderWay), its own revision's otherwise (an update that is
// not to go on ends where it stands: Ready again, or failed). The pod must keep its containers' spec and status as
// the API returns them (images, resources, readiness). Started is when the
// update began (the Gate condition's transition); an update not done
// within timeout fails, as does a resize the kubelet reports Infeasible.
// Why says, for StepFail, what went wrong.
func Next(pod *corev1.Pod, target *corev1.PodTemplateSpec, now time.Time, timeout time.Duration) (step Step, why string) {
	if !HasGate(pod) || pod.DeletionTimestamp != nil {
		return StepNone, ""
	}
	c := Condition(pod)
	switch {
	case c == nil:
		return StepMarkReady, ""
	case c.Status == corev1.ConditionTrue || c.Reason == ReasonFailed:
		return StepNone, ""
	}
	if r := podCondition(pod, corev1.PodResizePending); r != nil && r.Reason == corev1.PodReasonInfeasible {
		return StepFail, "the kubelet refused the resize as Infeasible: " + r.Message
	}
	specDone := SpecMatches(pod, target)
	switch {
	case !specDone && podReady(pod):
		// Still in Service endpoints: the kubelet has not yet seen the gate.
	case !specDone:
		return StepPatch, ""
	case statusMatches(pod):
		return StepMarkReady, ""
	}
	if now.Sub(c.LastTransitionTime.Time) >= timeout {
		return StepFail, "not running the new template after " + timeout.String() + ": " + waitingFor(pod, specDone)
	}
	return StepNone, ""
}

// waitingFor says which part of an update that timed out was missing.
func waitingFor(pod *corev1.Pod, specDone bool) string {
	switch {
	case !specDone:
		return "the pod never left Service endpoints (still Ready)"
	case podCondition(pod, corev1.PodResizePending) != nil || podCondition(pod, corev1.PodResizeInProgress) != nil:
		return "the resize was not applied"
	}
	return "its containers did not report the new images and resources and become ready"
}

// SpecMatches says the pod's containers have the target's images and
// resources.
func SpecMatches(pod *corev1.Pod, target *corev1.PodTemplateSpec) bool {
	return containersMatch(pod.Spec.Containers, target.Spec.Containers) &&
		containersMatch(pod.Spec.InitContainers, target.Spec.InitContainers)
}

func containersMatch(have, want []corev1.Container) bool {
	if len(have) != len(want) {
		return false
	}
	for i := range want {
		if have[i].Name != want[i].Name || have[i].Image != want[i].Image ||
			!apiequality.Semantic.DeepEqual(have[i].Resources, want[i].Resources) {
			return false
		}
	}
	return true
}

// statusMatches says the kubelet reports the pod's spec: every container
// runs its image and is ready, and no resize is pending or in progress
// with the applied resources differing from the spec.
func statusMatches(pod *corev1.Pod) bool {
	if podCondition(pod, corev1.PodResizePending) != nil || podCondition(pod, corev1.PodResizeInProgress) != nil {
		return false
	}
	if pod.Status.ObservedGeneration != 0 && pod.Generation != 0 && pod.Status.ObservedGeneration < pod.Generation {
		return false
	}
	statuses := map[string]*corev1.ContainerStatus{}
	for i := range pod.Status.ContainerStatuses {
		statuses[pod.Status.ContainerStatuses[i].Name] = &pod.Status.ContainerStatuses[i]
	}
	for i := range pod.Status.InitContainerStatuses {
		statuses[pod.Status.InitContainerStatuses[i].Name] = &pod.Status.InitContainerStatuses[i]
	}
	check := func(c corev1.Container, mustBeReady bool) bool {
		st := statuses[c.Name]
		if st == nil || !SameImage(st.Image, c.Image) || mustBeReady && !st.Ready {
			return false
		}
		return st.Resources == nil || resourcesApplied(c.Resources, *st.Resources)
	}
	for _, c := range pod.Spec.Containers {
		if !check(c, true) {
			return false
		}
	}
	for _, c := range pod.Spec.InitContainers {
		if _, ran := statuses[c.Name]; ran && !check(c, c.RestartPolicy != nil) {
			return false
		}
	}
	return true
}

// resourcesApplied says the resources a kubelet reports applied equal the
// spec's, for cpu and memory.
func resourcesApplied(spec, applied corev1.ResourceRequirements) bool {
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		for _, pair := range [][2]corev1.ResourceList{{spec.Requests, applied.Requests}, {spec.Limits, applied.Limits}} {
			want, hasWant := pair[0][name]
			got, hasGot := pair[1][name]
			if hasWant && (!hasGot || want.Cmp(got) != 0) {
				return false
			}
		}
	}
	return true
}

// SameImage says a container status's image is the spec's image, allowing
// for the normalized name a container runtime reports ("nginx:1.27" runs
// as "docker.io/library/nginx:1.27").
func SameImage(status, spec string) bool {
	return status == spec || normalizeImage(status) == normalizeImage(spec)
}

// normalizeImage is Docker's normalization of an image reference: the
// default registry and library namespace, and tag latest when neither tag
// nor digest is given.
func normalizeImage(ref string) string {
	name, digest, hasDigest := strings.Cut(ref, "@")
	first, _, hasSlash := strings.Cut(name, "/")
	switch {
	case !hasSlash:
		name = "docker.io/library/" + name
	case !strings.ContainsAny(first, ".:") && first != "localhost":
		name = "docker.io/" + name
	}
	if !hasDigest && !strings.Contains(name[strings.LastIndex(name, "/")+1:], ":") {
		name += ":latest"
	}
	if hasDigest {
		return name + "@" + digest
	}
	return name
}

func podCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

func podReady(pod *corev1.Pod) bool {
	c := podCondition(pod, corev1.PodReady)
	return c != nil && c.Status == corev1.ConditionTrue
}
