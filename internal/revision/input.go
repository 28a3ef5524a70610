package revision

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Input is what the opt-ins add to the update revision a sync decides:
// the pod template it records, and whether none may be recorded now. Each
// opt-in that takes part is a Contributor (internal/optin/configrollout:
// the hashes of the config the template reads).
type Input struct {
	// Template is the pod template the update revision records: the
	// spec's, as the contributors replaced it (never modified in place).
	Template *corev1.PodTemplateSpec
	// Key names what the contributors added to Template ("" for nothing):
	// the revision's data is computed once per spec generation and Key.
	Key string
	// Held: no revision can say what the pods would run now; the sync
	// plans as if the template were unchanged (the update revision the
	// status names), and the opt-in's status says why.
	Held bool
	// RetryAfter, when positive, is when to look again while held:
	// nothing else syncs the object when what holds it ends.
	RetryAfter time.Duration
}

// A Contributor is an opt-in's part in Input (a module's Spec).
type Contributor interface {
	RevisionInput(in *Input)
}
