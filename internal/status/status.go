// Package status computes a MyDeployment's status, with Deployment's
// counters and conditions, from what one sync observed and did. It is pure:
// the clock is passed in, nothing is read or written.
package status

import (
	"fmt"
	"math"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
)

// Failure is a pod write the API server refused; it becomes the
// ReplicaFailure condition.
type Failure struct {
	Reason  string // appsv1beta1.ReasonFailedCreate or ReasonFailedDelete
	Message string
	// Current: a condition of the same reason takes this message (it
	// names what failed: a hook's Job, whose name a retry changes);
	// otherwise it keeps its own, as Deployment's does.
	Current bool
}

// A Reporter is an opt-in module's parsed spec (optin.Spec) that sets its
// part of the status's Input; the controller calls each of an object's, in
// the registry's order, once the rest of the Input is set.
type Reporter interface {
	ReportInput(in *Input)
}

// Input is one sync's view of a MyDeployment.
type Input struct {
	// Object is the MyDeployment as read at the start of the sync; its
	// status is the previous one.
	Object *appsv1beta1.MyDeployment
	// Synced: the sync of Object's generation succeeded, so
	// observedGeneration may advance to it.
	Synced bool
	// Counts of the owned pods, by rollout.Count.
	Counts rollout.Counts
	// CurrentReplicas counts active pods of CurrentRevision.
	CurrentReplicas int32
	// CurrentRevision and UpdateRevision are revision names.
	CurrentRevision, UpdateRevision string
	// NewRevision: the update revision was created (or re-numbered by a
	// rollback) in this sync.
	NewRevision    bool
	CollisionCount int32
	// LabelSelector is the selector in string form (scale subresource).
	LabelSelector string
	// MaxUnavailable is the resolved maxUnavailable (0 for Recreate).
	MaxUnavailable int32
	// Planned, when known, is how many active pods the sync's plan keeps
	// or creates: Deployment's sum of its ReplicaSets' desired replicas,
	// from which it counts unavailable replicas. Nil (no plan, e.g. the
	// sync failed first): the larger of spec.replicas and active pods.
	Planned *int32
	// Failure is the last refused pod write of this sync, nil if none.
	Failure *Failure
	// Partition is how many pods the rollout holds on the current revision
	// (the partition module's Reporter); 0 without a partition or when the
	// current revision is the update revision.
	Partition int32
	// Canary is where a canary rollout is once the sync's plan is carried
	// out (rollout.Plan.Canary); nil when none is under way.
	Canary *rollout.CanaryProgress
	// Aborted names the update revision whose rollout is aborted
	// (on-failure Abort, see AbortDue); "" when none is. AbortOnFailure
	// says on-failure is Abort; RetriedAt is the last `rollout retry`.
	Aborted        string
	AbortOnFailure bool
	RetriedAt      time.Time
	// AbortedBy, when set with Aborted, is the module's verdict that
	// aborts it ("analysis failed: QUERY = V (wants ...)", "hook Job ...
	// failed: ...").
	AbortedBy string
	// AnalysisOptIn says the object opts into canary analysis; Analysis
	// is what this sync measured (nil: nothing). The three are the
	// analysis module's Reporter's.
	AnalysisOptIn bool
	Analysis      *Analysis
	// AnalysisHolds: the update revision does not become current, even
	// with every pod updated and available, until its canary analysis
	// passed the step (a failure at the last step must still find the
	// stable revision to abort to).
	AnalysisHolds bool
	// Wave is where a waves rollout is (the waves module's Reporter); nil
	// when none is under way.
	Wave *Wave
	// Plan is the sync's plan once carried out (nil: the sync made none):
	// a Reporter says where the plan moved its module on to (the wave a
	// bake's end started), not where the sync read it was.
	Plan *rollout.Plan
	// WaitingForHandOver, when not empty, says what a MyDeployment taking
	// over a Deployment's pods waits for (adopt-from): Progressing is
	// Unknown with ReasonWaitingForHandOver and that message, and no
	// deadline runs.
	WaitingForHandOver string
	// Waiting, when set, says the rollout waits on something a module runs
	// (the hooks module: a hook's Job, running or failed): Progressing
	// says so, no deadline runs, and the update revision does not become
	// current.
	Waiting *Waiting
	Now     time.Time
}

