package controller

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/status"
)

// Abort to stable (on-failure Abort): the controller's part is deciding
// whether the rollout is aborted, and keeping the abort's record. The
// verdict is the status package's own (status.AbortDue: the last status
// said this rollout exceeded its progress deadline, after any retry); the
// record is AbortedRevisionAnnotation, written by the plan before any pod
// moves back (recordFirst), with one Warning event. It lives in metadata,
// not only in the Progressing condition: a status lost or rewritten (a
// restore, a status written by hand) must not resume a rollout known to
// fail, and the annotation survives where the condition may not. No new
// store: the annotation is read from the object as the freshness record
// has it, like the size record. The planner goes back to the current
// revision (rollout.Input.Aborted, rollout/abort.go); status says
// RolloutAborted.

// recordedAbort says md's abort record names its update revision, with
// on-failure Abort still set (removing the annotation resumes the rollout).
func (s *scope) recordedAbort() bool {
	return s.optIn.Abort && s.update != nil && !s.newRevision &&
		s.md.Annotations[appsv1beta1.AbortedRevisionAnnotation] == s.update.Name
}

// abortOrNot is the planner's Input.Aborted: the record says so, or the
// verdict is due now (the record is then written first).
func (s *scope) abortOrNot() bool {
	return s.recordedAbort() || s.optIn.Abort && !s.newRevision && status.AbortDue(s.md, s.update.Name, s.optIn.RetriedAt)
}

// abortRecord adds to now the abort record's change: the update revision
// when an abort takes effect now, a removal when the record names another
// revision (a new template, or one renumbered by going back to it). It
// reports whether it records a new abort (which must be written first).
func (s *scope) abortRecord(now map[string]string) bool {
	recorded, ok := s.md.Annotations[appsv1beta1.AbortedRevisionAnnotation]
	switch {
	case s.aborted && recorded != s.update.Name:
		now[appsv1beta1.AbortedRevisionAnnotation] = s.update.Name
		return true
	case ok && (recorded != s.update.Name || s.newRevision):
		now[appsv1beta1.AbortedRevisionAnnotation] = ""
	}
	return false
}

// towards is the revision the plan moves pods to: s.target once decided,
// the update revision before.
func (s *scope) towards() *appsv1.ControllerRevision {
	if s.target != nil {
		return s.target
	}
	return s.update
}

// abortEvent records, once the abort record is written, that the rollout
// to the update revision is aborted: an event and a count of aborts.
func (r *MyDeploymentReconciler) abortEvent(s *scope) {
	r.Metrics.RolloutAborted(s.md)
	r.Recorder.Eventf(s.md, s.update, corev1.EventTypeWarning, appsv1beta1.EventRolloutAborted, "Rollout",
		"Rollout to revision %q made no progress within progressDeadlineSeconds: aborted, every pod goes back to revision %q",
		s.update.Name, s.towards().Name)
}
