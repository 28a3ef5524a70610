package rollout

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// canary is a RollingUpdate from revOld (the current revision, pods of
// which can be created) to revNew, holding partition pods on revOld.
func canary(replicas, surge, unavailable, partition int32, ps ...[]*corev1.Pod) Input {
	return Input{Replicas: replicas, MaxSurge: surge, MaxUnavailable: unavailable, Partition: partition,
		CurrentRevision: revOld, Revisions: []string{revOld}, Pods: join(ps...)}
}

func withPDB(in Input) Input {
	in.RespectPDB = true
	return in
}

func TestComputePartition(t *testing.T) {
	runPlanCases(t, []planCase{
		{
			name:       "partition 8 of 10, 25%/25% (step 1/3): 2 updated pods created, 2 old retired",
			in:         canary(10, 3, 2, 8, pods("old", revOld, 10)),
			wantCreate: 2, wantDelete: []string{"old-0", "old-1"}, wantReason: ReasonRollingUpdate,
		},
		{
			name:       "partition 8 of 10, 25%/25% (step 2/3): the new pods start, nothing more moves",
			in:         canary(10, 3, 2, 8, pods("old", revOld, 8), pods("new", revNew, 2, pending)),
			wantReason: ReasonPartitionHeld,
		},
		{
			name:       "partition 8 of 10, 25%/25% (step 3/3): held, every pod available",
			in:         canary(10, 3, 2, 8, pods("old", revOld, 8), pods("new", revNew, 2)),
			wantReason: ReasonPartitionHeld,
		},
		{
			name:       "partition lowered from 8 to 5: 3 more updated pods, 2 old retired within maxUnavailable",
			in:         canary(10, 3, 2, 5, pods("old", revOld, 8), pods("new", revNew, 2)),
			wantCreate: 3, wantDelete: []string{"old-0", "old-1"}, wantReason: ReasonRollingUpdate,
		},
		{
			name:          "partition raised from 8 to 10 (step 1/2): pods of the current revision created, updated ones retired",
			in:            canary(10, 3, 2, 10, pods("old", revOld, 8), pods("new", revNew, 2)),
			wantCreations: []Creation{{Revision: revOld, Count: 2}}, wantDelete: []string{"new-0", "new-1"}, wantReason: ReasonRollingUpdate,
		},
		{
			name:       "partition raised from 8 to 10 (step 2/2): held with every pod on the current revision",
			in:         canary(10, 3, 2, 10, pods("old", revOld, 10)),
			wantReason: ReasonPartitionHeld,
		},
		{
			name: "partition raised, maxSurge=1 maxUnavailable=0: one current pod first, no updated pod goes while it is unavailable",
			in:   canary(4, 1, 0, 4, pods("old", revOld, 2), pods("back", revOld, 1, pending), pods("new", revNew, 2)),
			// 5 active = replicas+maxSurge: no room; the pending held pod holds back the retirement.
			wantReason: ReasonRollingUpdateWait,
		},
		{
			name:       "partition raised, maxSurge=1 maxUnavailable=0: the current pod available, one updated pod goes",
			in:         canary(4, 1, 0, 4, pods("old", revOld, 3), pods("new", revNew, 2)),
			wantDelete: []string{"new-0"}, wantReason: ReasonRollingUpdate,
		},
		{
			name: "held pods converge on the current revision: pods of another old revision go first",
			in: canary(10, 0, 2, 4, pods("cur", revOld, 5, createdAgo(time.Minute)),
				pods("older", revOld2, 5)),
			wantDelete: []string{"older-0", "older-1"}, wantReason: ReasonRollingUpdate,
		},
		{
			name: "a partition whose current revision cannot be created holds only the old pods that exist",
			in: Input{Replicas: 10, MaxSurge: 3, MaxUnavailable: 2, Partition: 8, CurrentRevision: revOld,
				Pods: join(pods("old", revOld, 6), pods("new", revNew, 2))},
			// held = min(8, 6): the updated side makes up the other 4.
			wantCreate: 2, wantReason: ReasonRollingUpdate,
		},
		{
			name:       "a partition with the current revision being the update revision holds nothing (a rollback)",
			in:         Input{Replicas: 3, MaxSurge: 1, Partition: 2, CurrentRevision: revNew, Revisions: []string{revOld}, Pods: pods("old", revOld, 3)},
			wantCreate: 1, wantReason: ReasonRollingUpdate,
		},
		{
			name:       "partitioned scale-down 10 -> 5 (partition 8 -> 5): each side to its share, old pods first, deleted at once",
			in:         withSized(canary(5, 2, 1, 5, pods("old", revOld, 8), pods("new", revNew, 2)), 10, 13),
			wantDelete: []string{"old-0", "old-1", "old-2", "new-0", "new-1"}, wantReason: ReasonPartitionScaleDown,
			wantSizedFor: &Size{Replicas: 5, MaxReplicas: 7}, wantRecord: true,
		},
		{
			name:       "partitioned scale-down is a delete even with respect-pdb",
			in:         withPDB(withSized(canary(9, 3, 2, 8, pods("old", revOld, 8), pods("new", revNew, 2)), 10, 13)),
			wantDelete: []string{"new-0"}, wantReason: ReasonPartitionScaleDown,
		},
		{
			name:          "partitioned scale-up 10 -> 20 at 80% (16 held): both sides grow to their shares within maxSurge",
			in:            withSized(canary(20, 5, 5, 16, pods("old", revOld, 8), pods("new", revNew, 2)), 10, 13),
			wantCreations: []Creation{{Revision: revNew, Count: 2}, {Revision: revOld, Count: 8}}, wantReason: ReasonRollingUpdate,
			wantSizedFor: &Size{Replicas: 20, MaxReplicas: 25}, wantRecord: true, wantRecordFirst: true,
		},
		{
			name:       "respect-pdb: the pods a rolling step replaces are evicted",
			in:         withPDB(canary(10, 3, 2, 8, pods("old", revOld, 10))),
			wantCreate: 2, wantEvict: []string{"old-0", "old-1"}, wantReason: ReasonRollingUpdate,
		},
		{
			name:          "respect-pdb: a partition raised evicts the updated pods it moves back",
			in:            withPDB(canary(10, 3, 2, 10, pods("old", revOld, 8), pods("new", revNew, 2))),
			wantCreations: []Creation{{Revision: revOld, Count: 2}}, wantEvict: []string{"new-0", "new-1"}, wantReason: ReasonRollingUpdate,
		},
		{
			name: "respect-pdb: surplus updated pods of a scale-down mid-rollout are deleted, old ones evicted",
			in: withPDB(Input{Replicas: 3, MaxSurge: 1, MaxUnavailable: 1,
				Pods: join(pods("old", revOld, 2), pods("new", revNew, 4))}),
			wantDelete: []string{"new-0"}, wantEvict: []string{"old-0", "old-1"}, wantReason: ReasonRollingUpdate,
		},
		{
			name:      "respect-pdb: Recreate evicts the old pods",
			in:        withPDB(Input{Replicas: 2, Strategy: Recreate, Pods: pods("old", revOld, 2)}),
			wantEvict: []string{"old-0", "old-1"}, wantReason: ReasonRecreateDeleteOld,
		},
		{
			name:       "respect-pdb: a plain scale-down deletes",
			in:         withPDB(Input{Replicas: 1, MaxSurge: 1, Pods: pods("new", revNew, 2)}),
			wantDelete: []string{"new-0"}, wantReason: ReasonScaleDown,
		},
		{
			name:       "respect-pdb: finished pods are deleted",
			in:         withPDB(Input{Replicas: 1, MaxSurge: 1, Pods: join(pods("new", revNew, 1), pods("done", revNew, 1, phase(corev1.PodFailed)))}),
			wantDelete: []string{"done-0"}, wantReason: ReasonInSync,
		},
	})
}

