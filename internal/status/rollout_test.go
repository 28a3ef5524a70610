package status

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

func TestRolloutComplete(t *testing.T) {
	md := &appsv1beta1.MyDeployment{
		ObjectMeta: metav1.ObjectMeta{Generation: 2},
		Spec:       appsv1beta1.MyDeploymentSpec{Replicas: ptr.To[int32](3)},
	}
	done := appsv1beta1.MyDeploymentStatus{ObservedGeneration: 2, Replicas: 3, UpdatedReplicas: 3, AvailableReplicas: 3}
	cases := []struct {
		name   string
		change func(*appsv1beta1.MyDeploymentStatus)
		want   bool
	}{
		{"all updated and available", func(*appsv1beta1.MyDeploymentStatus) {}, true},
		{"generation not observed yet", func(s *appsv1beta1.MyDeploymentStatus) { s.ObservedGeneration = 1 }, false},
		{"2 of 3 updated", func(s *appsv1beta1.MyDeploymentStatus) { s.UpdatedReplicas = 2 }, false},
		{"an old pod left", func(s *appsv1beta1.MyDeploymentStatus) { s.Replicas = 4 }, false},
		{"an updated pod not available", func(s *appsv1beta1.MyDeploymentStatus) { s.AvailableReplicas = 2 }, false},
		{"held at a partition", func(s *appsv1beta1.MyDeploymentStatus) {
			s.UpdatedReplicas = 1
			s.Conditions = []appsv1.DeploymentCondition{{Type: appsv1beta1.ConditionProgressing, Reason: appsv1beta1.ReasonPartitionAvailable}}
		}, true},
		{"held at a partition, a new generation not observed yet", func(s *appsv1beta1.MyDeploymentStatus) {
			s.UpdatedReplicas, s.ObservedGeneration = 1, 1
			s.Conditions = []appsv1.DeploymentCondition{{Type: appsv1beta1.ConditionProgressing, Reason: appsv1beta1.ReasonPartitionAvailable}}
		}, false},
	}
	for _, c := range cases {
		st := done
		c.change(&st)
		if got := RolloutComplete(md, &st); got != c.want {
			t.Errorf("%s: RolloutComplete = %v, want %v", c.name, got, c.want)
		}
	}
}
