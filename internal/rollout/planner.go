package rollout

import (
	"math"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
)

// DefaultMaxBurst is how many pods one plan creates, and how many it
// deletes, at most: the ReplicaSet controller's burstReplicas. A bigger
// change takes several syncs, each planned from the spec as it is then, so a
// runaway scale can be stopped and status is written between batches.
const DefaultMaxBurst = 500

// Strategy is how pods of old revisions are replaced: Deployment's strategy types.
type Strategy string

const (
	// RollingUpdate replaces pods gradually, within MaxSurge and
	// MaxUnavailable. The zero Strategy means RollingUpdate too, as an empty
	// strategy type does in the API.
	RollingUpdate Strategy = "RollingUpdate"
	// Recreate deletes every old pod before it creates a new one.
	Recreate Strategy = "Recreate"
)

// Size is what the pods were sized for: Deployment's desired-replicas and
// max-replicas annotations of its ReplicaSets, the record optin.RecordsOf
// reads.
type Size = optin.Size

// PodCount is a count of pods or a percentage of spec.replicas, as a
// partition and a canary step's size say it (optin.ParsePodCount).
type PodCount = optin.PodCount

// Input is everything the planner needs.
type Input struct {
	// Replicas is the desired number of pods; negative counts as 0.
	Replicas int32
	// Strategy is RollingUpdate (also when empty) or Recreate.
	Strategy Strategy
	// MaxSurge and MaxUnavailable are absolute counts, already resolved (see
	// ResolveFenceposts); ignored by Recreate. Negative counts as 0,
	// MaxUnavailable is clamped to Replicas, and 0/0 counts as 0/1 so a
	// rollout can never stall on its own settings.
	MaxSurge       int32
	MaxUnavailable int32
	// MinReadySeconds is how long a pod must be Ready to count as available.
	MinReadySeconds int32
	// Paused stops the rollout; scaling still happens (see Compute).
	Paused bool
	// UpdateRevision is the ControllerRevision name new pods are created
	// from; pods whose controller-revision-hash label differs are "old".
	UpdateRevision string
	// Revisions names the other revisions pods may be created from (their
	// ControllerRevisions exist), oldest first. UpdateRevision is always
	// the newest, listed or not. Active pods of a revision not listed count
	// as the oldest; they are scaled down with the others but never added to.
	Revisions []string
	// SizedFor is what the pods were sized for when last recorded (see
	// Plan.SizedFor); nil if never. A RollingUpdate whose Replicas differ
	// from SizedFor.Replicas is in a scaling event, as Deployment's
	// isScalingEvent says, and is scaled proportionally before it rolls on.
	SizedFor *Size
	// MaxBurst caps the pods one plan creates, and separately the pods it
	// deletes; 0 or negative means DefaultMaxBurst.
	MaxBurst int32
	// Partition is how many pods a RollingUpdate holds on revisions other
	// than UpdateRevision (optin's Partition.Pods(Replicas)): the rollout
	// stops at Replicas-Partition updated pods. 0 (or negative) is no
	// partition; more than Replicas counts as Replicas. It holds nothing
	// when CurrentRevision is empty or is UpdateRevision, and is ignored by
	// Recreate.
	Partition int32
	// CurrentRevision is the revision held pods run and are created from
	// when the partition moves pods back (status.currentRevision). Pods of
	// it can be created only if it is listed in Revisions; otherwise the
	// partition holds only the old pods that exist.
	CurrentRevision string
	// Canary is the canary step list, the record of the step under way
	// and the last promote (the canary module's PlanInput); nil without
	// canary steps.
	// A canary rollout sets the partition step by step (canary.go) and
	// Partition is then ignored.
	Canary *Canary
	// Analysis gates the canary steps on metric analysis (canary.go);
	// nil without it (every step ends as the step list says).
	Analysis *AnalysisGate
	// RespectPDB puts the pods a rollout step or a specified delete
	// replaces in Plan.Evict instead of Plan.Delete.
	RespectPDB bool
	// DrainingNodes names the nodes being drained (cordoned, or tainted for
	// removal by an autoscaler) when the drain annotation is SurgeFirst;
	// nil otherwise. A RollingUpdate replaces the pods on them surge first
	// (drain.go); Recreate ignores it.
	DrainingNodes map[string]bool
	// InPlace names the old revisions whose pods can move to
	// UpdateRevision in place (update-mode InPlaceIfPossible, each checked
	// with inplace.Diff); nil when every pod is to be replaced. A pod of
	// one of them that carries the in-place readiness gate
	// (inplace.HasGate) is updated in place by a RollingUpdate instead of
	// being replaced; one whose update is under way (inplace.UnderWay)
	// counts as on its way to UpdateRevision (Plan.MovingInPlace).
	InPlace []string
	// Waves rolls the pods one failure domain at a time (waves.go): the
	// domains, each pod's, the bake and the record of the wave under way
	// (the waves module's PlanInput); nil without waves. Ignored by
	// Recreate and while Aborted.
	Waves *Waves
	// Aborted says the rollout to UpdateRevision is aborted (on-failure
	// Abort, past its progress deadline): every pod goes back to
	// CurrentRevision (abort.go), which must be listed in Revisions.
	// InPlace then names the revisions whose pods can move to
	// CurrentRevision in place (Target).
	Aborted bool
	// AbortDrain, while Aborted, is when the aborted revision's active
	// pods may go (abort.go): until then they still take traffic (a
	// route's weight steps, the weights module: the route's weight is
	// taken off them first). Zero: at once.
	AbortDrain time.Time
	// TerminationComplete makes a pod count against the pods a plan may
	// create until it is gone from the API server, not only while it is
	// active (replacement.go; the pod-replacement opt-in): a pod's
	// replacement is created once the pod is gone. Removals are planned as
	// without it.
	TerminationComplete bool
	// Pods are all pods the MyDeployment owns, including terminating ones
	// (DeletionTimestamp set) and finished ones (phase Succeeded/Failed).
	// Nil entries are ignored; order does not matter.
	Pods []*corev1.Pod
	// Now is the reference time for availability (minReadySeconds).
	Now time.Time
}

