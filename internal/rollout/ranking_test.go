package rollout

import (
	"reflect"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// equalPods compares two pods field by field.
func equalPods(a, b *corev1.Pod) bool { return reflect.DeepEqual(a, b) }

func TestRankingOrder(t *testing.T) {
	sidecar := corev1.ContainerRestartPolicyAlways
	withSidecarRestarts := func(n int32) podOpt {
		return func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "proxy", RestartPolicy: &sidecar}, {Name: "init"}}
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "proxy", RestartCount: n}, {Name: "init", RestartCount: 100}}
		}
	}
	cases := []struct {
		name string
		pods []*corev1.Pod // in expected order, most deletable first
	}{
		{"unscheduled before scheduled", []*corev1.Pod{
			mkPod("z", revNew, unscheduled), mkPod("a", revNew)}},
		{"pending before unknown before running", []*corev1.Pod{
			mkPod("c", revNew, phase(corev1.PodPending)), mkPod("b", revNew, phase(corev1.PodUnknown)), mkPod("a", revNew)}},
		{"empty phase ranks as pending", []*corev1.Pod{
			mkPod("b", revNew, phase("")), mkPod("a", revNew, phase(corev1.PodUnknown))}},
		{"not ready before ready", []*corev1.Pod{
			mkPod("b", revNew, notReady), mkPod("a", revNew)}},
		{"readiness beats deletion cost", []*corev1.Pod{
			mkPod("b", revNew, notReady, cost("100")), mkPod("a", revNew, cost("-100"))}},
		{"lower deletion cost first", []*corev1.Pod{
			mkPod("c", revNew, cost("-2147483648")), mkPod("b", revNew, cost("-1")), mkPod("a", revNew, cost("7"))}},
		{"invalid deletion costs count as zero", []*corev1.Pod{
			mkPod("d", revNew, cost("-1")),
			mkPod("a", revNew, cost("+5")), mkPod("b", revNew, cost("007")), mkPod("c", revNew, cost("2147483648")),
			mkPod("e", revNew, cost("1"))}},
		{"deletion cost beats co-location", []*corev1.Pod{
			mkPod("c", revNew, cost("-1"), onNode("n2")), mkPod("a", revNew, onNode("n1")), mkPod("b", revNew, onNode("n1"))}},
		{"doubled-up before alone", []*corev1.Pod{
			mkPod("b", revNew, onNode("n1")), mkPod("c", revNew, onNode("n1")), mkPod("a", revNew, onNode("n2"))}},
		{"ready for less time first", []*corev1.Pod{
			mkPod("a", revNew, readyFor(time.Minute)), mkPod("b", revNew, readyFor(time.Hour))}},
		{"unknown ready time first", []*corev1.Pod{
			mkPod("b", revNew, readyFor(0), func(p *corev1.Pod) { p.Status.Conditions[0].LastTransitionTime.Time = time.Time{} }),
			mkPod("a", revNew, readyFor(time.Second))}},
		{"ready time beats restarts", []*corev1.Pod{
			mkPod("b", revNew, readyFor(time.Minute)), mkPod("a", revNew, restarts(50))}},
		{"more restarts first", []*corev1.Pod{
			mkPod("b", revNew, restarts(3)), mkPod("a", revNew, restarts(1)), mkPod("c", revNew)}},
		{"sidecar restarts break a tie, other init containers do not count", []*corev1.Pod{
			mkPod("b", revNew, withSidecarRestarts(2)), mkPod("a", revNew, withSidecarRestarts(0))}},
		{"newer before older, unknown creation time first", []*corev1.Pod{
			mkPod("c", revNew, func(p *corev1.Pod) { p.CreationTimestamp.Time = time.Time{} }),
			mkPod("b", revNew, createdAgo(time.Minute)), mkPod("a", revNew, createdAgo(time.Hour))}},
		{"ties broken by name", []*corev1.Pod{
			mkPod("a", revNew), mkPod("b", revNew), mkPod("c", revNew)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := names(tc.pods)
			r := newRanker(tc.pods)
			for _, input := range [][]*corev1.Pod{tc.pods, reversedCopy(tc.pods)} {
				if got := names(r.sorted(input)); !slices.Equal(got, want) {
					t.Fatalf("got %v, want %v", got, want)
				}
			}
		})
	}
}

// TestRankingCountsOnlyActivePodsForCoLocation mirrors getPodsRankedByRelatedPodsOnSameNode.
func TestRankingCountsOnlyActivePodsForCoLocation(t *testing.T) {
	a := mkPod("a", revNew, onNode("n1"))
	b := mkPod("b", revNew, onNode("n2"))
	related := []*corev1.Pod{a, b,
		mkPod("gone", revNew, onNode("n1"), terminating), mkPod("done", revNew, onNode("n1"), phase(corev1.PodSucceeded)),
		mkPod("other", revOld, onNode("n2")),
	}
	if got := names(newRanker(related).sorted([]*corev1.Pod{a, b})); !slices.Equal(got, []string{"b", "a"}) {
		t.Fatalf("got %v, want b (shares n2 with an active pod of another revision) first", got)
	}
}

func reversedCopy(ps []*corev1.Pod) []*corev1.Pod {
	out := slices.Clone(ps)
	slices.Reverse(out)
	return out
}
