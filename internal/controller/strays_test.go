package controller

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/ownership"
	"github.com/mydeployment-io/mydeployment-operator/internal/podwatch"
)

// TestStrayHandler: which pod DELETE events name a pod to read again, and
// that the wrapped handler still sees every event. The envtest proof is
// ownership_test.go; this pins the choice per event.
func TestStrayHandler(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 25, 7, 0, 0, 0, time.UTC))
	ours := metav1.OwnerReference{APIVersion: appsv1beta1.GroupVersion.String(), Kind: "MyDeployment",
		Name: "web", UID: "md-uid", Controller: ptr.To(true)}
	pod := func(change func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1", UID: "pod-uid",
			Labels:          map[string]string{"app": "web", appsv1beta1.RevisionLabel: "web-1", appsv1beta1.PodTemplateHashLabel: "1"},
			OwnerReferences: []metav1.OwnerReference{ours}}}
		change(p)
		return p
	}
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		unknown bool
		want    bool
	}{
		// The watch reports a pod that left its selector with its previous
		// labels: not terminating is what tells it from a graceful deletion.
		{"left the selector (or deleted at once)", pod(func(*corev1.Pod) {}), false, true},
		{"deleted gracefully", pod(func(p *corev1.Pod) { p.DeletionTimestamp = &now }), false, false},
		{"missed: a tombstone", pod(func(p *corev1.Pod) { p.DeletionTimestamp = &now }), true, true},
		{"an orphan", pod(func(p *corev1.Pod) { p.OwnerReferences = nil }), false, false},
		{"another kind's", pod(func(p *corev1.Pod) { p.OwnerReferences[0].Kind = "ReplicaSet" }), false, false},
		{"another group's MyDeployment", pod(func(p *corev1.Pod) { p.OwnerReferences[0].APIVersion = "example.com/v1" }), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &MyDeploymentReconciler{objects: newObjects(0)}
			inner := 0
			h := podDeletes{handler.Funcs{DeleteFunc: func(context.Context, event.DeleteEvent, podwatch.Queue) { inner++ }}, r}
			h.Delete(context.Background(), event.DeleteEvent{Object: tc.pod, DeleteStateUnknown: tc.unknown}, nil)
			if inner != 1 {
				t.Errorf("the wrapped handler saw %d events, want 1", inner)
			}
			var got map[types.UID]ownership.Stray
			if obj := r.objects.lookup("md-uid"); obj != nil {
				got = obj.TakeStrays()
			}
			if (len(got) == 1) != tc.want {
				t.Fatalf("remembered %v, want a stray: %v", got, tc.want)
			}
			if tc.want && got["pod-uid"] != (ownership.Stray{Name: "web-1", Owner: "md-uid"}) {
				t.Errorf("remembered %+v", got)
			}
		})
	}
}
