package rollout

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTimeUntilAvailable(t *testing.T) {
	noTransition := func(p *corev1.Pod) { p.Status.Conditions[0].LastTransitionTime = metav1.Time{} }
	cases := []struct {
		name     string
		pod      *corev1.Pod
		minReady int32
		wantD    time.Duration
		wantOK   bool
	}{
		{"nil pod", nil, 0, 0, false},
		{"ready, no minReadySeconds", mkPod("a", revNew, readyFor(0)), 0, 0, true},
		{"ready long enough", mkPod("a", revNew, readyFor(10*time.Second)), 10, 0, true},
		{"ready too recently", mkPod("a", revNew, readyFor(4*time.Second)), 10, 6 * time.Second, true},
		{"ready in the future (clock skew) waits the full remainder", mkPod("a", revNew, readyFor(-2*time.Second)), 10, 12 * time.Second, true},
		{"not ready", mkPod("a", revNew, notReady), 0, 0, false},
		{"no Ready condition", mkPod("a", revNew, func(p *corev1.Pod) { p.Status.Conditions = nil }), 0, 0, false},
		{"terminating", mkPod("a", revNew, terminating), 0, 0, false},
		{"succeeded", mkPod("a", revNew, phase(corev1.PodSucceeded)), 0, 0, false},
		{"failed", mkPod("a", revNew, phase(corev1.PodFailed)), 0, 0, false},
		{"unknown transition time, no minReadySeconds", mkPod("a", revNew, noTransition), 0, 0, true},
		{"unknown transition time never becomes available", mkPod("a", revNew, noTransition), 5, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, ok := TimeUntilAvailable(tc.pod, tc.minReady, t0)
			if d != tc.wantD || ok != tc.wantOK {
				t.Fatalf("got (%v, %v), want (%v, %v)", d, ok, tc.wantD, tc.wantOK)
			}
			if got, want := IsAvailable(tc.pod, tc.minReady, t0), tc.wantOK && tc.wantD == 0; got != want {
				t.Fatalf("IsAvailable = %v, want %v", got, want)
			}
		})
	}
}

func TestCount(t *testing.T) {
	ps := []*corev1.Pod{
		mkPod("new-available", revNew),
		mkPod("new-warming", revNew, readyFor(2*time.Second)),
		mkPod("new-pending", revNew, pending),
		mkPod("old-available", revOld),
		mkPod("old-unready", revOld, notReady),
		mkPod("old-terminating", revOld, terminating),
		mkPod("new-terminating", revNew, terminating),
		mkPod("failed", revNew, phase(corev1.PodFailed)),
		mkPod("failed-terminating", revNew, phase(corev1.PodFailed), terminating),
		mkPod("succeeded", revOld, phase(corev1.PodSucceeded)),
		nil,
	}
	got := Count(ps, revNew, 5, t0)
	want := Counts{Replicas: 5, Ready: 3, Available: 2, Updated: 3, Terminating: 2}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if got := Count(ps, revNew, 0, t0); got.Available != 3 {
		t.Fatalf("without minReadySeconds every ready active pod is available, got %+v", got)
	}
}
