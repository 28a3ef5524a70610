package ownerref

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestWithController(t *testing.T) {
	ctrl := metav1.OwnerReference{Name: "web", UID: "a", Controller: ptr.To(true)}
	other := metav1.OwnerReference{Name: "cm", UID: "b"}
	plainA := metav1.OwnerReference{Name: "web", UID: "a"}
	for _, tc := range []struct {
		name string
		in   []metav1.OwnerReference
		want []metav1.OwnerReference
	}{
		{"none", nil, []metav1.OwnerReference{ctrl}},
		{"another owner kept first", []metav1.OwnerReference{other}, []metav1.OwnerReference{other, ctrl}},
		{"non-controller reference to the same UID replaced in place", []metav1.OwnerReference{plainA, other},
			[]metav1.OwnerReference{ctrl, other}},
		{"duplicates collapsed", []metav1.OwnerReference{plainA, other, plainA}, []metav1.OwnerReference{ctrl, other}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]metav1.OwnerReference(nil), tc.in...)
			got := WithController(in, ctrl)
			if len(got) != len(tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i].UID != tc.want[i].UID || ptr.Deref(got[i].Controller, false) != ptr.Deref(tc.want[i].Controller, false) {
					t.Fatalf("got %+v, want %+v", got, tc.want)
				}
			}
			if !reflect.DeepEqual(in, tc.in) {
				t.Fatalf("refs modified: %+v", in)
			}
		})
	}
}
