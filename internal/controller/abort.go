package controller

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/abort"
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
// RolloutAborted. A failed canary analysis (analysis.go) takes the same
// path, with or without on-failure Abort.

// recordedAbort says md's abort record names its update revision, with
// on-failure Abort or analysis still set (removing the annotation resumes
// the rollout).
func recordedAbort(o *observation, update *appsv1.ControllerRevision, newRevision bool) bool {
	return (abort.Of(o.optIn).OnFailure || analyzed(o.optIn)) && update != nil && !newRevision &&
		optin.RecordsOf(o.md).Aborted == update.Name
}

// abortOrNot is the planner's Input.Aborted: the record says so, or a
// verdict is due now, the deadline's or the analysis' (the record is then
// written first).
func abortOrNot(o *observation, c *claimed) bool {
	a := abort.Of(o.optIn)
	return recordedAbort(o, c.update, c.newRevision) || analysisFailure(o, c) != "" ||
		a.OnFailure && !c.newRevision && status.AbortDue(o.md, c.update.Name, a.RetriedAt)
}

// abortRecord adds to now the abort record's change: the update revision
// when an abort takes effect now, a removal when the record names another
// revision (a new template, or one renumbered by going back to it). It
// reports whether it records a new abort (which must be written first).
func abortRecord(md *appsv1beta1.MyDeployment, update *appsv1.ControllerRevision, newRevision, aborted bool, now map[string]string) bool {
	rec := optin.RecordsOf(md)
	recorded, ok := rec.Aborted, rec.AbortRecorded
	switch {
	case aborted && recorded != update.Name:
		now[appsv1beta1.AbortedRevisionAnnotation] = update.Name
		return true
	case ok && (recorded != update.Name || newRevision):
		now[appsv1beta1.AbortedRevisionAnnotation] = ""
	}
	return false
}

// abortEvent records, once the abort record is written, that the rollout
// to the update revision is aborted: an event, and in out a count of aborts.
func (a actor) abortEvent(p *syncPlan, out *outcome) {
	out.abortRecorded = true
	if p.analysisFailure != "" {
		a.recorder.Eventf(p.md, out.revision(p, p.update.Name), corev1.EventTypeWarning, appsv1beta1.ReasonAnalysisFailed, "Rollout",
			"Analysis of revision %q failed: %s: aborted, every pod goes back to revision %q",
			p.update.Name, p.analysisFailure, p.towards.Name)
		return
	}
	a.recorder.Eventf(p.md, out.revision(p, p.update.Name), corev1.EventTypeWarning, appsv1beta1.EventRolloutAborted, "Rollout",
		"Rollout to revision %q made no progress within progressDeadlineSeconds: aborted, every pod goes back to revision %q",
		p.update.Name, p.towards.Name)
}
