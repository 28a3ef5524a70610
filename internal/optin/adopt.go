package optin

import (
	"encoding/json"
)

// AdoptFromKind is the one kind AdoptFromAnnotation may name.
const AdoptFromKind = "Deployment"

// AdoptFrom is the value of AdoptFromAnnotation naming the Deployment name.
func AdoptFrom(name string) string { return AdoptFromKind + "/" + name }

// FormatAdoptRevisions is the AdoptRevisionsAnnotation value of m, its keys
// sorted (encoding/json sorts map keys).
func FormatAdoptRevisions(m map[string]string) string {
	if m == nil {
		m = map[string]string{}
	}
	out, _ := json.Marshal(m) // a map of strings always encodes
	return string(out)
}

// A HandOver is the Spec of an object that takes over a Deployment's pods
// (the adopt-from module's): while it names one, the object's sync is a
// hand-over.
type HandOver interface {
	Spec
	// From names the Deployment; "" when none is named.
	From() string
	// Recorded maps a ReplicaSet's pod-template-hash to the revision its
	// pods are adopted into (the controller's record); nil before any.
	Recorded() map[string]string
}

// HandOverOf is the Deployment s's object takes over ("" for none) and
// what the hand-over recorded.
func HandOverOf(s Set) (from string, recorded map[string]string) {
	for h := range Each[HandOver](s) {
		return h.From(), h.Recorded()
	}
	return "", nil
}