// Waiting is the Progressing condition of a rollout that waits on a
// module (Input.Waiting).
type Waiting struct {
	Status          corev1.ConditionStatus
	Reason, Message string
}

// Wave is where a waves rollout is: Progressing says Message ("wave 2 of
// 3: zone-b") while the rollout moves; while the wave bakes (Baking) with
// every pod available, the rollout holds (ReasonWaveBaking), as at a canary
// pause: no deadline runs from a bake.
type Wave struct {
	Message string
	Baking  bool
}

// ReasonWaveBaking: Progressing=True, a waves rollout holds while its
// done wave bakes, before the next wave starts.
const ReasonWaveBaking = "WaveBaking"

// Result is the new status and, when a rollout is under way, when to check
// its progress deadline again.
type Result struct {
	Status appsv1beta1.MyDeploymentStatus
	// RequeueAfter > 0: the progress deadline expires then if nothing moves.
	RequeueAfter time.Duration
	// DeadlineExceeded: this status newly reports ProgressDeadlineExceeded
	// (the caller records the event once).
	DeadlineExceeded bool
	// PartitionHeld: this status newly reports the rollout held at its
	// partition (Progressing reason PartitionAvailable); the caller records
	// the event once. HeldMessage says how far it went.
	PartitionHeld bool
	HeldMessage   string
	// HandOverBegan: this status newly reports a hand-over waiting (the
	// caller records the event once).
	HandOverBegan bool
}

// Compute returns in.Object's next status. Conditions follow Deployment's
// controller (sync.go syncRolloutStatus, progress.go): a condition whose
// status and reason are unchanged keeps its timestamps, so a MyDeployment at
// rest gets an identical status and no write.
func Compute(in Input) Result {
	md := in.Object
	desired := ptr.Deref(md.Spec.Replicas, 1)
	old := md.Status
	s := *old.DeepCopy()

	s.ObservedGeneration = old.ObservedGeneration
	if in.Synced {
		s.ObservedGeneration = md.Generation
	}
	c := in.Counts
	s.Replicas, s.ReadyReplicas, s.AvailableReplicas, s.UpdatedReplicas = c.Replicas, c.Ready, c.Available, c.Updated
	s.TerminatingReplicas = ptr.To(c.Terminating)
	s.UnavailableReplicas = max(0, ptr.Deref(in.Planned, max(desired, c.Replicas))-c.Available)
	s.UpdateRevision = in.UpdateRevision
	s.LabelSelector = in.LabelSelector
	s.CurrentRevision, s.CurrentReplicas = in.CurrentRevision, in.CurrentReplicas
	abortable := in.AbortOnFailure || in.AnalysisOptIn
	if c.Updated == desired && c.Replicas == desired && in.Aborted == "" && (!abortable || c.Available == desired) &&
		!in.AnalysisHolds && in.Waiting == nil {
		// The rollout is complete: the update revision becomes current
		// (StatefulSet). Under on-failure Abort or analysis only once its
		// pods are available: the current revision is what an abort goes
		// back to.
		s.CurrentRevision, s.CurrentReplicas = in.UpdateRevision, c.Updated
	}
	if in.CollisionCount > 0 || old.CollisionCount != nil {
		s.CollisionCount = ptr.To(in.CollisionCount)
	}

	now := metav1.NewTime(in.Now)
	if c.Available >= desired-in.MaxUnavailable {
		set(&s, cond(appsv1beta1.ConditionAvailable, corev1.ConditionTrue, appsv1beta1.ReasonMinimumReplicasAvailable, "MyDeployment has minimum availability.", now))
	} else {
		set(&s, cond(appsv1beta1.ConditionAvailable, corev1.ConditionFalse, appsv1beta1.ReasonMinimumReplicasUnavailable, "MyDeployment does not have minimum availability.", now))
	}

	var r Result
	switch {
	case in.WaitingForHandOver != "":
		r.HandOverBegan = waitForHandOver(&s, in.WaitingForHandOver, now)
	case in.Aborted != "":
		setAborted(in, &s, now)
	case in.Waiting != nil:
		setWaiting(&s, *in.Waiting, now)
	case hasDeadline(md):
		r.RequeueAfter, r.DeadlineExceeded = progress(in, &s, desired, now)
		if c := Get(&s, appsv1beta1.ConditionProgressing); c != nil && c.Reason == appsv1beta1.ReasonPartitionAvailable {
			prev := Get(&old, appsv1beta1.ConditionProgressing)
			r.PartitionHeld = prev == nil || prev.Reason != appsv1beta1.ReasonPartitionAvailable || prev.Message != c.Message
			r.HeldMessage = c.Message
		}
	default:
		remove(&s, appsv1beta1.ConditionProgressing)
	}

	setAnalysis(in, &s, now)
	SetFailure(&s, in.Failure, in.Now)
	r.Status = s
	return r
}

