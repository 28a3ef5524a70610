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

	wantCreate int32 // of the update revision
	// wantCreations, when set, replaces wantCreate: pods of several revisions.
	wantCreations []Creation
	wantDelete    []string
	wantEvict     []string
	// wantInPlace are the pods to update in place, wantMoving the old
	// pods the plan says are on their way there (Plan.MovingInPlace).
	wantInPlace, wantMoving []string
	// wantSizedFor, when set, is the plan's SizedFor, wantRecord its
	// RecordSize and wantRecordFirst its RecordFirst.
	wantSizedFor    *Size
	wantRecord      bool
	wantRecordFirst bool
	wantReason      Reason
	wantRequeue     time.Duration
	// wantDrained are the pods the plan lists as drained (Plan.Drained).
	wantDrained []string
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
			wantCreations := tc.wantCreations
			if wantCreations == nil && tc.wantCreate > 0 {
				wantCreations = []Creation{{Revision: in.UpdateRevision, Count: tc.wantCreate}}
			}
			if !slices.Equal(got.Create, wantCreations) || !slices.Equal(names(got.Delete), tc.wantDelete) ||
				!slices.Equal(names(got.Evict), tc.wantEvict) || !slices.Equal(names(got.UpdateInPlace), tc.wantInPlace) ||
				!slices.Equal(names(got.MovingInPlace), tc.wantMoving) || !slices.Equal(names(got.Drained), tc.wantDrained) ||
				got.Reason != tc.wantReason || got.RequeueAfter != tc.wantRequeue {
				t.Fatalf("got  %s drained=%v\nwant create=%v delete=%v evict=%v inPlace=%v moving=%v requeue=%v reason=%s drained=%v",
					describe(got), names(got.Drained), wantCreations, tc.wantDelete, tc.wantEvict, tc.wantInPlace, tc.wantMoving,
					tc.wantRequeue, tc.wantReason, tc.wantDrained)
			}
			if tc.wantSizedFor != nil && (got.SizedFor != *tc.wantSizedFor || got.RecordSize != tc.wantRecord || got.RecordFirst != tc.wantRecordFirst) {
				t.Fatalf("got  %s\nwant sizedFor=%+v record=%v recordFirst=%v", describe(got), *tc.wantSizedFor, tc.wantRecord, tc.wantRecordFirst)
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
			in:         Input{Replicas: 3, Strategy: Recreate, Pods: join(pods("old", revOld, 2), pods("sick", revOld2, 1, pending))},
			wantDelete: []string{"sick-0", "old-0", "old-1"}, wantReason: ReasonRecreateDeleteOld,
		},
		{
			name:       "recreate (step 2/3) waits for terminating old pods",
			in:         Input{Replicas: 3, Strategy: Recreate, Pods: pods("old", revOld, 1, terminating)},
			wantReason: ReasonRecreateWait,
		},
		{
			name:       "recreate (step 3/3) creates all new pods once old pods are gone",
			in:         Input{Replicas: 3, Strategy: Recreate},
			wantCreate: 3, wantReason: ReasonScaleUp,
		},
		{
			name:       "recreate waits for a terminating old pod in phase Unknown",
			in:         Input{Replicas: 1, Strategy: Recreate, Pods: pods("old", revOld, 1, terminating, phase(corev1.PodUnknown))},
			wantReason: ReasonRecreateWait,
		},
		{
			name: "recreate is not blocked by finished old pods, and deletes them",
			in: Input{Replicas: 2, Strategy: Recreate, Pods: join(
				pods("done", revOld, 1, phase(corev1.PodSucceeded)), pods("dead", revOld, 1, phase(corev1.PodFailed), terminating))},
			wantCreate: 2, wantDelete: []string{"done-0"}, wantReason: ReasonScaleUp,
		},
		{
			name: "recreate deletes surplus new pods while old ones terminate",
			in: Input{Replicas: 1, Strategy: Recreate, Pods: join(
				pods("old", revOld, 1, terminating), pods("new", revNew, 3))},
			wantDelete: []string{"new-0", "new-1"}, wantReason: ReasonRecreateWait,
		},
		{
			name:       "recreate ignores maxSurge and maxUnavailable",
			in:         Input{Replicas: 4, Strategy: Recreate, MaxSurge: 1, Pods: pods("old", revOld, 4)},
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
			name: "paused scale down mid-rollout shrinks both revisions to replicas+maxSurge by their share",
			in: Input{Replicas: 2, MaxSurge: 1, Paused: true, Pods: join(
				pods("new", revNew, 2, notReady), pods("old", revOld, 3))},
			// 5 pods sized for 5 (nothing recorded) to 3: old round(3*3/5)=2, new round(2*3/5)=1.
			wantDelete: []string{"old-0", "new-0"}, wantReason: ReasonPausedScaleDown,
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
			name: "paused scale up of the only active revision, an old one, adds to it",
			in: Input{Replicas: 5, MaxSurge: 1, Paused: true, Revisions: []string{revOld},
				Pods: pods("old", revOld, 3)},
			wantCreations: []Creation{{Revision: revOld, Count: 2}}, wantReason: ReasonPausedScaleUp,
		},
		{
			name: "paused scale up mid-rollout spreads over both revisions (4 old/2 new, 4+1 -> 9+2)",
			in: Input{Replicas: 9, MaxSurge: 2, Paused: true, Revisions: []string{revOld}, SizedFor: &Size{Replicas: 4, MaxReplicas: 6},
				Pods: join(pods("old", revOld, 4), pods("new", revNew, 2, notReady))},
			// allowed 11, 5 to add: old round(4*11/6)=7 (+3), new round(2*11/6)=4 (+2).
			wantCreations: []Creation{{Revision: revNew, Count: 2}, {Revision: revOld, Count: 3}},
			wantReason:    ReasonPausedScaleUp,
			wantSizedFor:  &Size{Replicas: 9, MaxReplicas: 11}, wantRecord: true,
		},
		{
			name: "paused mid-rollout refills a lost pod to the biggest revision",
			in: Input{Replicas: 4, MaxSurge: 1, Paused: true, Revisions: []string{revOld}, SizedFor: &Size{Replicas: 4, MaxReplicas: 5},
				Pods: join(pods("old", revOld, 3), pods("new", revNew, 1))},
			// allowed 5, 1 to add: old round(3*5/5)-3=0, new 0, leftover to the biggest.
			wantCreations: []Creation{{Revision: revOld, Count: 1}}, wantReason: ReasonPausedScaleUp,
			wantSizedFor: &Size{Replicas: 4, MaxReplicas: 5},
		},
		{
			name:       "paused recreate withholds creation while old pods run",
			in:         Input{Replicas: 3, Strategy: Recreate, Paused: true, Pods: pods("old", revOld, 2)},
			wantReason: ReasonPaused,
		},
		{
			name:       "paused recreate scales up when only update-revision pods exist",
			in:         Input{Replicas: 3, Strategy: Recreate, Paused: true, Pods: pods("new", revNew, 2)},
			wantCreate: 1, wantReason: ReasonPausedScaleUp,
		},
	})
}

