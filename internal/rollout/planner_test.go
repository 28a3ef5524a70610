package rollout

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// planCase is one observed state and the step the planner must take from it.
// Cases named "(step k/n)" are consecutive snapshots of one rollout.
type planCase struct {
	name string
	in   Input // Now defaults to t0

	wantCreate  int32
	wantDelete  []string
	wantReason  Reason
	wantRequeue time.Duration
}

func runPlanCases(t *testing.T, cases []planCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			if in.Now.IsZero() {
				in.Now = t0
			}
			if in.UpdateRevision == "" {
				in.UpdateRevision = revNew
			}
			got := Compute(in)
			if got.Create != tc.wantCreate || !slices.Equal(names(got.Delete), tc.wantDelete) ||
				got.Reason != tc.wantReason || got.RequeueAfter != tc.wantRequeue {
				t.Fatalf("got  %s\nwant create=%d delete=%v requeue=%v reason=%s",
					describe(got), tc.wantCreate, tc.wantDelete, tc.wantRequeue, tc.wantReason)
			}
			checkPlan(t, in, got)
		})
	}
}

func TestComputeRollingUpdate(t *testing.T) {
	runPlanCases(t, []planCase{
		// maxSurge=1 maxUnavailable=0: surge one pod, wait for it, then retire one old pod.
		{
			name:       "rolling maxSurge=1 maxUnavailable=0 (step 1/4): surge one new pod",
			in:         Input{Replicas: 4, MaxSurge: 1, Pods: pods("old", revOld, 4)},
			wantCreate: 1, wantReason: ReasonRollingUpdate,
		},
		{
			name:       "rolling maxSurge=1 maxUnavailable=0 (step 2/4): new pod not ready, nothing to do",
			in:         Input{Replicas: 4, MaxSurge: 1, Pods: join(pods("old", revOld, 4), pods("new", revNew, 1, notReady))},
			wantReason: ReasonRollingUpdateWait,
		},
		{
			name:       "rolling maxSurge=1 maxUnavailable=0 (step 3/4): new pod available, delete one old",
			in:         Input{Replicas: 4, MaxSurge: 1, Pods: join(pods("old", revOld, 4), pods("new", revNew, 1))},
			wantDelete: []string{"old-0"}, wantReason: ReasonRollingUpdate,
		},
		{
			name: "rolling maxSurge=1 maxUnavailable=0 (step 4/4): terminating old pod leaves room for the next new one",
			in: Input{Replicas: 4, MaxSurge: 1, Pods: join(
				pods("old", revOld, 4)[1:], pods("gone", revOld, 1, terminating), pods("new", revNew, 1))},
			wantCreate: 1, wantReason: ReasonRollingUpdate,
		},

		// maxSurge=0 maxUnavailable=1: retire first, then replace.
		{
			name:       "rolling maxSurge=0 maxUnavailable=1 (step 1/3): delete one old pod first",
			in:         Input{Replicas: 4, MaxUnavailable: 1, Pods: pods("old", revOld, 4)},
			wantDelete: []string{"old-0"}, wantReason: ReasonRollingUpdate,
		},
		{
			name:       "rolling maxSurge=0 maxUnavailable=1 (step 2/3): replace the deleted pod",
			in:         Input{Replicas: 4, MaxUnavailable: 1, Pods: join(pods("old", revOld, 4)[1:], pods("gone", revOld, 1, terminating))},
			wantCreate: 1, wantReason: ReasonRollingUpdate,
		},
		{
			name:       "rolling maxSurge=0 maxUnavailable=1 (step 3/3): unavailable new pod blocks further deletion",
			in:         Input{Replicas: 4, MaxUnavailable: 1, Pods: join(pods("old", revOld, 4)[1:], pods("new", revNew, 1, pending))},
			wantReason: ReasonRollingUpdateWait,
		},

		{
			name:       "rolling 25%/25% of 10 (3/2): first step surges 3 and retires 2",
			in:         Input{Replicas: 10, MaxSurge: 3, MaxUnavailable: 2, Pods: pods("old", revOld, 10)},
			wantCreate: 3, wantDelete: []string{"old-0", "old-1"}, wantReason: ReasonRollingUpdate,
		},
		{
			name: "rolling deletes unavailable old pods before available ones",
			in: Input{Replicas: 3, MaxSurge: 1, Pods: join(
				pods("old", revOld, 3), pods("sick", revOld, 1, notReady), pods("new", revNew, 1))},
			// active 5, minAvailable 3, available 4: one unhealthy plus one available may go.
			wantDelete: []string{"sick-0", "old-0"}, wantReason: ReasonRollingUpdate,
		},
		{
			name: "rolling never deletes an available pod when availability is already below minimum",
			in: Input{Replicas: 3, MaxSurge: 1, MaxUnavailable: 1, Pods: join(
				pods("old", revOld, 1), pods("sick", revOld, 2, notReady))},
			// available 1 < minAvailable 2: only an unhealthy pod may go, up to maxScaledDown=1.
			wantCreate: 1, wantDelete: []string{"sick-0"}, wantReason: ReasonRollingUpdate,
		},
		{
			name: "rolling crash-looping new pods hold back old scale-down",
			in: Input{Replicas: 10, MaxSurge: 3, MaxUnavailable: 2, Pods: join(
				pods("old", revOld, 7), pods("sick", revOld, 1, notReady), pods("new", revNew, 5, restarts(9), notReady))},
			wantReason: ReasonRollingUpdateWait,
		},
		{
			name: "rolling rollback frees crash-looping pods (k8s reconcileOldReplicaSets case 1)",
			in: Input{Replicas: 10, MaxSurge: 3, MaxUnavailable: 2, UpdateRevision: revOld, Pods: join(
				pods("old", revOld, 7), pods("sick", revOld, 1, notReady), pods("new", revNew, 5, restarts(9), notReady))},
			wantDelete: []string{"new-0", "new-1", "new-2", "new-3"}, wantReason: ReasonRollingUpdate,
		},
		{
			name: "rolling roll-over to a third revision deletes the broken intermediate one",
			in: Input{Replicas: 10, MaxSurge: 3, MaxUnavailable: 2, UpdateRevision: "app-third", Pods: join(
				pods("old", revOld, 8), pods("new", revNew, 5, notReady))},
			wantDelete: []string{"new-0", "new-1", "new-2", "new-3", "new-4"}, wantReason: ReasonRollingUpdate,
		},
		{
			name: "rolling scale up mid-rollout creates up to surge",
			in: Input{Replicas: 6, MaxSurge: 1, Pods: join(
				pods("old", revOld, 3), pods("new", revNew, 2))},
			wantCreate: 2, wantReason: ReasonRollingUpdate,
		},
		{
			name: "rolling scale down mid-rollout removes surplus new and old pods within availability",
			in: Input{Replicas: 3, MaxSurge: 1, Pods: join(
				pods("old", revOld, 6), pods("new", revNew, 4), pods("fresh", revNew, 1, notReady))},
			wantDelete: []string{"old-0", "old-1", "old-2", "old-3", "old-4", "old-5", "fresh-0", "new-0"},
			wantReason: ReasonRollingUpdate,
		},
		{
			name: "rolling scale down mid-rollout keeps minAvailable when new pods are not ready",
			in: Input{Replicas: 3, MaxSurge: 1, Pods: join(
				pods("old", revOld, 6), pods("new", revNew, 5, notReady))},
			// Two surplus unready new pods go free; then 3 old ones, keeping 3 available.
			wantDelete: []string{"old-0", "old-1", "old-2", "new-0", "new-1"}, wantReason: ReasonRollingUpdate,
		},
		{
			name:       "rolling to zero replicas deletes everything",
			in:         Input{Replicas: 0, MaxSurge: 1, Pods: join(pods("old", revOld, 2), pods("new", revNew, 1, notReady))},
			wantDelete: []string{"old-0", "old-1", "new-0"}, wantReason: ReasonRollingUpdate,
		},
		{
			name:       "rolling with unresolved 0/0 behaves as maxUnavailable=1",
			in:         Input{Replicas: 2, Pods: pods("old", revOld, 2)},
			wantDelete: []string{"old-0"}, wantReason: ReasonRollingUpdate,
		},
		{
			name:       "rolling maxUnavailable above replicas is clamped: all old pods may go at once",
			in:         Input{Replicas: 2, MaxUnavailable: 5, Pods: pods("old", revOld, 2)},
			wantDelete: []string{"old-0", "old-1"}, wantReason: ReasonRollingUpdate,
		},
		{
			name: "rolling ignores terminating pods for surge and finishes with plain scaling",
			in: Input{Replicas: 2, MaxSurge: 1, Pods: join(
				pods("gone", revOld, 2, terminating), pods("new", revNew, 1))},
			wantCreate: 1, wantReason: ReasonScaleUp,
		},
	})
}

