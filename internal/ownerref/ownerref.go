// Package ownerref edits owner reference lists the way Kubernetes'
// ControllerRefManager does: one reference per owner UID.
package ownerref

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// WithController returns refs with ref as the one reference to its UID: an
// existing reference to the same UID is replaced in place (any further ones
// dropped), else ref is appended. refs is not modified.
func WithController(refs []metav1.OwnerReference, ref metav1.OwnerReference) []metav1.OwnerReference {
	out := make([]metav1.OwnerReference, 0, len(refs)+1)
	merged := false
	for _, r := range refs {
		switch {
		case r.UID != ref.UID:
			out = append(out, r)
		case !merged:
			out = append(out, ref)
			merged = true
		}
	}
	if !merged {
		out = append(out, ref)
	}
	return out
}