func TestComputeSpecifiedDelete(t *testing.T) {
	runPlanCases(t, []planCase{
		{
			name:       "specified delete in sync, maxSurge=1 maxUnavailable=0 (step 1/3): its replacement first",
			in:         Input{Replicas: 3, MaxSurge: 1, Pods: join(pods("new", revNew, 2), pods("marked", revNew, 1, labelled))},
			wantCreate: 1, wantReason: ReasonSpecifiedDelete,
		},
		{
			name: "specified delete in sync, maxSurge=1 maxUnavailable=0 (step 2/3): it stays while the replacement is unavailable",
			in: Input{Replicas: 3, MaxSurge: 1, Pods: join(pods("new", revNew, 2), pods("marked", revNew, 1, labelled),
				pods("repl", revNew, 1, pending))},
			wantReason: ReasonRollingUpdateWait,
		},
		{
			name:       "specified delete in sync, maxSurge=1 maxUnavailable=0 (step 3/3): then it goes",
			in:         Input{Replicas: 3, MaxSurge: 1, Pods: join(pods("new", revNew, 3), pods("marked", revNew, 1, labelled))},
			wantDelete: []string{"marked-0"}, wantReason: ReasonSpecifiedDelete,
		},
		{
			name:      "specified delete, maxSurge=0 maxUnavailable=1: removed first within maxUnavailable, evicted under respect-pdb",
			in:        withPDB(Input{Replicas: 3, MaxUnavailable: 1, Pods: join(pods("new", revNew, 2), pods("marked", revNew, 1, labelled))}),
			wantEvict: []string{"marked-0"}, wantReason: ReasonSpecifiedDelete,
		},
		{
			name:       "specified delete on a scale-down: the labelled pod goes first, deleted even under respect-pdb",
			in:         withSized(withPDB(Input{Replicas: 2, MaxSurge: 1, Pods: join(pods("new", revNew, 2), pods("marked", revNew, 1, labelled, createdAgo(5*time.Hour)))}), 3, 4),
			wantDelete: []string{"marked-0"}, wantReason: ReasonSpecifiedDelete,
		},
		{
			name:       "specified delete on a plain scale-down without a replacement pending: first by ranking",
			in:         Input{Replicas: 1, Strategy: Recreate, Pods: join(pods("new", revNew, 1), pods("marked", revNew, 1, labelled, createdAgo(5*time.Hour)))},
			wantDelete: []string{"marked-0"}, wantReason: ReasonScaleDown,
		},
		{
			name: "specified delete mid-rollout: the labelled old pod goes before the others",
			in: Input{Replicas: 4, MaxSurge: 1, MaxUnavailable: 1,
				Pods: join(pods("old", revOld, 3), pods("marked", revOld, 1, labelled, createdAgo(5*time.Hour)))},
			wantCreate: 1, wantDelete: []string{"marked-0"}, wantReason: ReasonRollingUpdate,
		},
		{
			name:          "specified delete of a held pod (step 1/2): a pod of the current revision first",
			in:            canary(10, 3, 2, 8, pods("old", revOld, 7), pods("marked", revOld, 1, labelled), pods("new", revNew, 2)),
			wantCreations: []Creation{{Revision: revOld, Count: 1}}, wantReason: ReasonRollingUpdate,
		},
		{
			name: "specified delete of a held pod (step 2/2): then it goes, the partition's 8 pods kept",
			in: withPDB(canary(10, 3, 2, 8, pods("old", revOld, 7), pods("marked", revOld, 1, labelled),
				pods("back", revOld, 1, pending), pods("new", revNew, 2))),
			wantEvict: []string{"marked-0"}, wantReason: ReasonRollingUpdate,
		},
		{
			name:      "specified delete with Recreate (step 1/2): removed first, nothing created while it may run",
			in:        withPDB(Input{Replicas: 2, Strategy: Recreate, Pods: join(pods("new", revNew, 1), pods("marked", revNew, 1, labelled))}),
			wantEvict: []string{"marked-0"}, wantReason: ReasonSpecifiedDelete,
		},
		{
			name:       "specified delete with Recreate (step 2/2): its replacement created once it is terminating",
			in:         withPDB(Input{Replicas: 2, Strategy: Recreate, Pods: join(pods("new", revNew, 1), pods("marked", revNew, 1, labelled, terminating))}),
			wantCreate: 1, wantReason: ReasonScaleUp,
		},
		{
			name:       "the label with a value other than true does nothing",
			in:         Input{Replicas: 2, MaxSurge: 1, Pods: join(pods("new", revNew, 1), pods("other", revNew, 1, func(p *corev1.Pod) { p.Labels["apps.mydeployment.io/specified-delete"] = "yes" }))},
			wantReason: ReasonInSync,
		},
	})
}

// withSized records what in's pods were sized for.
func withSized(in Input, replicas, maxReplicas int32) Input {
	in.SizedFor = &Size{Replicas: replicas, MaxReplicas: maxReplicas}
	return in
}
