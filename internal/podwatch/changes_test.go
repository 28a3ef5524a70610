package podwatch

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func TestPodChanged(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC))
	base := func() *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: "p", Namespace: "ns", UID: "u", ResourceVersion: "1",
				Labels:          map[string]string{"app": "a", "controller-revision-hash": "r1"},
				OwnerReferences: []metav1.OwnerReference{{UID: types.UID("owner"), Name: "md", Controller: ptr.To(true)}},
			},
			Status: corev1.PodStatus{Phase: corev1.PodPending},
		}
	}
	ready := func(p *corev1.Pod, s corev1.ConditionStatus, at metav1.Time) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: s, LastTransitionTime: at}}
	}
	for _, tc := range []struct {
		name   string
		change func(*corev1.Pod)
		want   bool
	}{
		{"resync: nothing changed", func(*corev1.Pod) {}, false},
		{"bound to a node", func(p *corev1.Pod) { p.Spec.NodeName = "node-1"; p.ResourceVersion = "2" }, false},
		{"a container restarted", func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", RestartCount: 1}}
		}, false},
		{"running", func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning }, true},
		{"ready", func(p *corev1.Pod) { ready(p, corev1.ConditionTrue, t0) }, true},
		{"being deleted", func(p *corev1.Pod) { p.DeletionTimestamp = &t0 }, true},
		{"relabelled", func(p *corev1.Pod) { p.Labels["controller-revision-hash"] = "r2" }, true},
		{"released", func(p *corev1.Pod) { p.OwnerReferences = nil }, true},
		{"deletion cost set", func(p *corev1.Pod) {
			p.Annotations = map[string]string{corev1.PodDeletionCost: "10"}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, new := base(), base()
			tc.change(new)
			if got := Changed(old, new); got != tc.want {
				t.Errorf("Changed = %v, want %v", got, tc.want)
			}
		})
	}

	t.Run("ready again, later", func(t *testing.T) {
		old, new := base(), base()
		ready(old, corev1.ConditionTrue, t0)
		ready(new, corev1.ConditionTrue, metav1.NewTime(t0.Add(time.Minute)))
		if !Changed(old, new) {
			t.Error("a new Ready transition time moves availability: want changed")
		}
	})
	t.Run("same pointer", func(t *testing.T) {
		p := base()
		if Changed(p, p) {
			t.Error("the same object: want unchanged")
		}
	})
}