func TestComputeRecreate(t *testing.T) {
	runPlanCases(t, []planCase{
		{
			name:       "recreate (step 1/3) deletes every active old pod and creates nothing",
			in:         Input{Replicas: 3, Recreate: true, Pods: join(pods("old", revOld, 2), pods("sick", revOld2, 1, pending))},
			wantDelete: []string{"sick-0", "old-0", "old-1"}, wantReason: ReasonRecreateDeleteOld,
		},
		{
			name:       "recreate (step 2/3) waits for terminating old pods",
			in:         Input{Replicas: 3, Recreate: true, Pods: pods("old", revOld, 1, terminating)},
			wantReason: ReasonRecreateWait,
		},
		{
			name:       "recreate (step 3/3) creates all new pods once old pods are gone",
			in:         Input{Replicas: 3, Recreate: true},
			wantCreate: 3, wantReason: ReasonScaleUp,
		},
		{
			name:       "recreate waits for a terminating old pod in phase Unknown",
			in:         Input{Replicas: 1, Recreate: true, Pods: pods("old", revOld, 1, terminating, phase(corev1.PodUnknown))},
			wantReason: ReasonRecreateWait,
		},
		{
			name: "recreate is not blocked by finished old pods, and deletes them",
			in: Input{Replicas: 2, Recreate: true, Pods: join(
				pods("done", revOld, 1, phase(corev1.PodSucceeded)), pods("dead", revOld, 1, phase(corev1.PodFailed), terminating))},
			wantCreate: 2, wantDelete: []string{"done-0"}, wantReason: ReasonScaleUp,
		},
		{
			name: "recreate deletes surplus new pods while old ones terminate",
			in: Input{Replicas: 1, Recreate: true, Pods: join(
				pods("old", revOld, 1, terminating), pods("new", revNew, 3))},
			wantDelete: []string{"new-0", "new-1"}, wantReason: ReasonRecreateWait,
		},
		{
			name:       "recreate ignores maxSurge and maxUnavailable",
			in:         Input{Replicas: 4, Recreate: true, MaxSurge: 1, Pods: pods("old", revOld, 4)},
			wantDelete: []string{"old-0", "old-1", "old-2", "old-3"}, wantReason: ReasonRecreateDeleteOld,
		},
	})
}

