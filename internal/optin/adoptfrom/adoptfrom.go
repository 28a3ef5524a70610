// Package adoptfrom is the adopt-from opt-in (AdoptFromAnnotation): a
// MyDeployment takes over a Deployment's pods without restarting one
// (`kubectl mydeployment migrate` writes it), recording which of the
// Deployment's ReplicaSets became which of its revisions
// (AdoptRevisionsAnnotation, the controller's record of the hand-over).
// The module parses both; while an object names a Deployment its sync is
// a hand-over (the controller's handOverSync), which reads the module's
// spec through optin.HandOverOf.
package adoptfrom

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
)

// Name is the module's name in an optin.Set.
const Name = "adoptfrom"

// Module is the adopt-from module.
var Module optin.Module = module{}

type module struct{}

func (module) Name() string { return Name }

func (module) Keys() []string {
	return []string{appsv1beta1.AdoptFromAnnotation, appsv1beta1.AdoptRevisionsAnnotation}
}

// Parse reads AdoptFromAnnotation and AdoptRevisionsAnnotation: nil when
// md has neither. Each value that can never work is an error naming its
// annotation: an adopt-from other than Deployment/<name>, an
// adopt-revisions that is not a JSON object of hashes to revision names.
// The spec returned beside errors holds what could be parsed.
func (module) Parse(md *appsv1beta1.MyDeployment) (optin.Spec, field.ErrorList) {
	_, from := md.Annotations[appsv1beta1.AdoptFromAnnotation]
	_, revisions := md.Annotations[appsv1beta1.AdoptRevisionsAnnotation]
	if !from && !revisions {
		return nil, nil
	}
	var (
		a    AdoptFrom
		errs field.ErrorList
	)
	a.Deployment, errs = parseFrom(md, errs)
	a.Revisions, errs = parseRevisions(md, errs)
	return &a, errs
}

// AdoptFrom is the Spec of an object that takes over a Deployment's pods,
// or has a record of a hand-over.
type AdoptFrom struct {
	// Deployment names the Deployment whose pods the MyDeployment takes
	// over; "" when AdoptFromAnnotation is absent (or refused).
	Deployment string
	// Revisions maps a ReplicaSet's pod-template-hash to the revision its
	// pods are adopted into; nil when AdoptRevisionsAnnotation is absent,
	// empty when it is "{}".
	Revisions map[string]string
}

// Module implements optin.Spec.
func (*AdoptFrom) Module() string { return Name }

// From implements optin.HandOver.
func (a *AdoptFrom) From() string { return a.Deployment }

// Recorded implements optin.HandOver.
func (a *AdoptFrom) Recorded() map[string]string { return a.Revisions }

var _ optin.HandOver = (*AdoptFrom)(nil)

// parseFrom reads AdoptFromAnnotation, "Deployment/<name>" with a valid
// object name, and returns the name; anything else is an error appended
// to errs.
func parseFrom(md *appsv1beta1.MyDeployment, errs field.ErrorList) (string, field.ErrorList) {
	v, ok := md.Annotations[appsv1beta1.AdoptFromAnnotation]
	if !ok {
		return "", errs
	}
	kind, name, found := strings.Cut(v, "/")
	if !found || kind != optin.AdoptFromKind || len(validation.IsDNS1123Subdomain(name)) > 0 {
		return "", append(errs, field.Invalid(optin.Path(appsv1beta1.AdoptFromAnnotation), v,
			"must be Deployment/<name>, the Deployment in this namespace whose pods the MyDeployment takes over "+
				"(kubectl mydeployment migrate writes it)"))
	}
	return name, errs
}

// parseRevisions reads AdoptRevisionsAnnotation, a JSON object whose keys
// are pod-template-hash values and whose values are revision names (both
// label values); anything else is an error appended to errs.
func parseRevisions(md *appsv1beta1.MyDeployment, errs field.ErrorList) (map[string]string, field.ErrorList) {
	v, ok := md.Annotations[appsv1beta1.AdoptRevisionsAnnotation]
	if !ok {
		return nil, errs
	}
	var m map[string]string
	err := json.Unmarshal([]byte(v), &m)
	if err == nil && m == nil {
		err = fmt.Errorf("null")
	}
	for hash, rev := range m {
		if err == nil && (len(validation.IsValidLabelValue(hash)) > 0 || hash == "" ||
			len(validation.IsDNS1123Subdomain(rev)) > 0 || len(validation.IsValidLabelValue(rev)) > 0) {
			err = fmt.Errorf("%q: %q", hash, rev)
		}
	}
	if err != nil {
		return nil, append(errs, field.Invalid(optin.Path(appsv1beta1.AdoptRevisionsAnnotation), v,
			"must be a JSON object of pod-template-hash values to revision names; the controller writes it "+
				"while it takes over a Deployment's pods"))
	}
	return m, errs
}
