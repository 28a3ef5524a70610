// Package rollout is the pure planner of the MyDeployment controller: given the
// resolved rollout settings, the pods a MyDeployment owns and the current time,
// it says which pods to create and which to delete, and in which order, so that
// a user who knows Deployment sees the same rollout behaviour although the
// controller manages pods directly instead of through ReplicaSets.
//
// The planner mirrors the Kubernetes Deployment controller
// (pkg/controller/deployment/{rolling.go,recreate.go,sync.go}) and the pod
// deletion ranking of pkg/controller/controller_utils.go, with one ReplicaSet
// per pod-template revision replaced by the pods' controller-revision-hash
// label. Deployment's proportional scaling (sync.go scale()) needs what the
// ReplicaSets were last sized for; the caller records it once for all
// revisions (Plan.SizedFor, Input.SizedFor). Like a ReplicaSet's sync
// (burstReplicas), one plan creates and deletes at most MaxBurst pods.
//
// Beyond Deployment, three opt-ins (internal/optin parses them) are
// concepts of the planner rather than special cases: a partition is a
// target for each side of a rolling step (updated pods, pods held on old
// revisions) with pods of the current revision created when the held side
// is short (Input.Partition, Input.CurrentRevision); a pod labelled
// specified-delete does not count towards its side, so it is replaced, and
// ranks first for every deletion; RespectPDB sorts every removal into a
// replacement, evicted (Plan.Evict), or a scale, deleted (Plan.Delete).
// Without them the plans are exactly Deployment's.
//
// Each strategy is a file behind one dispatch (step, in strategy.go, which
// lists them and says how a new one is added); Compute wraps the step in
// what every plan does (finished pods, MaxBurst, the size record).
//
// Everything here is deterministic and free of I/O: no client, no clock read
// (the caller passes "now"), and the same input, in any pod order, always
// yields the same plan.
//
// # Deletion ranking
//
// When a step deletes some of a group of pods it takes the most deletable
// first, as the ReplicaSet controller's ActivePodsWithRanks does. Each
// criterion decides only on a tie of the ones before:
//
//  0. labelled apps.mydeployment.io/specified-delete "true" first;
//  1. unscheduled (no NodeName) before scheduled;
//  2. phase Pending (or empty) before Unknown before Running;
//  3. not ready before ready;
//  4. lower controller.kubernetes.io/pod-deletion-cost first (a missing or
//     invalid value counts as 0);
//  5. more of the MyDeployment's active pods on the same node first;
//  6. of two ready pods, the one ready for less time first (unknown ready
//     time first);
//  7. more container restarts first (regular containers, then sidecars);
//  8. unknown creation time first, then newer before older;
//  9. name, then UID, so the order is total.
//
// Unlike Kubernetes (LogarithmicScaleDown), times in 6 and 8 are compared
// exactly rather than in power-of-two buckets broken by UID, to stay
// deterministic and readable.
package rollout
