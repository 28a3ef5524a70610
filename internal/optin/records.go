package optin

import (
	"strconv"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// Records are what the controller keeps on a MyDeployment, in annotations
// of its own, to survive a restart: the update revision's number, what the
// pods were last sized for and the abort record. RecordsOf reads them
// once; the controller, the planner, the plugin, the metrics and the
// Application's traffic read them here and never the annotations
// themselves, so each record has one reading. A record that cannot be
// read counts as absent. The canary step under way is the canary module's
// record (canary.Recorded, internal/optin/canary), read there.
type Records struct {
	// RevisionText is RevisionAnnotation as written ("" when absent), as
	// Deployment's deployment.kubernetes.io/revision; Revision is its
	// number, 0 when absent or not a positive integer.
	RevisionText string
	Revision     int64
	// SizedFor is what the pods were last sized for
	// (DesiredReplicasAnnotation, MaxReplicasAnnotation); nil without a
	// valid DesiredReplicasAnnotation.
	SizedFor *Size
	// Aborted is the revision the abort record names
	// (AbortedRevisionAnnotation); AbortRecorded says the annotation is
	// there, whatever it names.
	Aborted       string
	AbortRecorded bool
}

// Size is what the pods were sized for: Deployment's desired-replicas and
// max-replicas annotations of its ReplicaSets.
type Size struct {
	// Replicas is the spec.replicas the pods were last scaled for.
	Replicas int32
	// MaxReplicas is the total the active pods were sized to, normally
	// Replicas+MaxSurge; 0 if unknown.
	MaxReplicas int32
}

// Annotations are the annotations that record s (see RecordsOf).
func (s Size) Annotations() map[string]string {
	return map[string]string{
		appsv1beta1.DesiredReplicasAnnotation: strconv.FormatInt(int64(s.Replicas), 10),
		appsv1beta1.MaxReplicasAnnotation:     strconv.FormatInt(int64(s.MaxReplicas), 10),
	}
}

// RecordsOf reads md's records.
func RecordsOf(md *appsv1beta1.MyDeployment) Records {
	var r Records
	if md == nil {
		return r
	}
	a := md.Annotations
	r.RevisionText = a[appsv1beta1.RevisionAnnotation]
	if n, err := strconv.ParseInt(r.RevisionText, 10, 64); err == nil && n > 0 {
		r.Revision = n
	}
	r.SizedFor = sizedFor(a)
	r.Aborted, r.AbortRecorded = a[appsv1beta1.AbortedRevisionAnnotation]
	return r
}

// sizedFor reads the size record: nil without a valid
// DesiredReplicasAnnotation; MaxReplicas 0 without a valid
// MaxReplicasAnnotation.
func sizedFor(a map[string]string) *Size {
	desired, err := strconv.ParseInt(a[appsv1beta1.DesiredReplicasAnnotation], 10, 32)
	if err != nil || desired < 0 {
		return nil
	}
	size := &Size{Replicas: int32(desired)}
	if m, err := strconv.ParseInt(a[appsv1beta1.MaxReplicasAnnotation], 10, 32); err == nil && m > 0 {
		size.MaxReplicas = int32(m)
	}
	return size
}
