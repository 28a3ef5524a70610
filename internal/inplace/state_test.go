package inplace

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// podOf is a running, ready pod of template with the gate True and a
// kubelet status that reports its spec.
func podOf(t *corev1.PodTemplateSpec) *corev1.Pod {
	p := &corev1.Pod{Spec: *t.Spec.DeepCopy()}
	WithGate(&p.Spec)
	p.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionTrue},
		{Type: Gate, Status: corev1.ConditionTrue, Reason: ReasonReady},
	}
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: "docker.io/library/" + c.Image, Ready: true, Resources: c.Resources.DeepCopy()})
	}
	return p
}

// begin is the controller's first step: gate False since t0.
func begin(p *corev1.Pod) {
	c := Condition(p)
	c.Status, c.Reason, c.LastTransitionTime = corev1.ConditionFalse, ReasonUpdating, metav1.NewTime(t0)
}

func setReady(p *corev1.Pod, ready bool) {
	p.Status.Conditions[0].Status = corev1.ConditionFalse
	if ready {
		p.Status.Conditions[0].Status = corev1.ConditionTrue
	}
}

func TestNext(t *testing.T) {
	from := template()
	to := template(func(t *corev1.PodTemplateSpec) {
		t.Spec.Containers[0].Image = "nginx:1.28"
		t.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("150m")
	})
	patched := func(p *corev1.Pod) {
		p.Spec.Containers[0].Image = "nginx:1.28"
		p.Spec.Containers[0].Resources = *to.Spec.Containers[0].Resources.DeepCopy()
	}
	restarted := func(p *corev1.Pod) {
		p.Status.ContainerStatuses[0].Image = "docker.io/library/nginx:1.28"
		p.Status.ContainerStatuses[0].Resources = to.Spec.Containers[0].Resources.DeepCopy()
	}
	for _, tc := range []struct {
		name  string
		pod   func() *corev1.Pod
		after time.Duration
		step  Step
		why   string
	}{
		{name: "no gate: nothing", pod: func() *corev1.Pod {
			p := podOf(from)
			p.Spec.ReadinessGates = nil
			return p
		}, step: StepNone},
		{name: "just created, no condition: mark ready", pod: func() *corev1.Pod {
			p := podOf(from)
			p.Status.Conditions = p.Status.Conditions[:1]
			return p
		}, step: StepMarkReady},
		{name: "gate True: nothing", pod: func() *corev1.Pod { return podOf(from) }, step: StepNone},
		{name: "began, still Ready (in endpoints): wait", pod: func() *corev1.Pod {
			p := podOf(from)
			begin(p)
			return p
		}, after: time.Second, step: StepNone},
		{name: "began, not Ready any more: patch", pod: func() *corev1.Pod {
			p := podOf(from)
			begin(p)
			setReady(p, false)
			return p
		}, after: time.Second, step: StepPatch},
		{name: "patched, the kubelet has not restarted it: wait", pod: func() *corev1.Pod {
			p := podOf(from)
			begin(p)
			setReady(p, false)
			patched(p)
			return p
		}, after: time.Second, step: StepNone},
		{name: "patched, restarted, but the resize is in progress: wait", pod: func() *corev1.Pod {
			p := podOf(from)
			begin(p)
			setReady(p, false)
			patched(p)
			restarted(p)
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue})
			return p
		}, after: time.Second, step: StepNone},
		{name: "patched and restarted with the new image and resources: mark ready", pod: func() *corev1.Pod {
			p := podOf(from)
			begin(p)
			setReady(p, false)
			patched(p)
			restarted(p)
			return p
		}, after: time.Second, step: StepMarkReady},
		{name: "the kubelet has not observed the new generation: wait", pod: func() *corev1.Pod {
			p := podOf(from)
			begin(p)
			setReady(p, false)
			patched(p)
			restarted(p)
			p.Generation, p.Status.ObservedGeneration = 3, 2
			return p
		}, after: time.Second, step: StepNone},
		{name: "resize Infeasible: fail", pod: func() *corev1.Pod {
			p := podOf(from)
			begin(p)
			setReady(p, false)
			patched(p)
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodResizePending,
				Status: corev1.ConditionTrue, Reason: corev1.PodReasonInfeasible, Message: "Node didn't have enough capacity: cpu"})
			return p
		}, after: time.Second, step: StepFail, why: "Infeasible: Node didn't have enough capacity: cpu"},
		{name: "image never reported: fail after the timeout", pod: func() *corev1.Pod {
			p := podOf(from)
			begin(p)
			setReady(p, false)
			patched(p)
			return p
		}, after: time.Minute, step: StepFail, why: "did not report the new images"},
		{name: "never left endpoints: fail after the timeout", pod: func() *corev1.Pod {
			p := podOf(from)
			begin(p)
			return p
		}, after: time.Minute, step: StepFail, why: "never left Service endpoints"},
		{name: "failed: nothing more (the planner replaces it)", pod: func() *corev1.Pod {
			p := podOf(from)
			begin(p)
			Condition(p).Reason = ReasonFailed
			return p
		}, after: time.Hour, step: StepNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			step, why := Next(tc.pod(), to, t0.Add(tc.after), time.Minute)
			if step != tc.step || !strings.Contains(why, tc.why) {
				t.Fatalf("Next = %d %q, want %d %q", step, why, tc.step, tc.why)
			}
		})
	}
}