// SetFailure sets the ReplicaFailure condition from f, or removes it when f
// is nil; nothing else in s changes.
func SetFailure(s *appsv1beta1.MyDeploymentStatus, f *Failure, now time.Time) {
	if f == nil {
		remove(s, appsv1beta1.ConditionReplicaFailure)
		return
	}
	c := cond(appsv1beta1.ConditionReplicaFailure, corev1.ConditionTrue, f.Reason, f.Message, metav1.NewTime(now))
	if cur := Get(s, c.Type); f.Current && cur != nil && cur.Status == c.Status && cur.Reason == c.Reason && cur.Message != c.Message {
		c.LastTransitionTime = cur.LastTransitionTime
		remove(s, c.Type)
	}
	set(s, c)
}

// progress maintains the Progressing condition; it returns when to look at
// the deadline again and whether the deadline was newly exceeded.
func progress(in Input, s *appsv1beta1.MyDeploymentStatus, desired int32, now metav1.Time) (time.Duration, bool) {
	if !progressBegins(in, s, now) {
		return 0, false
	}
	retried(in, s, now)
	return progressTracked(in, s, desired, now, Get(s, appsv1beta1.ConditionProgressing))
}

// progressBegins resets what a hand-over left, holds a paused object (false:
// nothing more to track) and says a new or a found revision.
func progressBegins(in Input, s *appsv1beta1.MyDeploymentStatus, now metav1.Time) bool {
	md := in.Object
	current := Get(s, appsv1beta1.ConditionProgressing)
	if current != nil && current.Reason == appsv1beta1.ReasonWaitingForHandOver {
		// The hand-over is done: progress is tracked from now, as for a new object.
		remove(s, appsv1beta1.ConditionProgressing)
		current = nil
	}
	timedOut := current != nil && current.Reason == appsv1beta1.ReasonProgressDeadlineExceeded
	pausedCond := current != nil && current.Reason == appsv1beta1.ReasonPaused

	if md.Spec.Paused {
		// The deadline does not run while paused; a reported timeout stays.
		if !timedOut && !pausedCond {
			set(s, cond(appsv1beta1.ConditionProgressing, corev1.ConditionUnknown, appsv1beta1.ReasonPaused, "MyDeployment is paused", now))
		}
		return false
	}
	if pausedCond {
		set(s, cond(appsv1beta1.ConditionProgressing, corev1.ConditionUnknown, appsv1beta1.ReasonResumed, "MyDeployment is resumed", now))
	}
	switch {
	case in.NewRevision:
		set(s, cond(appsv1beta1.ConditionProgressing, corev1.ConditionTrue, appsv1beta1.ReasonNewRevisionCreated,
			fmt.Sprintf("Created new revision %q", in.UpdateRevision), now))
	case Get(s, appsv1beta1.ConditionProgressing) == nil:
		set(s, cond(appsv1beta1.ConditionProgressing, corev1.ConditionTrue, appsv1beta1.ReasonFoundNewRevision,
			fmt.Sprintf("Found new revision %q", in.UpdateRevision), now))
	}
	return true
}