func TestComputePaused(t *testing.T) {
	runPlanCases(t, []planCase{
		{
			name:       "paused scale up creates update revision",
			in:         Input{Replicas: 5, MaxSurge: 1, Paused: true, Pods: pods("old", revOld, 3)},
			wantCreate: 2, wantReason: ReasonPausedScaleUp,
		},
		{
			name:       "paused does not replace old pods",
			in:         Input{Replicas: 3, MaxUnavailable: 3, Paused: true, Pods: pods("old", revOld, 3)},
			wantReason: ReasonPaused,
		},
		{
			name: "paused mid-rollout keeps its surge pods",
			in: Input{Replicas: 4, MaxSurge: 1, Paused: true, Pods: join(
				pods("old", revOld, 4), pods("new", revNew, 1))},
			wantReason: ReasonPaused,
		},
		{
			name: "paused scale down mid-rollout deletes beyond replicas+maxSurge, old-revision pods first",
			in: Input{Replicas: 2, MaxSurge: 1, Paused: true, Pods: join(
				pods("new", revNew, 2, notReady), pods("old", revOld, 3))},
			wantDelete: []string{"old-0", "old-1"}, wantReason: ReasonPausedScaleDown,
		},
		{
			name: "paused scale down reaches update-revision pods once old ones are gone",
			in: Input{Replicas: 1, MaxSurge: 1, Paused: true, Pods: join(
				pods("new", revNew, 3), pods("fresh", revNew, 1, pending), pods("old", revOld, 1))},
			// allowed = replicas+maxSurge = 2 while two revisions are active
			wantDelete: []string{"old-0", "fresh-0", "new-0"}, wantReason: ReasonPausedScaleDown,
		},
		{
			name: "paused with a saturated update revision deletes the old pods",
			in: Input{Replicas: 2, MaxSurge: 1, Paused: true, Pods: join(
				pods("new", revNew, 2), pods("old", revOld, 1))},
			wantDelete: []string{"old-0"}, wantReason: ReasonPausedScaleDown,
		},
		{
			name:       "paused single revision scales down to replicas by ranking",
			in:         Input{Replicas: 1, MaxSurge: 1, Paused: true, Pods: join(pods("new", revNew, 2), pods("fresh", revNew, 1, pending))},
			wantDelete: []string{"fresh-0", "new-0"}, wantReason: ReasonPausedScaleDown,
		},
		{
			name:       "paused recreate withholds creation while old pods run",
			in:         Input{Replicas: 3, Recreate: true, Paused: true, Pods: pods("old", revOld, 2)},
			wantReason: ReasonPaused,
		},
		{
			name:       "paused recreate scales up when only update-revision pods exist",
			in:         Input{Replicas: 3, Recreate: true, Paused: true, Pods: pods("new", revNew, 2)},
			wantCreate: 1, wantReason: ReasonPausedScaleUp,
		},
	})
}

