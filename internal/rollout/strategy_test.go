package rollout

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestStrategyFenceposts(t *testing.T) {
	two, pct := intstr.FromInt32(2), intstr.FromString("50%")
	bad := intstr.FromString("lots")
	for _, tc := range []struct {
		name               string
		strategy           appsv1.DeploymentStrategy
		replicas           int32
		surge, unavailable int32
		wantErr            bool
	}{
		{name: "recreate", strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}, replicas: 10},
		{name: "empty strategy defaults to 25%/25%", replicas: 10, surge: 3, unavailable: 2},
		{name: "rolling update without values", strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDeployment{}}, replicas: 4, surge: 1, unavailable: 1},
		{name: "only maxSurge set", strategy: appsv1.DeploymentStrategy{RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &two}},
			replicas: 10, surge: 2, unavailable: 2},
		{name: "only maxUnavailable set", strategy: appsv1.DeploymentStrategy{RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &pct}},
			replicas: 10, surge: 3, unavailable: 5},
		{name: "invalid value", strategy: appsv1.DeploymentStrategy{RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &bad}},
			replicas: 10, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, u, err := StrategyFenceposts(tc.strategy, tc.replicas)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if s != tc.surge || u != tc.unavailable {
				t.Fatalf("got %d/%d, want %d/%d", s, u, tc.surge, tc.unavailable)
			}
		})
	}
}
