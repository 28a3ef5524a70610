package controller

import (
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/inplace"
)

// The status a sync writes counts the in-place updates it began as the
// next sync's cache will show them: on their way to the update revision
// and not ready. Counted from the cache alone, the status written in the
// sync that starts a batch still says the batch's pods are ready and not
// updated, and the next sync writes it again (issue 31).
func TestStatusCountsInPlaceStarts(t *testing.T) {
	now := time.Date(2026, 11, 28, 1, 0, 0, 0, time.UTC)
	pod := func(name, rev string, gate corev1.ConditionStatus, reason string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
			Labels: map[string]string{"app": "web", appsv1beta1.RevisionLabel: rev}},
			Spec: corev1.PodSpec{ReadinessGates: []corev1.PodReadinessGate{{ConditionType: inplace.Gate}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Minute))},
				{Type: inplace.Gate, Status: gate, Reason: reason}}}}
		return p
	}
	md := &appsv1beta1.MyDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Generation: 2},
		Spec: appsv1beta1.MyDeploymentSpec{Replicas: ptr.To[int32](4)}}
	pods := []*corev1.Pod{
		pod("a", "web-1", corev1.ConditionTrue, inplace.ReasonReady),
		pod("b", "web-1", corev1.ConditionTrue, inplace.ReasonReady),
		pod("c", "web-1", corev1.ConditionTrue, inplace.ReasonReady),
		pod("d", "web-2", corev1.ConditionTrue, inplace.ReasonReady),
	}
	o := &observation{md: md, now: now, selector: labels.SelectorFromSet(labels.Set{"app": "web"})}
	c := &claimed{pods: pods, update: &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "web-2"}}}
	p, out := &syncPlan{}, &outcome{planned: true}
	counts := func() []int32 {
		c := statusInput(o, c, p, out, true).Counts
		return []int32{c.Replicas, c.Updated, c.Ready, c.Available}
	}
	if got, want := counts(), []int32{4, 1, 4, 4}; !slices.Equal(got, want) {
		t.Fatalf("before any start: replicas, updated, ready, available = %v, want %v", got, want)
	}

	// This sync set b's and c's gates False.
	out.startedInPlace = []*corev1.Pod{pods[1], pods[2]}
	written := counts()
	if want := []int32{4, 3, 2, 2}; !slices.Equal(written, want) {
		t.Fatalf("the sync that started 2: %v, want %v", written, want)
	}

	// The next sync: the cache shows their gates False, the planner has
	// them on their way; the status is the one already written.
	next := []*corev1.Pod{pods[0],
		pod("b", "web-1", corev1.ConditionFalse, inplace.ReasonUpdating),
		pod("c", "web-1", corev1.ConditionFalse, inplace.ReasonUpdating), pods[3]}
	c = &claimed{pods: next, update: c.update}
	p, out = &syncPlan{}, &outcome{planned: true}
	p.MovingInPlace = next[1:3]
	if got := counts(); !slices.Equal(got, written) {
		t.Errorf("the next sync counts %v, the starting sync wrote %v: one more status write", got, written)
	}
}