// progressTracked is the rest of progress once it is tracked: the holds,
// progress and the deadline, from the Progressing condition current.
func progressTracked(in Input, s *appsv1beta1.MyDeploymentStatus, desired int32, now metav1.Time,
	current *appsv1.DeploymentCondition) (time.Duration, bool) {
	md := in.Object
	if s.Replicas == s.UpdatedReplicas && current.Reason == appsv1beta1.ReasonNewRevisionAvailable {
		return 0, false // complete and still complete: nothing to track
	}
	old := md.Status
	switch {
	case pausedAtCanaryStep(in, s, desired):
		// Waiting, not failing: no deadline runs. Each pause says which.
		reason := appsv1beta1.ReasonCanaryPaused
		if in.Canary.WeightHeld {
			reason = appsv1beta1.ReasonWeightHolds
		}
		hold(s, current, cond(appsv1beta1.ConditionProgressing, corev1.ConditionTrue, reason, in.Canary.Message, now))
		return 0, false
	case bakingWave(in, s, desired):
		hold(s, current, cond(appsv1beta1.ConditionProgressing, corev1.ConditionTrue, ReasonWaveBaking, in.Wave.Message, now))
		return 0, false
	case heldAtPartition(in, s, desired):
		// Held, not failing: no deadline runs. A new hold (another
		// partition) says so with its own message.
		hold(s, current, cond(appsv1beta1.ConditionProgressing, corev1.ConditionTrue, appsv1beta1.ReasonPartitionAvailable,
			fmt.Sprintf("%d of %d pods updated, %d held by partition", s.UpdatedReplicas, desired, in.Partition), now))
		return 0, false
	case s.UpdatedReplicas == desired && s.Replicas == desired && s.AvailableReplicas == desired && s.ObservedGeneration >= md.Generation:
		set(s, cond(appsv1beta1.ConditionProgressing, corev1.ConditionTrue, appsv1beta1.ReasonNewRevisionAvailable,
			fmt.Sprintf("MyDeployment %q has successfully progressed.", md.Name), now))
		return 0, false
	case progressed(old, *s) || canaryHeld(current.Reason) && in.Canary != nil ||
		current.Reason == ReasonWaveBaking:
		// A pause or a bake that ended restarts the deadline as progress does.
		c := cond(appsv1beta1.ConditionProgressing, corev1.ConditionTrue, appsv1beta1.ReasonRevisionUpdated,
			progressMessage(in), now)
		if current.Status == corev1.ConditionTrue {
			c.LastTransitionTime = current.LastTransitionTime
		}
		remove(s, appsv1beta1.ConditionProgressing)
		set(s, c) // refreshes lastUpdateTime: progress restarts the deadline
	case in.Wave != nil && current.Reason == appsv1beta1.ReasonRevisionUpdated && current.Message != in.Wave.Message:
		// The next wave began before any of its pods moved: said at once,
		// the deadline still running from the last progress.
		c := *current
		c.Message = in.Wave.Message
		remove(s, appsv1beta1.ConditionProgressing)
		s.Conditions = append(s.Conditions, c)
	case current.Reason == appsv1beta1.ReasonProgressDeadlineExceeded, canaryHeld(current.Reason):
		// A pause is left as it is by a sync that planned nothing: no
		// deadline runs from it.
		return 0, false
	}

	current = Get(s, appsv1beta1.ConditionProgressing)
	deadline := current.LastUpdateTime.Add(time.Duration(*md.Spec.ProgressDeadlineSeconds) * time.Second)
	if !deadline.After(now.Time) {
		set(s, cond(appsv1beta1.ConditionProgressing, corev1.ConditionFalse, appsv1beta1.ReasonProgressDeadlineExceeded,
			fmt.Sprintf("MyDeployment %q has timed out progressing.", md.Name), now))
		return 0, true
	}
	// Look again when the deadline expires (requeueStuckDeployment), whatever
	// the condition's status: a resumed rollout is tracked too.
	return deadline.Sub(now.Time) + time.Second, false
}

