package rollout

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// Revisions used throughout the tests.
const (
	revNew  = "app-new"
	revOld  = "app-old"
	revOld2 = "app-older"
)

// t0 is the fixed "now" of the table tests.
var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// podOpt adjusts a test pod.
type podOpt func(*corev1.Pod)

// mkPod returns a pod of revision rev that is available under any
// minReadySeconds up to an hour at t0: Running on its own node, Ready since
// t0-1h, created at t0-2h. Options change that.
func mkPod(name, rev string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:              name,
			Namespace:         "default",
			UID:               types.UID("uid-" + name),
			Labels:            map[string]string{appsv1.ControllerRevisionHashLabelKey: rev},
			CreationTimestamp: metav1.NewTime(t0.Add(-2 * time.Hour)),
		},
		Spec: corev1.PodSpec{NodeName: "node-" + name},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{
				Type:               corev1.PodReady,
				Status:             corev1.ConditionTrue,
				LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour)),
			}},
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// notReady makes the pod Running but not Ready.
func notReady(p *corev1.Pod) {
	p.Status.Conditions[0].Status = corev1.ConditionFalse
}

// pending makes the pod freshly created: Pending, unscheduled, not Ready.
func pending(p *corev1.Pod) {
	notReady(p)
	p.Status.Phase = corev1.PodPending
	p.Spec.NodeName = ""
}

// unscheduled removes the node assignment only.
func unscheduled(p *corev1.Pod) { p.Spec.NodeName = "" }

// phase sets the pod phase.
func phase(ph corev1.PodPhase) podOpt {
	return func(p *corev1.Pod) { p.Status.Phase = ph }
}

// terminating marks the pod as being deleted.
func terminating(p *corev1.Pod) {
	ts := metav1.NewTime(t0.Add(-time.Second))
	p.DeletionTimestamp = &ts
}

// readyFor makes the pod Ready since t0-d.
func readyFor(d time.Duration) podOpt {
	return func(p *corev1.Pod) {
		p.Status.Conditions[0].Status = corev1.ConditionTrue
		p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(t0.Add(-d))
	}
}

// onNode schedules the pod on node n.
func onNode(n string) podOpt {
	return func(p *corev1.Pod) { p.Spec.NodeName = n }
}

// createdAgo sets the creation timestamp to t0-d.
func createdAgo(d time.Duration) podOpt {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t0.Add(-d)) }
}

// restarts gives the pod one container that restarted n times.
func restarts(n int32) podOpt {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", RestartCount: n}}
	}
}

// cost sets the pod-deletion-cost annotation verbatim.
func cost(v string) podOpt {
	return func(p *corev1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[corev1.PodDeletionCost] = v
	}
}

// labelled marks the pod specified-delete.
func labelled(p *corev1.Pod) {
	p.Labels[appsv1beta1.SpecifiedDeleteLabel] = "true"
}

// pods builds n pods named prefix-0..n-1, all with the same options.
func pods(prefix, rev string, n int, opts ...podOpt) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = mkPod(prefix+"-"+strconv.Itoa(i), rev, opts...)
	}
	return out
}

// names returns the pods' names, in order.
func names(ps []*corev1.Pod) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Name
	}
	return out
}

// join concatenates pod lists.
func join(lists ...[]*corev1.Pod) []*corev1.Pod { return slices.Concat(lists...) }

// describe renders a plan compactly for failure messages.
func describe(p Plan) string {
	return fmt.Sprintf("create=%v delete=%v evict=%v inPlace=%v moving=%v requeue=%v reason=%s sizedFor=%+v record=%v recordFirst=%v",
		p.Create, names(p.Delete), names(p.Evict), names(p.UpdateInPlace), names(p.MovingInPlace), p.RequeueAfter, p.Reason, p.SizedFor,
		p.RecordSize, p.RecordFirst)
}
