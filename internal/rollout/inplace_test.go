package rollout

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// inPlaceInput is a RollingUpdate from revOld to revNew whose revOld pods
// can move in place.
func inPlaceInput(replicas, surge, unavailable int32, pods ...[]*corev1.Pod) Input {
	return Input{Replicas: replicas, MaxSurge: surge, MaxUnavailable: unavailable, UpdateRevision: revNew,
		CurrentRevision: revOld, Revisions: []string{revOld}, InPlace: []string{revOld}, Pods: join(pods...)}
}

func TestComputeInPlace(t *testing.T) {
	runPlanCases(t, []planCase{
		// maxUnavailable 1 of 10: one pod at a time, none created.
		{
			name:        "in place, maxUnavailable 1 of 10 (step 1/3): one old pod moves, nothing is created",
			in:          inPlaceInput(10, 3, 1, pods("old", revOld, 10, gated)),
			wantInPlace: []string{"old-0"}, wantReason: ReasonRollingUpdate,
		},
		// The start is the gate alone: until its spec patch the pod keeps
		// its old labels, and is on its way (MovingInPlace), an
		// unavailable update-revision pod to the planner.
		{
			name: "in place, maxUnavailable 1 of 10 (step 2/4): gate False, still labelled old: on its way, the next waits, none created",
			in: inPlaceInput(10, 3, 1, pods("old", revOld, 10, gated)[1:],
				pods("moving", revOld, 1, gated, startedInPlace)),
			wantMoving: []string{"moving-0"}, wantReason: ReasonRollingUpdateWait,
		},
		{
			name: "in place, maxUnavailable 1 of 10 (step 3/4): out of endpoints, still labelled old: not removed as an unavailable old pod",
			in: inPlaceInput(10, 3, 1, pods("old", revOld, 10, gated)[1:],
				pods("moving", revOld, 1, gated, startedInPlace, notReady)),
			wantMoving: []string{"moving-0"}, wantReason: ReasonRollingUpdateWait,
		},
		{
			name:       "in place, maxUnavailable 1 of 10 (step 4/4): patched (images and labels in one write), gate still False: the next waits",
			in:         inPlaceInput(10, 3, 1, pods("old", revOld, 10, gated)[1:], pods("moved", revOld, 1, gated, updatingInPlace(revNew))),
			wantReason: ReasonRollingUpdateWait,
		},
		{
			name:        "in place, maxUnavailable 1 of 10 (done): the moved pod is available, the next moves",
			in:          inPlaceInput(10, 3, 1, pods("old", revOld, 10, gated)[1:], pods("moved", revNew, 1, gated)),
			wantInPlace: []string{"old-1"}, wantReason: ReasonRollingUpdate,
		},
		{
			name: "in place, an unavailable old pod beside one on its way: the sick one moves within the budget, the other is not started again",
			in: inPlaceInput(4, 1, 2, pods("old", revOld, 2, gated), pods("sick", revOld, 1, gated, notReady),
				pods("moving", revOld, 1, gated, startedInPlace, notReady)),
			wantInPlace: []string{"sick-0"}, wantMoving: []string{"moving-0"}, wantReason: ReasonRollingUpdate,
		},
		{
			name: "in place, the update revision changed to one the pod's revision cannot reach in place: an old pod again, replaced first",
			in: func() Input {
				in := inPlaceInput(4, 1, 1, pods("old", revOld, 3, gated), pods("moving", revOld, 1, gated, startedInPlace, notReady))
				in.InPlace = nil
				return in
			}(),
			wantCreate: 1, wantDelete: []string{"moving-0"}, wantReason: ReasonRollingUpdate,
		},
		{
			name: "in place, paused with a pod on its way: no rolling step, so not on its way (the controller ends its update)",
			in: func() Input {
				in := inPlaceInput(4, 1, 1, pods("old", revOld, 3, gated), pods("moving", revOld, 1, gated, startedInPlace, notReady))
				in.Paused = true
				return in
			}(),
			wantReason: ReasonPaused,
		},
		{
			name: "in place, a scale-down mid-rollout: the pod on its way counts as updated, the surplus comes off the old side",
			in: func() Input {
				in := inPlaceInput(2, 1, 1, pods("old", revOld, 3, gated), pods("moving", revOld, 1, gated, startedInPlace, notReady))
				in.SizedFor = &Size{Replicas: 4, MaxReplicas: 5}
				return in
			}(),
			wantDelete: []string{"old-0"}, wantMoving: []string{"moving-0"}, wantReason: ReasonProportionalScaleDown,
			wantSizedFor: &Size{Replicas: 2, MaxReplicas: 3}, wantRecord: true,
		},
		// Found by the chaos suite: a scale-up (not recorded: one revision)
		// then an image change; the record written with the new revision
		// failed, and the next plan, seeing two revisions and a stale record,
		// created two old-revision pods (4 for replicas 3).
		{
			name: "in place after a plain scale: the stale record is written before the first pod moves",
			in: func() Input {
				in := inPlaceInput(3, 2, 1, pods("old", revOld, 3, gated))
				in.SizedFor = &Size{Replicas: 2, MaxReplicas: 4}
				return in
			}(),
			wantInPlace: []string{"old-0"}, wantReason: ReasonRollingUpdate,
			wantSizedFor: &Size{Replicas: 3, MaxReplicas: 5}, wantRecord: true, wantRecordFirst: true,
		},
		// 25%/25% of 10: two at a time (maxUnavailable rounds down).
		{
			name:        "in place, 25% of 10: two pods move at once, no surge",
			in:          inPlaceInput(10, 3, 2, pods("old", revOld, 10, gated)),
			wantInPlace: []string{"old-0", "old-1"}, wantReason: ReasonRollingUpdate,
		},
		{
			name:        "in place: an unavailable old pod moves first, and then no available one may",
			in:          inPlaceInput(4, 1, 1, pods("old", revOld, 3, gated), pods("sick", revOld, 1, gated, notReady)),
			wantInPlace: []string{"sick-0"}, wantReason: ReasonRollingUpdate,
		},
		// minReadySeconds: a moved pod Ready for less than minReadySeconds holds the next.
		{
			name: "in place, minReadySeconds 10: a moved pod ready 4s ago holds the next for 6s",
			in: func() Input {
				in := inPlaceInput(3, 1, 1, pods("old", revOld, 2, gated), pods("moved", revNew, 1, gated, readyFor(4*time.Second)))
				in.MinReadySeconds = 10
				return in
			}(),
			wantReason: ReasonRollingUpdateWait, wantRequeue: 6 * time.Second,
		},
		// Pods without the gate (created before the mode) are replaced; the others move.
		{
			name:        "in place, mixed: a pod without the gate is replaced within maxSurge while the others move",
			in:          inPlaceInput(4, 1, 1, pods("old", revOld, 3, gated), pods("plain", revOld, 1)),
			wantCreate:  1,
			wantInPlace: []string{"old-0"}, wantReason: ReasonRollingUpdate,
		},
		// A revision whose change is not in-place-able (not listed) is replaced as without the mode.
		{
			name: "in place, a command change: the revision is not listed, every pod is replaced",
			in: func() Input {
				in := inPlaceInput(4, 1, 1, pods("old", revOld, 4, gated))
				in.InPlace = nil
				return in
			}(),
			wantCreate: 1, wantEvict: nil, wantDelete: []string{"old-0"}, wantReason: ReasonRollingUpdate,
		},
		// A failed in-place update (resize refused) is replaced: new pod first, then it goes.
		{
			name:       "in place, resize refused (step 1/2): the failed pod's replacement is created first",
			in:         inPlaceInput(3, 1, 1, pods("new", revNew, 2, gated), pods("failed", revNew, 1, gated, inPlaceFailed)),
			wantCreate: 1, wantReason: ReasonSpecifiedDelete,
		},
		{
			name:       "in place, resize refused (step 2/2): then the failed pod is removed",
			in:         inPlaceInput(3, 1, 1, pods("new", revNew, 3, gated), pods("failed", revNew, 1, gated, inPlaceFailed)),
			wantDelete: []string{"failed-0"}, wantReason: ReasonSpecifiedDelete,
		},
		// Rollback in place: the newer revision's pods move back.
		{
			name: "in place, rollback: pods of the newer revision move back to the older template",
			in: Input{Replicas: 3, MaxSurge: 1, MaxUnavailable: 1, UpdateRevision: revOld, CurrentRevision: revNew,
				Revisions: []string{revNew}, InPlace: []string{revNew}, Pods: pods("new", revNew, 3, gated)},
			wantInPlace: []string{"new-0"}, wantReason: ReasonRollingUpdate,
		},
		// maxUnavailable 0: one surge pod makes room, then pods move one at a time.
		{
			name:       "in place, maxSurge 1 maxUnavailable 0 (step 1/3): one surge pod first",
			in:         inPlaceInput(3, 1, 0, pods("old", revOld, 3, gated)),
			wantCreate: 1, wantReason: ReasonRollingUpdate,
		},
		{
			name:        "in place, maxSurge 1 maxUnavailable 0 (step 2/3): the surge pod is available, one old pod moves",
			in:          inPlaceInput(3, 1, 0, pods("old", revOld, 3, gated), pods("surge", revNew, 1, gated)),
			wantInPlace: []string{"old-0"}, wantReason: ReasonRollingUpdate,
		},
		{
			name:       "in place, maxSurge 1 maxUnavailable 0 (step 3/3): all moved, the surplus updated pod goes by ranking",
			in:         inPlaceInput(3, 1, 0, pods("moved", revNew, 3, gated), pods("surge", revNew, 1, gated)),
			wantDelete: []string{"moved-0"}, wantReason: ReasonScaleDown,
		},
	})
}
