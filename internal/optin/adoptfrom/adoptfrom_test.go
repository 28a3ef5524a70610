package adoptfrom

import (
	"maps"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

func TestParseAdopt(t *testing.T) {
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		from        string
		revisions   map[string]string // nil: absent
		err         string
	}{
		{name: "none"},
		{name: "a Deployment", annotations: map[string]string{appsv1beta1.AdoptFromAnnotation: "Deployment/web"}, from: "web"},
		{name: "another kind", annotations: map[string]string{appsv1beta1.AdoptFromAnnotation: "StatefulSet/web"},
			err: `metadata.annotations[apps.mydeployment.io/adopt-from]: Invalid value: "StatefulSet/web": must be Deployment/<name>`},
		{name: "lower-case kind", annotations: map[string]string{appsv1beta1.AdoptFromAnnotation: "deployment/web"}, err: "must be Deployment/<name>"},
		{name: "no name", annotations: map[string]string{appsv1beta1.AdoptFromAnnotation: "Deployment/"}, err: "must be Deployment/<name>"},
		{name: "a name alone", annotations: map[string]string{appsv1beta1.AdoptFromAnnotation: "web"}, err: "must be Deployment/<name>"},
		{name: "not an object name", annotations: map[string]string{appsv1beta1.AdoptFromAnnotation: "Deployment/Web_1"}, err: "must be Deployment/<name>"},
		{name: "revisions recorded", annotations: map[string]string{appsv1beta1.AdoptRevisionsAnnotation: `{"7d9f8c6b5":"web-5d8f7c9b4"}`},
			revisions: map[string]string{"7d9f8c6b5": "web-5d8f7c9b4"}},
		{name: "seen, none recorded", annotations: map[string]string{appsv1beta1.AdoptRevisionsAnnotation: `{}`}, revisions: map[string]string{}},
		{name: "revisions not JSON", annotations: map[string]string{appsv1beta1.AdoptRevisionsAnnotation: `web-5d8f7c9b4`},
			err: "must be a JSON object of pod-template-hash values to revision names"},
		{name: "revisions null", annotations: map[string]string{appsv1beta1.AdoptRevisionsAnnotation: `null`}, err: "must be a JSON object"},
		{name: "revisions naming no valid revision", annotations: map[string]string{appsv1beta1.AdoptRevisionsAnnotation: `{"7d9f8c6b5":"Web 1"}`},
			err: "must be a JSON object"},
		{name: "revisions of an empty hash", annotations: map[string]string{appsv1beta1.AdoptRevisionsAnnotation: `{"":"web-1"}`},
			err: "must be a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, errs := Module.Parse(&appsv1beta1.MyDeployment{ObjectMeta: metav1.ObjectMeta{Annotations: tc.annotations}})
			o, _ := spec.(*AdoptFrom)
			if o == nil {
				o = &AdoptFrom{}
			}
			switch {
			case tc.err == "" && len(errs) > 0:
				t.Fatalf("unexpected errors: %v", errs)
			case tc.err != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.err)):
				t.Fatalf("errors %v, want one containing %q", errs, tc.err)
			}
			if o.Deployment != tc.from {
				t.Errorf("Deployment = %q, want %q", o.Deployment, tc.from)
			}
			if (o.Revisions == nil) != (tc.revisions == nil) || !maps.Equal(o.Revisions, tc.revisions) {
				t.Errorf("Revisions = %v, want %v", o.Revisions, tc.revisions)
			}
		})
	}
}