// Creation is a number of pods to create from one revision.
type Creation struct {
	// Revision is the ControllerRevision name to create the pods from:
	// Input.UpdateRevision or one of Input.Revisions.
	Revision string
	// Count is how many; always positive.
	Count int32
	// Pin, when set, is the domain the pods are pinned to (a wave's,
	// waves.go): the caller creates them with PinTemplate.
	Pin *Pin
}

// Plan is what to do now. Executing it in any order (creates before, after or
// among deletes) keeps the promises stated on Compute.
type Plan struct {
	// Create lists the pods to create now, at most one entry per revision,
	// newest revision first. Usually only the update revision has pods to
	// create; a scaling event mid-rollout, and scaling while paused, add
	// pods to old revisions too (Deployment's proportional scaling).
	Create []Creation
	// Delete lists the pods to delete now, in this order, each at most once,
	// each taken from Input.Pods and none already terminating: finished pods
	// first, then old-revision pods, then update-revision pods (with those
	// in MovingInPlace).
	Delete []*corev1.Pod
	// Evict lists, only when Input.RespectPDB, the pods a rollout step or a
	// specified delete replaces, to remove through the Eviction API (in the
	// same order as Delete, none in both). Pods removed by a scale-down,
	// surplus pods and finished pods are always in Delete. Without
	// RespectPDB, Evict is empty and those pods are in Delete.
	Evict []*corev1.Pod
	// Drained lists the pods on draining nodes (Input.DrainingNodes) that
	// the plan removes as replaced, each also in Delete or Evict: once
	// their replacement is available, or in place of an old pod a rollout
	// step removes anyway (see drain.go). A scale-down's removals are not
	// listed.
	Drained []*corev1.Pod
	// UpdateInPlace lists the pods to move to UpdateRevision in place now
	// (Input.InPlace), each at most once, none in Delete or Evict: the
	// caller sets their gate False, and nothing else yet.
	UpdateInPlace []*corev1.Pod
	// MovingInPlace lists the old-revision pods on their way to
	// UpdateRevision in place (their update began, see inplace.go): the
	// planner counts them as update-revision pods, not available, and the
	// caller's next write to each is the patch to UpdateRevision. A scale
	// or a raised partition may remove some (they are then in Delete or
	// Evict too). Empty while paused: an update begun is not to go on.
	MovingInPlace []*corev1.Pod
	// SizedFor is what the pods are sized for once the plan is carried out:
	// the caller records it and passes it back as Input.SizedFor.
	SizedFor Size
	// RecordSize says SizedFor must be recorded before the next plan, if it
	// differs from Input.SizedFor: a scale happened while several revisions
	// have active pods. Otherwise recording it can wait for a write the
	// caller makes anyway (a new revision).
	RecordSize bool
	// RecordFirst says SizedFor must be recorded before the plan is carried
	// out (RecordSize is then true too): the record says a scale is pending
	// that the pods already match, so scaling had nothing to do and this
	// plan takes a rollout step. Carried out on the stale record, that step
	// leaves several revisions running, and the next plan would take them
	// for a scaling event and scale the old revision up proportionally
	// (Deployment's sync returns after a scaling event for the same reason:
	// its record is written with the scale, before the rollout goes on).
	RecordFirst bool
	// Canary is where a canary rollout is once the plan is carried out
	// (canary.go); nil when none is under way.
	Canary *CanaryProgress
	// Waves is where a waves rollout is once the plan is carried out
	// (waves.go); nil when none is under way.
	Waves *WaveProgress
	// RequeueAfter, when positive, is when the next ready pod becomes
	// available (MinReadySeconds) or a timed canary pause ends; requeue
	// then rather than poll.
	RequeueAfter time.Duration
	// Reason names the step, for logs and events.
	Reason Reason
}