// TestComputeScalingEvent: replicas changed mid-rollout (Input.SizedFor
// differs), scaled as Deployment's sync.go scale() does; the numbers are
// Deployment's arithmetic.
func TestComputeScalingEvent(t *testing.T) {
	// The reported case: replicas 10 (25%/25%: surge 3, unavailable 2), a
	// template whose pods never become ready, 8 old and 5 new pods.
	stuck := func(old, updated int) []*corev1.Pod {
		return join(pods("old", revOld, old), pods("new", revNew, updated, notReady))
	}
	runPlanCases(t, []planCase{
		{
			name: "scale 10->30 mid-rollout (step 1/3): 8 old/5 new grow to 23 old/15 new",
			in: Input{Replicas: 30, MaxSurge: 8, MaxUnavailable: 7, Revisions: []string{revOld},
				SizedFor: &Size{Replicas: 10, MaxReplicas: 13}, Pods: stuck(8, 5)},
			// allowed 38, 25 to add: old round(8*38/13)=23 (+15), new round(5*38/13)=15 (+10).
			wantCreations: []Creation{{Revision: revNew, Count: 10}, {Revision: revOld, Count: 15}},
			wantReason:    ReasonProportionalScaleUp,
			wantSizedFor:  &Size{Replicas: 30, MaxReplicas: 38}, wantRecord: true,
		},
		{
			name: "scale 10->30 mid-rollout (step 2/3): recorded, the rollout waits for the new pods",
			in: Input{Replicas: 30, MaxSurge: 8, MaxUnavailable: 7, Revisions: []string{revOld},
				SizedFor: &Size{Replicas: 30, MaxReplicas: 38}, Pods: stuck(23, 15)},
			wantReason:   ReasonRollingUpdateWait,
			wantSizedFor: &Size{Replicas: 30, MaxReplicas: 38},
		},
		{
			name: "scale 10->30 mid-rollout (step 3/3): the record lost, nothing to scale, recorded again",
			in: Input{Replicas: 30, MaxSurge: 8, MaxUnavailable: 7, Revisions: []string{revOld},
				SizedFor: &Size{Replicas: 10, MaxReplicas: 13}, Pods: stuck(23, 15)},
			wantReason:   ReasonRollingUpdateWait,
			wantSizedFor: &Size{Replicas: 30, MaxReplicas: 38}, wantRecord: true,
		},
		{
			name: "scale 30->10 mid-rollout: 23 old/15 new shrink to 8 old/5 new",
			in: Input{Replicas: 10, MaxSurge: 3, MaxUnavailable: 2, Revisions: []string{revOld},
				SizedFor: &Size{Replicas: 30, MaxReplicas: 38}, Pods: stuck(23, 15)},
			// allowed 13, 25 to remove: old round(23*13/38)=8 (-15), new round(15*13/38)=5 (-10).
			wantDelete:   slices.Concat(byName(pods("old", revOld, 23), 15), byName(pods("new", revNew, 15), 10)),
			wantReason:   ReasonProportionalScaleDown,
			wantSizedFor: &Size{Replicas: 10, MaxReplicas: 13}, wantRecord: true,
		},
		{
			name: "scale 10->30 without a record: shares of the active pods, as Deployment's status.replicas fallback",
			in: Input{Replicas: 30, MaxSurge: 8, MaxUnavailable: 7, Revisions: []string{revOld},
				SizedFor: &Size{Replicas: 10}, Pods: stuck(8, 4)},
			// allowed 38 over 12 pods: old round(8*38/12)=25 (+17), new round(4*38/12)=13 (+9).
			wantCreations: []Creation{{Revision: revNew, Count: 9}, {Revision: revOld, Count: 17}},
			wantReason:    ReasonProportionalScaleUp,
			wantSizedFor:  &Size{Replicas: 30, MaxReplicas: 38}, wantRecord: true,
		},
		{
			name: "scale up, equal revisions: the rounding leftover goes to the newest",
			in: Input{Replicas: 8, MaxSurge: 2, MaxUnavailable: 2, Revisions: []string{revOld2, revOld},
				SizedFor: &Size{Replicas: 6, MaxReplicas: 9},
				Pods:     join(pods("older", revOld2, 3), pods("old", revOld, 3), pods("new", revNew, 3, notReady))},
			// allowed 10, 1 to add: round(3*10/9)=3 each, the leftover to the first, newest.
			wantCreations: []Creation{{Revision: revNew, Count: 1}},
			wantReason:    ReasonProportionalScaleUp,
			wantSizedFor:  &Size{Replicas: 8, MaxReplicas: 10}, wantRecord: true,
		},
		{
			name: "scale down, equal revisions: the rounding leftover comes from the oldest",
			in: Input{Replicas: 5, MaxSurge: 2, MaxUnavailable: 1, Revisions: []string{revOld2, revOld},
				SizedFor: &Size{Replicas: 6, MaxReplicas: 9},
				Pods:     join(pods("older", revOld2, 3), pods("old", revOld, 3), pods("new", revNew, 3, notReady))},
			// allowed 7, 2 to remove: round(3*7/9)=2 each (-1), the third revision has nothing left to give.
			wantDelete: []string{"older-0", "old-0"}, wantReason: ReasonProportionalScaleDown,
			wantSizedFor: &Size{Replicas: 5, MaxReplicas: 7}, wantRecord: true,
		},
		{
			name: "scale up never adds to an old revision without its ControllerRevision: the newest takes its share",
			in: Input{Replicas: 30, MaxSurge: 8, MaxUnavailable: 7,
				SizedFor: &Size{Replicas: 10, MaxReplicas: 13}, Pods: stuck(8, 5)},
			wantCreations: []Creation{{Revision: revNew, Count: 25}},
			wantReason:    ReasonProportionalScaleUp,
			wantSizedFor:  &Size{Replicas: 30, MaxReplicas: 38}, wantRecord: true,
		},
		{
			name: "scale 10->30 cut by MaxBurst=5 (step 1/2): 8 old/5 new grow proportionally to 18",
			in: Input{Replicas: 30, MaxSurge: 8, MaxUnavailable: 7, Revisions: []string{revOld}, MaxBurst: 5,
				SizedFor: &Size{Replicas: 10, MaxReplicas: 13}, Pods: stuck(8, 5)},
			// old round(8*18/13)=11 (+3), new round(5*18/13)=7 (+2); still a scaling event, sized for 18.
			wantCreations: []Creation{{Revision: revNew, Count: 2}, {Revision: revOld, Count: 3}},
			wantReason:    ReasonProportionalScaleUp,
			wantSizedFor:  &Size{Replicas: 10, MaxReplicas: 18}, wantRecord: true,
		},
		{
			name: "scale 10->30 cut by MaxBurst=5 (step 2/2): goes on from 11 old/7 new",
			in: Input{Replicas: 30, MaxSurge: 8, MaxUnavailable: 7, Revisions: []string{revOld}, MaxBurst: 5,
				SizedFor: &Size{Replicas: 10, MaxReplicas: 18}, Pods: stuck(11, 7)},
			// old round(11*23/18)=14 (+3), new round(7*23/18)=9 (+2).
			wantCreations: []Creation{{Revision: revNew, Count: 2}, {Revision: revOld, Count: 3}},
			wantReason:    ReasonProportionalScaleUp,
			wantSizedFor:  &Size{Replicas: 10, MaxReplicas: 23}, wantRecord: true,
		},
		{
			name: "template and replicas changed at once (step 1/2): the only active revision, an old one, is scaled first",
			in: Input{Replicas: 20, MaxSurge: 5, MaxUnavailable: 5, Revisions: []string{revOld},
				SizedFor: &Size{Replicas: 10, MaxReplicas: 13}, Pods: pods("old", revOld, 10)},
			wantCreations: []Creation{{Revision: revOld, Count: 10}},
			wantReason:    ReasonProportionalScaleUp,
			wantSizedFor:  &Size{Replicas: 20, MaxReplicas: 25}, wantRecord: true,
		},
		{
			name: "template and replicas changed at once (step 2/2): then it rolls",
			in: Input{Replicas: 20, MaxSurge: 5, MaxUnavailable: 5, Revisions: []string{revOld},
				SizedFor: &Size{Replicas: 20, MaxReplicas: 25}, Pods: pods("old", revOld, 20)},
			wantCreate: 5, wantDelete: byName(pods("old", revOld, 20), 5), wantReason: ReasonRollingUpdate,
			wantSizedFor: &Size{Replicas: 20, MaxReplicas: 25},
		},
		{
			// Once this step runs two revisions, a stale record would make
			// the next plan a scaling event that grows the old revision:
			// the record is written first.
			name: "a stale record with the only revision at size: the rollout starts in the same plan, once the record is written",
			in: Input{Replicas: 20, MaxSurge: 5, MaxUnavailable: 5, Revisions: []string{revOld},
				SizedFor: &Size{Replicas: 10, MaxReplicas: 13}, Pods: pods("old", revOld, 20)},
			wantCreate: 5, wantDelete: byName(pods("old", revOld, 20), 5), wantReason: ReasonRollingUpdate,
			wantSizedFor: &Size{Replicas: 20, MaxReplicas: 25}, wantRecord: true, wantRecordFirst: true,
		},
		{
			// What the plan after it would do if the record were not
			// written: scale the old revision up, as a Deployment scales
			// its ReplicaSets proportionally. RecordFirst prevents it.
			name: "a stale record once two revisions run: the old revision grows proportionally",
			in: Input{Replicas: 20, MaxSurge: 5, MaxUnavailable: 5, Revisions: []string{revOld},
				SizedFor: &Size{Replicas: 10, MaxReplicas: 13}, Pods: join(pods("old", revOld, 15), pods("new", revNew, 5))},
			wantCreations: []Creation{{Revision: revOld, Count: 5}}, wantReason: ReasonProportionalScaleUp,
			wantSizedFor: &Size{Replicas: 20, MaxReplicas: 25}, wantRecord: true,
		},
		{
			name: "plain scale of one revision: no record needed",
			in: Input{Replicas: 20, MaxSurge: 5, MaxUnavailable: 5,
				SizedFor: &Size{Replicas: 10, MaxReplicas: 13}, Pods: pods("new", revNew, 10)},
			wantCreate: 10, wantReason: ReasonScaleUp,
			wantSizedFor: &Size{Replicas: 20, MaxReplicas: 25},
		},
		{
			name: "a saturated update revision is the rollout's: its old pods go",
			in: Input{Replicas: 4, MaxSurge: 1, MaxUnavailable: 1, Revisions: []string{revOld},
				SizedFor: &Size{Replicas: 3, MaxReplicas: 4}, Pods: join(pods("old", revOld, 1), pods("new", revNew, 4))},
			wantDelete: []string{"old-0"}, wantReason: ReasonRollingUpdate,
			wantSizedFor: &Size{Replicas: 4, MaxReplicas: 5}, wantRecord: true, wantRecordFirst: true,
		},
		{
			name: "Recreate has no scaling event",
			in: Input{Replicas: 6, Strategy: Recreate, Revisions: []string{revOld},
				SizedFor: &Size{Replicas: 3, MaxReplicas: 3}, Pods: join(pods("old", revOld, 2), pods("new", revNew, 1))},
			wantDelete: []string{"old-0", "old-1"}, wantReason: ReasonRecreateDeleteOld,
			wantSizedFor: &Size{Replicas: 6, MaxReplicas: 6}, wantRecord: true,
		},
	})
}