func TestComputeScaling(t *testing.T) {
	runPlanCases(t, []planCase{
		{
			name:       "scale up from zero",
			in:         Input{Replicas: 3, MaxSurge: 1},
			wantCreate: 3, wantReason: ReasonScaleUp,
		},
		{
			name:       "in sync does nothing",
			in:         Input{Replicas: 2, MaxSurge: 1, Pods: pods("new", revNew, 2)},
			wantReason: ReasonInSync,
		},
		{
			name: "scale down removes unscheduled then not-ready first",
			in: Input{Replicas: 2, MaxSurge: 1, Pods: []*corev1.Pod{
				mkPod("a-ready", revNew), mkPod("b-unready", revNew, notReady),
				mkPod("c-pending", revNew, pending), mkPod("d-ready", revNew), mkPod("e-unscheduled", revNew, unscheduled),
			}},
			wantDelete: []string{"c-pending", "e-unscheduled", "b-unready"}, wantReason: ReasonScaleDown,
		},
		{
			name: "pod-deletion-cost respected",
			in: Input{Replicas: 1, MaxSurge: 1, Pods: []*corev1.Pod{
				mkPod("a", revNew, cost("10")), mkPod("b", revNew, cost("-5")), mkPod("c", revNew, cost("3")),
			}},
			wantDelete: []string{"b", "c"}, wantReason: ReasonScaleDown,
		},
		{
			name: "scale down removes doubled-up pods first",
			in: Input{Replicas: 2, MaxSurge: 1, Pods: []*corev1.Pod{
				mkPod("a", revNew, onNode("n1")), mkPod("b", revNew, onNode("n2")), mkPod("c", revNew, onNode("n2")),
			}},
			wantDelete: []string{"b"}, wantReason: ReasonScaleDown,
		},
		{
			name: "finished pods are deleted and replaced",
			in: Input{Replicas: 2, MaxSurge: 1, Pods: []*corev1.Pod{
				mkPod("a", revNew), mkPod("c-failed", revNew, phase(corev1.PodFailed)),
				mkPod("b-succeeded", revOld, phase(corev1.PodSucceeded)),
				mkPod("d-failed-terminating", revNew, phase(corev1.PodFailed), terminating),
			}},
			wantCreate: 1, wantDelete: []string{"b-succeeded", "c-failed"}, wantReason: ReasonScaleUp,
		},
		{
			name: "finished pods are deleted even when in sync",
			in: Input{Replicas: 1, MaxSurge: 1, Pods: []*corev1.Pod{
				mkPod("a", revNew), mkPod("b", revNew, phase(corev1.PodFailed)),
			}},
			wantDelete: []string{"b"}, wantReason: ReasonInSync,
		},
		{
			name:       "negative replicas count as zero",
			in:         Input{Replicas: -3, MaxSurge: 1, Pods: pods("new", revNew, 1)},
			wantDelete: []string{"new-0"}, wantReason: ReasonScaleDown,
		},
		{
			name:       "nil pods are ignored",
			in:         Input{Replicas: 1, MaxSurge: 1, Pods: []*corev1.Pod{nil, mkPod("a", revNew), nil}},
			wantReason: ReasonInSync,
		},
	})
}

