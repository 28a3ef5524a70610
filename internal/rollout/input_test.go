package rollout

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
)

func TestNewInput(t *testing.T) {
	rev := func(name string, n int64) *appsv1.ControllerRevision {
		return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name}, Revision: n}
	}
	revisions := []*appsv1.ControllerRevision{rev("c", 5), rev("a", 2), rev("update", 7), nil, rev("b", 3)}
	for _, tc := range []struct {
		name    string
		md      appsv1beta1.MyDeployment
		want    Input
		wantErr bool
	}{
		{
			name: "defaults: 1 replica, RollingUpdate 25%/25%, nothing recorded",
			want: Input{Replicas: 1, Strategy: RollingUpdate, MaxSurge: 1, MaxUnavailable: 0},
			// 25% of 1: surge rounds up to 1, unavailable down to 0.
		},
		{
			name: "Recreate, paused, minReadySeconds, sized for 3 of at most 4",
			md: appsv1beta1.MyDeployment{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
					appsv1beta1.DesiredReplicasAnnotation: "3", appsv1beta1.MaxReplicasAnnotation: "4"}},
				Spec: appsv1beta1.MyDeploymentSpec{
					Replicas:    ptr.To[int32](6),
					RolloutSpec: appsv1beta1.RolloutSpec{Paused: true, MinReadySeconds: 9, Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}},
				},
			},
			want: Input{Replicas: 6, Strategy: Recreate, Paused: true, MinReadySeconds: 9, SizedFor: &Size{Replicas: 3, MaxReplicas: 4}},
		},
		{
			name: "a max-replicas annotation that is no number counts as unknown",
			md: appsv1beta1.MyDeployment{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
					appsv1beta1.DesiredReplicasAnnotation: "10", appsv1beta1.MaxReplicasAnnotation: "lots"}},
				Spec: appsv1beta1.MyDeploymentSpec{Replicas: ptr.To[int32](10)},
			},
			want: Input{Replicas: 10, Strategy: RollingUpdate, MaxSurge: 3, MaxUnavailable: 2, SizedFor: &Size{Replicas: 10}},
		},
		{
			name: "an invalid strategy is an error",
			md: appsv1beta1.MyDeployment{Spec: appsv1beta1.MyDeploymentSpec{
				RolloutSpec: appsv1beta1.RolloutSpec{Strategy: appsv1.DeploymentStrategy{
					RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromString("x"))}}},
			}},
			wantErr: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, err := NewInput(&tc.md, optin.Set{}, "c", "update", revisions, nil, t0)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if !slices.Equal(in.Revisions, []string{"a", "b", "c"}) || in.UpdateRevision != "update" || in.CurrentRevision != "c" ||
				in.MaxBurst != DefaultMaxBurst || !in.Now.Equal(t0) {
				t.Fatalf("revisions %v (want a, b, c), current %q, update %q, maxBurst %d, now %v",
					in.Revisions, in.CurrentRevision, in.UpdateRevision, in.MaxBurst, in.Now)
			}
			if (in.SizedFor == nil) != (tc.want.SizedFor == nil) || in.SizedFor != nil && *in.SizedFor != *tc.want.SizedFor {
				t.Fatalf("SizedFor %+v, want %+v", in.SizedFor, tc.want.SizedFor)
			}
			if in.Replicas != tc.want.Replicas || in.Strategy != tc.want.Strategy || in.MaxSurge != tc.want.MaxSurge ||
				in.MaxUnavailable != tc.want.MaxUnavailable || in.Paused != tc.want.Paused || in.MinReadySeconds != tc.want.MinReadySeconds ||
				in.Partition != tc.want.Partition || in.RespectPDB != tc.want.RespectPDB {
				t.Fatalf("got %+v\nwant %+v", in, tc.want)
			}
		})
	}
}

func TestSizeAnnotationsRoundTrip(t *testing.T) {
	s := Size{Replicas: 30, MaxReplicas: 38}
	md := &appsv1beta1.MyDeployment{ObjectMeta: metav1.ObjectMeta{Annotations: s.Annotations()}}
	if got := SizedForOf(md); got == nil || *got != s {
		t.Fatalf("SizedForOf(Annotations(%+v)) = %+v", s, got)
	}
}