// Removes is the number of pods the plan deletes or evicts.
func (p Plan) Removes() int {
	return len(p.Delete) + len(p.Evict)
}

// Creates is the number of pods the plan creates, of every revision.
func (p Plan) Creates() int32 {
	var n int32
	for _, c := range p.Create {
		n += c.Count
	}
	return n
}

// Reason is a short machine-readable name of the step a Plan takes.
type Reason string

// Steps a plan can take.
const (
	// ReasonInSync: the active pods match the spec; nothing but cleanup of finished pods to do.
	ReasonInSync Reason = "InSync"
	// ReasonScaleUp / ReasonScaleDown: plain scaling, no old-revision pod involved.
	ReasonScaleUp   Reason = "ScaleUp"
	ReasonScaleDown Reason = "ScaleDown"
	// ReasonProportionalScaleUp / ReasonProportionalScaleDown: a scaling
	// event mid-rollout, every active revision scaled by its share
	// (Deployment's proportional scaling); also an old revision that is the
	// only one with active pods, scaled to Replicas before the rollout goes on.
	ReasonProportionalScaleUp   Reason = "ProportionalScaleUp"
	ReasonProportionalScaleDown Reason = "ProportionalScaleDown"
	// ReasonRollingUpdate: a RollingUpdate step creates and/or deletes pods.
	ReasonRollingUpdate Reason = "RollingUpdate"
	// ReasonRollingUpdateWait: old pods remain but maxSurge/maxUnavailable allow no step until more pods become available.
	ReasonRollingUpdateWait Reason = "RollingUpdate:WaitForAvailability"
	// ReasonRecreateDeleteOld: Recreate deletes every active old-revision pod.
	ReasonRecreateDeleteOld Reason = "Recreate:DeleteOldPods"
	// ReasonRecreateWait: Recreate waits for terminating old-revision pods to be gone before creating.
	ReasonRecreateWait Reason = "Recreate:WaitForOldPodsGone"
	// ReasonPausedScaleUp / ReasonPausedScaleDown: scaling while paused; no rollout step.
	ReasonPausedScaleUp   Reason = "Paused:ScaleUp"
	ReasonPausedScaleDown Reason = "Paused:ScaleDown"
	// ReasonPaused: paused with the right number of pods (or creation withheld by Recreate).
	ReasonPaused Reason = "Paused"
	// ReasonPartitionHeld: the rollout went as far as the partition lets
	// it: nothing to do until the partition or the template changes.
	ReasonPartitionHeld Reason = "RollingUpdate:PartitionHeld"
	// ReasonPartitionScaleDown: a scale-down while partitioned, each side
	// (updated, held) brought down towards its share.
	ReasonPartitionScaleDown Reason = "Partition:ScaleDown"
	// ReasonAbortRollBack: an aborted rollout moves pods back to the
	// current revision, or waits for availability to move more.
	ReasonAbortRollBack Reason = "Abort:RollBack"
	// ReasonAborted: an aborted rollout has every pod back on the current
	// revision; nothing to do until the template changes or a retry.
	ReasonAborted Reason = "Abort:AtStable"
	// ReasonAbortDrainTraffic: an aborted rollout keeps the aborted
	// revision's pods until traffic has left them (Input.AbortDrain),
	// creating the stable side's within maxSurge meanwhile.
	ReasonAbortDrainTraffic Reason = "Abort:DrainTraffic"
	// ReasonSpecifiedDelete: pods labelled specified-delete, or whose
	// in-place update failed, are replaced while no rollout is under way.
	ReasonSpecifiedDelete Reason = "SpecifiedDelete"
	// ReasonDrain: pods on draining nodes are replaced, surge first, while
	// no rollout is under way (drain.go).
	ReasonDrain Reason = "Drain:SurgeFirst"
	// ReasonWaveBake: a wave's pods are updated and available, and its
	// bake runs before the next wave starts (waves.go).
	ReasonWaveBake Reason = "Waves:Bake"
	// ReasonWaitForPodsGone: pods are to be created, but terminating or
	// finished pods still count against them (Input.TerminationComplete,
	// replacement.go): nothing to do until they are gone.
	ReasonWaitForPodsGone Reason = "PodReplacement:WaitForPodsGone"
)