// waitForHandOver sets Progressing to Unknown, ReasonWaitingForHandOver,
// with msg (a new message replaces the old one, keeping the transition
// time); it reports whether the wait is new.
func waitForHandOver(s *appsv1beta1.MyDeploymentStatus, msg string, now metav1.Time) bool {
	current := Get(s, appsv1beta1.ConditionProgressing)
	began := current == nil || current.Reason != appsv1beta1.ReasonWaitingForHandOver
	if !began && current.Message == msg {
		return false
	}
	c := cond(appsv1beta1.ConditionProgressing, corev1.ConditionUnknown, appsv1beta1.ReasonWaitingForHandOver, msg, now)
	if current != nil && current.Status == corev1.ConditionUnknown {
		c.LastTransitionTime = current.LastTransitionTime
	}
	remove(s, appsv1beta1.ConditionProgressing)
	set(s, c)
	return began
}

// setWaiting sets Progressing as w says; a condition of the same status
// keeps its transition time, and one the same in every word its update
// time too (no write at rest).
func setWaiting(s *appsv1beta1.MyDeploymentStatus, w Waiting, now metav1.Time) {
	c := cond(appsv1beta1.ConditionProgressing, w.Status, w.Reason, w.Message, now)
	if cur := Get(s, appsv1beta1.ConditionProgressing); cur != nil && cur.Status == c.Status {
		if cur.Reason == c.Reason && cur.Message == c.Message {
			return
		}
		c.LastTransitionTime = cur.LastTransitionTime
	}
	remove(s, appsv1beta1.ConditionProgressing)
	set(s, c)
}

// heldAtPartition: the rollout went as far as the partition lets it: the
// generation observed, desired pods, all available, none terminating,
// desired-partition of them updated.
func heldAtPartition(in Input, s *appsv1beta1.MyDeploymentStatus, desired int32) bool {
	return in.Partition > 0 && s.ObservedGeneration >= in.Object.Generation && s.Replicas == desired &&
		s.AvailableReplicas == desired && s.UpdatedReplicas == desired-min(in.Partition, desired) &&
		ptr.Deref(s.TerminatingReplicas, 0) == 0
}

// hold sets the Progressing condition to c, a hold no deadline runs from
// (a partition's, a canary pause's), unless current already says so: a
// new message is a new hold, a True condition keeps its transition time.
func hold(s *appsv1beta1.MyDeploymentStatus, current *appsv1.DeploymentCondition, c appsv1.DeploymentCondition) {
	if current.Reason == c.Reason && current.Message == c.Message {
		return
	}
	if current.Status == corev1.ConditionTrue {
		c.LastTransitionTime = current.LastTransitionTime
	}
	remove(s, appsv1beta1.ConditionProgressing)
	set(s, c)
}

// pausedAtCanaryStep: a canary rollout is at a pause, waits for a step's
// analysis, or is held by its stated weight, with the pods at the step's shares: the generation observed, desired pods, all
// available, none terminating, desired-held of them updated.
func pausedAtCanaryStep(in Input, s *appsv1beta1.MyDeploymentStatus, desired int32) bool {
	c := in.Canary
	return c != nil && (c.Paused || c.Analyzing || c.WeightHeld) && s.ObservedGeneration >= in.Object.Generation && s.Replicas == desired &&
		s.AvailableReplicas == desired && s.UpdatedReplicas == desired-min(max(c.Held, 0), desired) &&
		ptr.Deref(s.TerminatingReplicas, 0) == 0
}

// canaryHeld: reason is a canary's hold (a pause, an analysis, a weight).
func canaryHeld(reason string) bool {
	return reason == appsv1beta1.ReasonCanaryPaused || reason == appsv1beta1.ReasonWeightHolds
}

// bakingWave: a waves rollout's done wave bakes with every pod
// available: the generation observed, desired pods, none terminating.
func bakingWave(in Input, s *appsv1beta1.MyDeploymentStatus, desired int32) bool {
	return in.Wave != nil && in.Wave.Baking && s.ObservedGeneration >= in.Object.Generation && s.Replicas == desired &&
		s.AvailableReplicas == desired && ptr.Deref(s.TerminatingReplicas, 0) == 0
}

