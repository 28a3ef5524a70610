package optin

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// Each record reads as its writer wrote it, and one it cannot read counts
// as absent, whatever the other records say.
func TestRecordsOf(t *testing.T) {
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		want        Records
	}{
		{"none", nil, Records{}},
		{"every record", map[string]string{
			appsv1beta1.RevisionAnnotation:        "4",
			appsv1beta1.DesiredReplicasAnnotation: "10",
			appsv1beta1.MaxReplicasAnnotation:     "13",
			appsv1beta1.AbortedRevisionAnnotation: "web-7d9c",
		}, Records{RevisionText: "4", Revision: 4, SizedFor: &Size{Replicas: 10, MaxReplicas: 13},
			Aborted: "web-7d9c", AbortRecorded: true}},
		{"unreadable", map[string]string{
			appsv1beta1.RevisionAnnotation:        "four",
			appsv1beta1.DesiredReplicasAnnotation: "-1",
			appsv1beta1.MaxReplicasAnnotation:     "13",
		}, Records{RevisionText: "four"}},
		{"a size without its maximum, an empty abort record", map[string]string{
			appsv1beta1.DesiredReplicasAnnotation: "3",
			appsv1beta1.MaxReplicasAnnotation:     "many",
			appsv1beta1.AbortedRevisionAnnotation: "",
		}, Records{SizedFor: &Size{Replicas: 3}, AbortRecorded: true}},
		{"revision 0 is no number", map[string]string{appsv1beta1.RevisionAnnotation: "0"}, Records{RevisionText: "0"}},
	} {
		md := &appsv1beta1.MyDeployment{ObjectMeta: metav1.ObjectMeta{Annotations: tc.annotations}}
		if got := RecordsOf(md); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	if got := RecordsOf(nil); !reflect.DeepEqual(got, Records{}) {
		t.Errorf("nil object: %+v", got)
	}
}

// A size written by Annotations reads back the same.
func TestSizeRecordRoundTrip(t *testing.T) {
	for _, s := range []Size{{Replicas: 0, MaxReplicas: 1}, {Replicas: 50, MaxReplicas: 63}} {
		md := &appsv1beta1.MyDeployment{ObjectMeta: metav1.ObjectMeta{Annotations: s.Annotations()}}
		if got := RecordsOf(md).SizedFor; got == nil || *got != s {
			t.Errorf("%+v read back as %+v", s, got)
		}
	}
}