// Compute plans the next step for the MyDeployment described by in. It is
// deterministic, reads no clock and does not modify its input.
//
// Always: finished pods that are not terminating are deleted (they never run
// again; like a ReplicaSet the planner replaces them, unlike it, it does not
// leave them to pod garbage collection) and never count as replicas;
// terminating pods never count towards Replicas+MaxSurge, unless
// TerminationComplete counts every pod until it is gone (replacement.go);
// a finished or terminating pod is never available. At most MaxBurst pods
// are created and at most MaxBurst deleted (finished ones first); a bigger
// step is cut and the next plan goes on from what this one did.
//
// Between those, one strategy plans the step: step (strategy.go) picks it,
// and each strategy's function says what it promises.
//
// Within a group, victims are chosen by the package's deletion ranking;
// RollingUpdate takes unavailable pods before available ones whatever their
// rank, so that the availability budget is spent only when needed.
func Compute(in Input) Plan {
	if in.aborting() {
		return planAbort(in)
	}
	s := newPodSet(in)
	l := newLimits(in, len(s.finished))
	if l.waves = s.waveStep(in); l.waves != nil {
		s.held = max(s.held, min(l.waves.Held, l.replicas)) // a partition per domain, as heldTarget at most Replicas
	}
	p, sized, scaled, rolling := step(in, s, l)
	p.Delete = slices.Concat(s.finished, p.Delete)
	if in.TerminationComplete {
		p, sized = s.afterTermination(in, l, p, sized, rolling, scaled)
	}
	p = p.cut(l.maxBurst)
	p.Drained = s.drained(p.Evict)
	if !in.RespectPDB {
		p.Delete, p.Evict = mergeRemovals(p.Delete, p.Evict, s.isOld), nil
	}
	p.MovingInPlace = s.moving
	p.SizedFor = l.size()
	if sized != nil {
		p.SizedFor = *sized
	}
	// Only scaling events read the record: it must be right whenever several
	// revisions run or one was handled. A plain scale waits for the next
	// new revision's write.
	stale := in.SizedFor == nil || *in.SizedFor != p.SizedFor
	acts := len(p.Create) > 0 || p.Removes() > 0 || len(p.UpdateInPlace) > 0
	p.RecordFirst = stale && l.scalingEvent && rolling && acts
	p.RecordSize = p.RecordFirst || stale && (s.severalRevisions() || l.scalingEvent && scaled && !in.Paused)
	p.RequeueAfter = s.requeueAfter()
	if p.Canary = s.canary; s.canary != nil && s.canary.wait > 0 && (p.RequeueAfter == 0 || s.canary.wait < p.RequeueAfter) {
		p.RequeueAfter = s.canary.wait
	}
	return l.waves.withWaves(p, in.UpdateRevision)
}

