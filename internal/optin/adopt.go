package optin

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// AdoptFromKind is the one kind AdoptFromAnnotation may name.
const AdoptFromKind = "Deployment"

// AdoptFrom is the value of AdoptFromAnnotation naming the Deployment name.
func AdoptFrom(name string) string { return AdoptFromKind + "/" + name }

// parseAdoptFrom reads AdoptFromAnnotation, "Deployment/<name>" with a
// valid object name, and returns the name; anything else is an error
// appended to errs.
func parseAdoptFrom(md *appsv1beta1.MyDeployment, errs field.ErrorList) (string, field.ErrorList) {
	v, ok := md.Annotations[appsv1beta1.AdoptFromAnnotation]
	if !ok {
		return "", errs
	}
	kind, name, found := strings.Cut(v, "/")
	if !found || kind != AdoptFromKind || len(validation.IsDNS1123Subdomain(name)) > 0 {
		return "", append(errs, field.Invalid(Path(appsv1beta1.AdoptFromAnnotation), v,
			"must be Deployment/<name>, the Deployment in this namespace whose pods the MyDeployment takes over "+
				"(kubectl mydeployment migrate writes it)"))
	}
	return name, errs
}

// parseAdoptRevisions reads AdoptRevisionsAnnotation, a JSON object whose
// keys are pod-template-hash values and whose values are revision names
// (both label values); anything else is an error appended to errs.
func parseAdoptRevisions(md *appsv1beta1.MyDeployment, errs field.ErrorList) (map[string]string, field.ErrorList) {
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
		return nil, append(errs, field.Invalid(Path(appsv1beta1.AdoptRevisionsAnnotation), v,
			"must be a JSON object of pod-template-hash values to revision names; the controller writes it "+
				"while it takes over a Deployment's pods"))
	}
	return m, errs
}

// FormatAdoptRevisions is the AdoptRevisionsAnnotation value of m, its keys
// sorted (encoding/json sorts map keys).
func FormatAdoptRevisions(m map[string]string) string {
	if m == nil {
		m = map[string]string{}
	}
	out, _ := json.Marshal(m) // a map of strings always encodes
	return string(out)
}
