package upgrade

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// md is a MyDeployment of 3 replicas at generation 2 whose status says
// observed, updated and available; change edits it.
func md(name string, change func(*appsv1beta1.MyDeployment)) appsv1beta1.MyDeployment {
	m := appsv1beta1.MyDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Generation: 2},
		Spec:       appsv1beta1.MyDeploymentSpec{Replicas: ptr.To[int32](3)},
		Status: appsv1beta1.MyDeploymentStatus{
			ObservedGeneration: 2, Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 3,
		},
	}
	if change != nil {
		change(&m)
	}
	return m
}

func withCondition(t appsv1.DeploymentConditionType, s corev1.ConditionStatus, reason string) func(*appsv1beta1.MyDeployment) {
	return func(m *appsv1beta1.MyDeployment) {
		m.Status.Conditions = append(m.Status.Conditions, appsv1.DeploymentCondition{Type: t, Status: s, Reason: reason})
	}
}

func TestEvaluate(t *testing.T) {
	unavailable := func(m *appsv1beta1.MyDeployment) { m.Status.AvailableReplicas = 1 }
	// aborted: RolloutAborted with every pod back on the stable revision.
	aborted := func(m *appsv1beta1.MyDeployment) {
		m.Status.UpdatedReplicas = 0
		withCondition(appsv1beta1.ConditionProgressing, corev1.ConditionFalse, appsv1beta1.ReasonRolloutAborted)(m)
	}
	cases := []struct {
		name       string
		mds        []appsv1beta1.MyDeployment
		unobserved int
		want       string // reason
		mentions   []string
	}{
		{"no MyDeployment", nil, 0, ReasonSettled, nil},
		{"all complete", []appsv1beta1.MyDeployment{md("a", nil), md("b", nil)}, 0, ReasonSettled, nil},
		{"spec change not yet observed", []appsv1beta1.MyDeployment{md("a", func(m *appsv1beta1.MyDeployment) { m.Generation = 3 })}, 0,
			ReasonRolloutInProgress, []string{"ns/a"}},
		{"updated pods not yet available", []appsv1beta1.MyDeployment{md("a", nil), md("b", unavailable)}, 0,
			ReasonRolloutInProgress, []string{"1 MyDeployment(s)", "ns/b"}},
		{"old pods left (surge)", []appsv1beta1.MyDeployment{md("a", func(m *appsv1beta1.MyDeployment) { m.Status.Replicas = 4 })}, 0,
			ReasonRolloutInProgress, []string{"ns/a"}},
		{"scale up not done", []appsv1beta1.MyDeployment{md("a", func(m *appsv1beta1.MyDeployment) { m.Spec.Replicas = ptr.To[int32](5) })}, 0,
			ReasonRolloutInProgress, []string{"ns/a"}},
		{"paused mid-rollout does not hold upgrades", []appsv1beta1.MyDeployment{md("a", func(m *appsv1beta1.MyDeployment) {
			unavailable(m)
			m.Spec.Paused = true
		})}, 0, ReasonSettled, nil},
		{"past its progress deadline does not hold upgrades", []appsv1beta1.MyDeployment{md("a", func(m *appsv1beta1.MyDeployment) {
			unavailable(m)
			withCondition(appsv1beta1.ConditionProgressing, corev1.ConditionFalse, appsv1beta1.ReasonProgressDeadlineExceeded)(m)
		})}, 0, ReasonSettled, nil},
		{"an invalid selector does not hold upgrades", []appsv1beta1.MyDeployment{md("a", func(m *appsv1beta1.MyDeployment) {
			m.Generation = 3
			withCondition(appsv1beta1.ConditionReplicaFailure, corev1.ConditionTrue, appsv1beta1.ReasonInvalidSelector)(m)
		})}, 0, ReasonSettled, nil},
		{"an invalid strategy does not hold upgrades", []appsv1beta1.MyDeployment{md("a", func(m *appsv1beta1.MyDeployment) {
			unavailable(m)
			withCondition(appsv1beta1.ConditionReplicaFailure, corev1.ConditionTrue, appsv1beta1.ReasonInvalidStrategy)(m)
		})}, 0, ReasonSettled, nil},
		{"an invalid opt-in annotation does not hold upgrades", []appsv1beta1.MyDeployment{md("a", func(m *appsv1beta1.MyDeployment) {
			unavailable(m)
			withCondition(appsv1beta1.ConditionReplicaFailure, corev1.ConditionTrue, appsv1beta1.ReasonInvalidAnnotation)(m)
		})}, 0, ReasonSettled, nil},
		{"a canary held at its partition does not hold upgrades", []appsv1beta1.MyDeployment{md("a", func(m *appsv1beta1.MyDeployment) {
			m.Status.UpdatedReplicas = 1
			withCondition(appsv1beta1.ConditionProgressing, corev1.ConditionTrue, appsv1beta1.ReasonPartitionAvailable)(m)
		})}, 0, ReasonSettled, nil},
		{"a canary paused until promote does not hold upgrades", []appsv1beta1.MyDeployment{md("a", func(m *appsv1beta1.MyDeployment) {
			m.Status.UpdatedReplicas = 1
			withCondition(appsv1beta1.ConditionProgressing, corev1.ConditionTrue, appsv1beta1.ReasonCanaryPaused)(m)
		})}, 0, ReasonSettled, nil},
		{"a canary at a timed pause does not hold upgrades (the pause's start is on the object)", []appsv1beta1.MyDeployment{md("a", func(m *appsv1beta1.MyDeployment) {
			m.Status.UpdatedReplicas = 1
			withCondition(appsv1beta1.ConditionProgressing, corev1.ConditionTrue, appsv1beta1.ReasonCanaryPaused)(m)
			m.Status.Conditions[0].Message = "step 2 of 5: paused 10s, until 2026-11-27T22:01:40Z"
		})}, 0, ReasonSettled, nil},
		{"a canary step moving pods holds them", []appsv1beta1.MyDeployment{md("a", func(m *appsv1beta1.MyDeployment) {
			m.Status.UpdatedReplicas, m.Status.Replicas, m.Status.AvailableReplicas = 1, 4, 3
			withCondition(appsv1beta1.ConditionProgressing, corev1.ConditionTrue, appsv1beta1.ReasonRevisionUpdated)(m)
		})}, 0, ReasonRolloutInProgress, []string{"ns/a"}},
		{"an aborted rollout back on its stable pods does not hold upgrades", []appsv1beta1.MyDeployment{md("a", aborted)}, 0, ReasonSettled, nil},
		{"an aborted rollout whose pods are going back holds them", []appsv1beta1.MyDeployment{md("a", func(m *appsv1beta1.MyDeployment) {
			aborted(m)
			m.Status.UpdatedReplicas, m.Status.AvailableReplicas = 1, 2
		})}, 0, ReasonRolloutInProgress, []string{"ns/a"}},
		{"an aborted rollout with a pod still terminating holds them", []appsv1beta1.MyDeployment{md("a", func(m *appsv1beta1.MyDeployment) {
			aborted(m)
			m.Status.TerminatingReplicas = ptr.To[int32](1)
		})}, 0, ReasonRolloutInProgress, []string{"ns/a"}},
		{"an aborted rollout changed since holds them until observed", []appsv1beta1.MyDeployment{md("a", func(m *appsv1beta1.MyDeployment) {
			aborted(m)
			m.Generation = 3
		})}, 0, ReasonRolloutInProgress, []string{"ns/a"}},
		{"a failed create still holds them (it may succeed on retry)", []appsv1beta1.MyDeployment{md("a", func(m *appsv1beta1.MyDeployment) {
			unavailable(m)
			withCondition(appsv1beta1.ConditionReplicaFailure, corev1.ConditionTrue, appsv1beta1.ReasonFailedCreate)(m)
		})}, 0, ReasonRolloutInProgress, []string{"ns/a"}},
		{"being deleted", []appsv1beta1.MyDeployment{md("a", func(m *appsv1beta1.MyDeployment) {
			unavailable(m)
			m.DeletionTimestamp = &metav1.Time{}
		})}, 0, ReasonSettled, nil},
		{"pod writes not yet observed", []appsv1beta1.MyDeployment{md("a", nil)}, 2, ReasonPodWritesUnobserved, []string{"2 MyDeployment(s)"}},
		{"many rolling: named up to five, sorted", []appsv1beta1.MyDeployment{
			md("g", unavailable), md("f", unavailable), md("e", unavailable), md("d", unavailable),
			md("c", unavailable), md("b", unavailable), md("a", unavailable),
		}, 1, ReasonRolloutInProgress, []string{"7 MyDeployment(s) rolling out: ns/a, ns/b, ns/c, ns/d, ns/e and 2 more"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := Evaluate(c.mds, c.unobserved)
			if v.Reason != c.want || v.Upgradeable != (c.want == ReasonSettled) {
				t.Fatalf("got %+v, want reason %s", v, c.want)
			}
			for _, s := range c.mentions {
				if !strings.Contains(v.Message, s) {
					t.Errorf("message %q does not mention %q", v.Message, s)
				}
			}
		})
	}
}
