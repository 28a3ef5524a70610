package main

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// benchPod is a running pod of object "obj", Ready as given, with the
// in-place gate condition when gate is not "".
func benchPod(i int, ready corev1.ConditionStatus, gate corev1.ConditionStatus) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("obj-%d", i), UID: types.UID(fmt.Sprint(i)),
			Labels: map[string]string{objectLabel: "obj"}},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: imageV1}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}},
	}
	if gate != "" {
		pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: inPlaceGate, Status: gate})
	}
	return pod
}

// TestTrackerInPlaceBounds walks an in-place update of 4 replicas
// (maxUnavailable 1) as the watch sees it: a pod whose gate turned False is
// unavailable while the kubelet still says Ready, so a second one at once
// breaks the bounds; a pod that appears is counted as recreated.
func TestTrackerInPlaceBounds(t *testing.T) {
	tr := newTracker()
	h := tr.handler()
	for i := range 4 {
		h.OnAdd(benchPod(i, corev1.ConditionTrue, corev1.ConditionTrue), true)
	}
	tr.mark()
	tr.checkInvariants(&bounds{maxLive: 4, minReady: 3})

	steps := []struct {
		name           string
		pod            *corev1.Pod
		wantViolations int
	}{
		{"pod 0 starts (gate False, still Ready): 3 available", benchPod(0, corev1.ConditionTrue, corev1.ConditionFalse), 0},
		{"pod 1 starts too: 2 available, below 3", benchPod(1, corev1.ConditionTrue, corev1.ConditionFalse), 1},
		{"pod 1 back (gate True)", benchPod(1, corev1.ConditionTrue, corev1.ConditionTrue), 1},
		{"pod 0 not Ready, gate True: still unavailable, within bounds", benchPod(0, corev1.ConditionFalse, corev1.ConditionTrue), 1},
		{"pod 0 done", benchPod(0, corev1.ConditionTrue, corev1.ConditionTrue), 1},
		{"a fifth pod: more than 4 live", benchPod(4, corev1.ConditionTrue, corev1.ConditionTrue), 2},
	}
	for _, st := range steps {
		h.OnUpdate(nil, st.pod)
		tr.mu.Lock()
		got := tr.violations
		tr.mu.Unlock()
		if got != st.wantViolations {
			t.Errorf("%s: %d violations, want %d", st.name, got, st.wantViolations)
		}
	}
	if created, deleted := tr.churn(); created != 1 || deleted != 0 {
		t.Errorf("churn = %d created, %d deleted; want the fifth pod only", created, deleted)
	}
	if v, ex := tr.checkInvariants(nil); v != 2 || len(ex) != 2 {
		t.Errorf("checkInvariants returned %d, %v; want both breaches", v, ex)
	}
}