// byName is the first n names of pods that differ in nothing else: the
// deletion ranking's last criterion orders them by name.
func byName(ps []*corev1.Pod, n int) []string {
	out := names(ps)
	slices.Sort(out)
	return out[:n]
}

// TestComputeMaxBurst: no plan creates or deletes more than MaxBurst pods,
// so a runaway scale is planned again from the spec after each batch.
func TestComputeMaxBurst(t *testing.T) {
	runPlanCases(t, []planCase{
		{
			name:       "scale to a billion creates DefaultMaxBurst pods",
			in:         Input{Replicas: 1_000_000_000, MaxSurge: 250_000_000, MaxUnavailable: 250_000_000, Pods: pods("new", revNew, 2)},
			wantCreate: DefaultMaxBurst, wantReason: ReasonScaleUp,
		},
		{
			name:       "scale up by more than MaxBurst",
			in:         Input{Replicas: 10, MaxSurge: 3, MaxUnavailable: 2, MaxBurst: 4, Pods: pods("new", revNew, 2)},
			wantCreate: 4, wantReason: ReasonScaleUp,
		},
		{
			name:       "scale down by more than MaxBurst deletes the most deletable first",
			in:         Input{Replicas: 1, MaxSurge: 1, MaxBurst: 2, Pods: join(pods("new", revNew, 3), pods("fresh", revNew, 2, pending))},
			wantDelete: []string{"fresh-0", "fresh-1"}, wantReason: ReasonScaleDown,
		},
		{
			name: "finished pods count towards MaxBurst, first",
			in: Input{Replicas: 1, MaxSurge: 1, MaxBurst: 2, Pods: join(
				pods("new", revNew, 3), pods("done", revNew, 1, phase(corev1.PodSucceeded)))},
			wantDelete: []string{"done-0", "new-0"}, wantReason: ReasonScaleDown,
		},
		{
			name:       "rolling step cut by MaxBurst",
			in:         Input{Replicas: 10, MaxSurge: 10, MaxUnavailable: 10, MaxBurst: 3, Pods: pods("old", revOld, 10)},
			wantCreate: 3, wantDelete: []string{"old-0", "old-1", "old-2"}, wantReason: ReasonRollingUpdate,
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
