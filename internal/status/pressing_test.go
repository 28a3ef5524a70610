package status

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

func TestPressing(t *testing.T) {
	progressing := func(reason string) appsv1.DeploymentCondition {
		return appsv1.DeploymentCondition{Type: appsv1beta1.ConditionProgressing, Status: corev1.ConditionTrue, Reason: reason}
	}
	available := func(s corev1.ConditionStatus) appsv1.DeploymentCondition {
		return appsv1.DeploymentCondition{Type: appsv1beta1.ConditionAvailable, Status: s}
	}
	// Mid-rollout of 10: 6 updated, 8 ready.
	mid := appsv1beta1.MyDeploymentStatus{
		ObservedGeneration: 3, Replicas: 11, UpdatedReplicas: 6, ReadyReplicas: 8, AvailableReplicas: 8,
		TerminatingReplicas: ptr.To[int32](2), UpdateRevision: "web-2", CurrentRevision: "web-1", LabelSelector: "app=web",
		Conditions: []appsv1.DeploymentCondition{available(corev1.ConditionTrue), progressing(appsv1beta1.ReasonRevisionUpdated)},
	}
	with := func(f func(*appsv1beta1.MyDeploymentStatus)) appsv1beta1.MyDeploymentStatus {
		s := *mid.DeepCopy()
		f(&s)
		return s
	}
	for _, tc := range []struct {
		name string
		next appsv1beta1.MyDeploymentStatus
		want bool
	}{
		{"one more pod updated", with(func(s *appsv1beta1.MyDeploymentStatus) { s.UpdatedReplicas++; s.ReadyReplicas++ }), false},
		{"an old pod gone", with(func(s *appsv1beta1.MyDeploymentStatus) { s.TerminatingReplicas = ptr.To[int32](1) }), false},
		{"progress refreshes lastUpdateTime only", with(func(s *appsv1beta1.MyDeploymentStatus) {
			s.Conditions[1].LastUpdateTime.Time = t0
		}), false},
		{"new generation observed", with(func(s *appsv1beta1.MyDeploymentStatus) { s.ObservedGeneration++ }), true},
		{"new update revision", with(func(s *appsv1beta1.MyDeploymentStatus) { s.UpdateRevision = "web-3" }), true},
		{"current revision moves", with(func(s *appsv1beta1.MyDeploymentStatus) { s.CurrentRevision = "web-2" }), true},
		{"selector", with(func(s *appsv1beta1.MyDeploymentStatus) { s.LabelSelector = "app=web,x=y" }), true},
		{"collision", with(func(s *appsv1beta1.MyDeploymentStatus) { s.CollisionCount = ptr.To[int32](1) }), true},
		{"Available flips", with(func(s *appsv1beta1.MyDeploymentStatus) { s.Conditions[0] = available(corev1.ConditionFalse) }), true},
		{"Progressing reason changes", with(func(s *appsv1beta1.MyDeploymentStatus) {
			s.Conditions[1] = progressing(appsv1beta1.ReasonNewRevisionAvailable)
		}), true},
		{"ReplicaFailure appears", with(func(s *appsv1beta1.MyDeploymentStatus) {
			s.Conditions = append(s.Conditions, appsv1.DeploymentCondition{Type: appsv1beta1.ConditionReplicaFailure, Status: corev1.ConditionTrue})
		}), true},
		{"settled", with(func(s *appsv1beta1.MyDeploymentStatus) {
			s.Replicas, s.UpdatedReplicas, s.ReadyReplicas, s.AvailableReplicas, s.TerminatingReplicas = 10, 10, 10, 10, ptr.To[int32](0)
		}), true},
		{"spec met, one pod still terminating", with(func(s *appsv1beta1.MyDeploymentStatus) {
			s.Replicas, s.UpdatedReplicas, s.ReadyReplicas, s.AvailableReplicas, s.TerminatingReplicas = 10, 10, 10, 10, ptr.To[int32](1)
		}), true},
	} {
		if got := Pressing(mid, tc.next, 10); got != tc.want {
			t.Errorf("%s: Pressing = %v, want %v", tc.name, got, tc.want)
		}
	}

	// Once the spec is met, terminating pods going one by one can wait;
	// the last one's going is written at once.
	met := with(func(s *appsv1beta1.MyDeploymentStatus) {
		s.Replicas, s.UpdatedReplicas, s.ReadyReplicas, s.AvailableReplicas, s.TerminatingReplicas = 10, 10, 10, 10, ptr.To[int32](3)
	})
	fewer, none := *met.DeepCopy(), *met.DeepCopy()
	fewer.TerminatingReplicas, none.TerminatingReplicas = ptr.To[int32](2), ptr.To[int32](0)
	if Pressing(met, fewer, 10) {
		t.Error("spec met, a terminating pod gone of three: Pressing = true, want false")
	}
	if !Pressing(met, none, 10) {
		t.Error("spec met, the last terminating pod gone: Pressing = false, want true")
	}
}