// progressMessage is Progressing's message while a rollout moves: the
// wave under way, or the revision.
func progressMessage(in Input) string {
	if in.Wave != nil {
		return in.Wave.Message
	}
	return fmt.Sprintf("Revision %q is progressing.", in.UpdateRevision)
}

// progressed is Deployment's DeploymentProgressing: more pods updated, ready
// or available, or fewer old pods, than the last status said.
func progressed(old, s appsv1beta1.MyDeploymentStatus) bool {
	oldOld := old.Replicas - old.UpdatedReplicas
	newOld := s.Replicas - s.UpdatedReplicas
	return s.UpdatedReplicas > old.UpdatedReplicas || newOld < oldOld ||
		s.ReadyReplicas > old.ReadyReplicas || s.AvailableReplicas > old.AvailableReplicas
}

func hasDeadline(md *appsv1beta1.MyDeployment) bool {
	return md.Spec.ProgressDeadlineSeconds != nil && *md.Spec.ProgressDeadlineSeconds != math.MaxInt32
}

func cond(t appsv1.DeploymentConditionType, st corev1.ConditionStatus, reason, msg string, now metav1.Time) appsv1.DeploymentCondition {
	return appsv1.DeploymentCondition{Type: t, Status: st, Reason: reason, Message: msg, LastUpdateTime: now, LastTransitionTime: now}
}

// Get returns the condition of type t, or nil.
func Get(s *appsv1beta1.MyDeploymentStatus, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			return &s.Conditions[i]
		}
	}
	return nil
}

// set is SetDeploymentCondition: same status and reason leaves the condition
// as it is (timestamps included); same status keeps lastTransitionTime.
func set(s *appsv1beta1.MyDeploymentStatus, c appsv1.DeploymentCondition) {
	if cur := Get(s, c.Type); cur != nil {
		if cur.Status == c.Status && cur.Reason == c.Reason {
			return
		}
		if cur.Status == c.Status {
			c.LastTransitionTime = cur.LastTransitionTime
		}
		remove(s, c.Type)
	}
	s.Conditions = append(s.Conditions, c)
}

func remove(s *appsv1beta1.MyDeploymentStatus, t appsv1.DeploymentConditionType) {
	kept := s.Conditions[:0:0]
	for _, c := range s.Conditions {
		if c.Type != t {
			kept = append(kept, c)
		}
	}
	if len(kept) == 0 {
		kept = nil
	}
	s.Conditions = kept
}

// Pressing reports whether next must be written at once rather than folded
// into a later write of the same object: the spec's generation was observed,
// a revision, the selector or the collision count changed, a condition
// changed its status or reason, or the MyDeployment has just met its spec
// (every desired replica updated, ready and available), which is what
// `kubectl rollout status`, `kubectl wait` and every waiter wait for, as
// Deployment's status says at once; and again once nothing is terminating.
// The rest is a rollout's progress counting up and down, and pods removed
// by a scale-in or a rollout's last step going one by one, which can wait a
// moment.
func Pressing(prev, next appsv1beta1.MyDeploymentStatus, desired int32) bool {
	if prev.ObservedGeneration != next.ObservedGeneration || prev.UpdateRevision != next.UpdateRevision ||
		prev.CurrentRevision != next.CurrentRevision || prev.LabelSelector != next.LabelSelector ||
		ptr.Deref(prev.CollisionCount, 0) != ptr.Deref(next.CollisionCount, 0) {
		return true
	}
	if len(prev.Conditions) != len(next.Conditions) {
		return true
	}
	for _, c := range next.Conditions {
		if p := Get(&prev, c.Type); p == nil || p.Status != c.Status || p.Reason != c.Reason {
			return true
		}
	}
	return meetsSpec(next, desired) && (!meetsSpec(prev, desired) || ptr.Deref(next.TerminatingReplicas, 0) == 0)
}

// meetsSpec says every desired replica is counted, updated, ready and available.
func meetsSpec(s appsv1beta1.MyDeploymentStatus, desired int32) bool {
	return s.Replicas == desired && s.UpdatedReplicas == desired && s.ReadyReplicas == desired && s.AvailableReplicas == desired
}
