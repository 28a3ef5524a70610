package controller

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
)

// A step written for a pod is not written again while the cache still
// shows the pod as it was when the step was written; once it shows a newer
// version, or the entry is older than writtenStepTTL, the step's next
// decision is the planner's again.
func TestWrittenSteps(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC)
	pod := func(uid, rv string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, UID: k8stypes.UID("uid-" + uid), ResourceVersion: rv}}
	}
	var w writtenSteps
	if w.pending(pod("a", "1"), t0) {
		t.Fatal("nothing written yet, but pod a is pending")
	}
	w.written(pod("a", "1"), t0)
	if !w.pending(pod("a", "1"), t0.Add(time.Second)) {
		t.Error("a step written at version 1 is not pending while the cache still shows version 1")
	}
	if w.pending(pod("b", "1"), t0.Add(time.Second)) {
		t.Error("another pod is pending")
	}
	if w.pending(pod("a", "2"), t0.Add(time.Second)) {
		t.Error("the cache shows version 2, but the step written at version 1 is still pending")
	}
	if w.pending(pod("a", "1"), t0.Add(2*time.Second)) {
		t.Error("an entry seen stale is not forgotten")
	}
	w.written(pod("c", "7"), t0)
	if w.pending(pod("c", "7"), t0.Add(writtenStepTTL)) {
		t.Error("a step whose event never came is pending beyond writtenStepTTL")
	}
}