// limits are the Input's numbers, normalized and widened so sums cannot overflow.
type limits struct {
	recreate       bool
	replicas       int
	maxSurge       int
	maxUnavailable int
	minAvailable   int
	// maxBurst caps creates and deletes; deleteBurst is what is left of it
	// for active pods once the finished ones are deleted.
	maxBurst, deleteBurst int
	// sizedFor is Input.SizedFor; scalingEvent says a RollingUpdate's
	// replicas changed since it was recorded.
	sizedFor     *Size
	scalingEvent bool
	// waves is the wave under way (waves.go): the old pods it holds do
	// not leave their side (podSet.leaving); nil without one.
	waves *WaveProgress
}

// newLimits applies the normalization documented on Input.
func newLimits(in Input, finished int) limits {
	replicas := max(int(in.Replicas), 0)
	surge := max(int(in.MaxSurge), 0)
	unavailable := max(int(in.MaxUnavailable), 0)
	if surge == 0 && unavailable == 0 {
		unavailable = 1 // same rule as ResolveFenceposts, for callers that skipped it
	}
	unavailable = min(unavailable, replicas) // deploymentutil.MaxUnavailable clamps too
	burst := int(in.MaxBurst)
	if burst <= 0 {
		burst = DefaultMaxBurst
	}
	recreate := in.Strategy == Recreate
	return limits{
		recreate:       recreate,
		replicas:       replicas,
		maxSurge:       surge,
		maxUnavailable: unavailable,
		minAvailable:   replicas - unavailable,
		maxBurst:       burst,
		deleteBurst:    max(0, burst-finished),
		sizedFor:       in.SizedFor,
		scalingEvent:   !recreate && in.SizedFor != nil && int(in.SizedFor.Replicas) != replicas,
	}
}

// scalingDown says Replicas is below what the pods were sized for.
func (l limits) scalingDown() bool {
	return l.scalingEvent && int(l.sizedFor.Replicas) > l.replicas
}

// allowedSize is Deployment's allowed size while several revisions run:
// Replicas+MaxSurge, or 0 when scaled to 0.
func (l limits) allowedSize() int {
	if l.replicas == 0 {
		return 0
	}
	return l.replicas + l.maxSurge
}

// size is what pods sized for Replicas now are sized for.
func (l limits) size() Size {
	return Size{Replicas: int32(l.replicas), MaxReplicas: clampInt32(l.replicas + l.maxSurge)}
}

func clampInt32(n int) int32 {
	return int32(min(max(n, math.MinInt32), math.MaxInt32))
}

// cut keeps at most burst creates, burst removals and burst in-place
// updates, the earliest listed, deletions before evictions.
func (p Plan) cut(burst int) Plan {
	if len(p.UpdateInPlace) > burst {
		p.UpdateInPlace = p.UpdateInPlace[:burst]
	}
	if len(p.Delete) > burst {
		p.Delete = p.Delete[:burst]
	}
	if len(p.Evict) > burst-len(p.Delete) {
		p.Evict = p.Evict[:burst-len(p.Delete)]
	}
	left := int32(burst)
	var create []Creation
	for _, c := range p.Create {
		if n := min(c.Count, left); n > 0 {
			create = append(create, Creation{Revision: c.Revision, Count: n})
			left -= n
		}
	}
	p.Create = create
	return p
}