func TestComputeRequeue(t *testing.T) {
	runPlanCases(t, []planCase{
		{
			name: "minReadySeconds requeue at the soonest availability",
			in: Input{Replicas: 4, MaxSurge: 1, MinReadySeconds: 10, Pods: []*corev1.Pod{
				mkPod("a", revNew, readyFor(3*time.Second)), mkPod("b", revNew, readyFor(8*time.Second)),
				mkPod("c", revNew, readyFor(20*time.Second)), mkPod("d", revNew, notReady),
			}},
			wantRequeue: 2 * time.Second, wantReason: ReasonInSync,
		},
		{
			name: "minReadySeconds counts a pod ready for exactly minReadySeconds as available",
			in: Input{Replicas: 1, MaxSurge: 1, MinReadySeconds: 5, Pods: []*corev1.Pod{
				mkPod("a", revNew, readyFor(5*time.Second)),
			}},
			wantReason: ReasonInSync,
		},
		{
			name: "minReadySeconds: pods not yet available block old scale-down and ask for requeue",
			in: Input{Replicas: 2, MaxSurge: 1, MinReadySeconds: 30, Pods: join(
				pods("old", revOld, 2), pods("new", revNew, 1, readyFor(10*time.Second)))},
			wantRequeue: 20 * time.Second, wantReason: ReasonRollingUpdateWait,
		},
		{
			name: "no requeue without minReadySeconds",
			in: Input{Replicas: 1, MaxSurge: 1, Pods: []*corev1.Pod{
				mkPod("a", revNew, readyFor(time.Second)),
			}},
			wantReason: ReasonInSync,
		},
		{
			name: "no requeue for terminating or unready pods",
			in: Input{Replicas: 0, MaxSurge: 1, MinReadySeconds: 10, Pods: []*corev1.Pod{
				mkPod("a", revNew, readyFor(time.Second), terminating), mkPod("b", revNew, notReady, terminating),
			}},
			wantReason: ReasonInSync,
		},
	})
}

// TestComputeIgnoresPodOrderAndKeepsInput checks determinism and that the
// input is left untouched.
func TestComputeIgnoresPodOrderAndKeepsInput(t *testing.T) {
	ps := join(pods("old", revOld, 5), pods("new", revNew, 3, notReady), pods("x", revNew, 2, pending),
		pods("f", revOld, 1, phase(corev1.PodFailed)))
	in := Input{Replicas: 6, MaxSurge: 2, MaxUnavailable: 2, UpdateRevision: revNew, Pods: ps, Now: t0}
	before := make([]*corev1.Pod, len(ps))
	for i, p := range ps {
		before[i] = p.DeepCopy()
	}
	want := Compute(in)

	reversed := slices.Clone(ps)
	slices.Reverse(reversed)
	in.Pods = reversed
	if got := Compute(in); describe(got) != describe(want) {
		t.Fatalf("pod order changed the plan:\n%s\n%s", describe(got), describe(want))
	}
	for i, p := range ps {
		if !equalPods(p, before[i]) {
			t.Fatalf("Compute modified input pod %q", p.Name)
		}
	}
}
