package optin

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

func md(strategy appsv1.DeploymentStrategyType, annotations map[string]string) *appsv1beta1.MyDeployment {
	return &appsv1beta1.MyDeployment{
		ObjectMeta: metav1.ObjectMeta{Annotations: annotations},
		Spec:       appsv1beta1.MyDeploymentSpec{RolloutSpec: appsv1beta1.RolloutSpec{Strategy: appsv1.DeploymentStrategy{Type: strategy}}},
	}
}

func TestParseOnFailure(t *testing.T) {
	for _, tc := range []struct {
		name        string
		strategy    appsv1.DeploymentStrategyType
		annotations map[string]string
		abort       bool
		err         string // substring of the only error; "" for none
	}{
		{name: "on-failure Abort", annotations: map[string]string{appsv1beta1.OnFailureAnnotation: "Abort"}, abort: true},
		{name: "on-failure Continue", annotations: map[string]string{appsv1beta1.OnFailureAnnotation: "Continue"}},
		{name: "on-failure unknown", annotations: map[string]string{appsv1beta1.OnFailureAnnotation: "Rollback"},
			err: `metadata.annotations[apps.mydeployment.io/on-failure]: Unsupported value: "Rollback": supported values: "Continue", "Abort"`},
		{name: "on-failure lower case", annotations: map[string]string{appsv1beta1.OnFailureAnnotation: "abort"}, err: "apps.mydeployment.io/on-failure"},
		{name: "on-failure Abort with Recreate", strategy: appsv1.RecreateDeploymentStrategyType,
			annotations: map[string]string{appsv1beta1.OnFailureAnnotation: "Abort"}, err: "needs spec.strategy.type RollingUpdate"},
		{name: "on-failure Continue with Recreate", strategy: appsv1.RecreateDeploymentStrategyType,
			annotations: map[string]string{appsv1beta1.OnFailureAnnotation: "Continue"}},
		{name: "retried-at", annotations: map[string]string{appsv1beta1.RetriedAtAnnotation: "2026-11-27T22:00:00Z"}},
		{name: "retried-at not a time", annotations: map[string]string{appsv1beta1.RetriedAtAnnotation: "yesterday"},
			err: `metadata.annotations[apps.mydeployment.io/retried-at]: Invalid value: "yesterday"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, errs := ParseRest(md(tc.strategy, tc.annotations))
			switch {
			case tc.err == "" && len(errs) > 0:
				t.Fatalf("unexpected errors: %v", errs)
			case tc.err != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.err)):
				t.Fatalf("errors %v, want one containing %q", errs, tc.err)
			}
			if o.Abort != tc.abort {
				t.Errorf("abort %v, want %v", o.Abort, tc.abort)
			}
		})
	}
}

func TestNodeDraining(t *testing.T) {
	taint := func(key string) corev1.NodeSpec {
		return corev1.NodeSpec{Taints: []corev1.Taint{{Key: key, Effect: corev1.TaintEffectNoSchedule}}}
	}
	for name, tc := range map[string]struct {
		spec corev1.NodeSpec
		want bool
	}{
		"schedulable":                       {corev1.NodeSpec{}, false},
		"cordoned":                          {corev1.NodeSpec{Unschedulable: true}, true},
		"tainted by the Cluster Autoscaler": {taint(appsv1beta1.TaintToBeDeleted), true},
		"tainted by Karpenter":              {taint(appsv1beta1.TaintKarpenterDisrupted), true},
		"a deletion candidate (soft) only":  {taint("DeletionCandidateOfClusterAutoscaler"), false},
		"another NoSchedule taint":          {taint("dedicated"), false},
		"node.kubernetes.io/unschedulable":  {taint(corev1.TaintNodeUnschedulable), false},
	} {
		if got := NodeDraining(&corev1.Node{Spec: tc.spec}); got != tc.want {
			t.Errorf("%s: draining %v, want %v", name, got, tc.want)
		}
	}
}

func TestPodCountPods(t *testing.T) {
	for _, tc := range []struct {
		p        PodCount
		replicas int32
		want     int32
	}{
		{PodCount{Value: 1, Percent: true}, 1, 1},
		{PodCount{Value: 50, Percent: true}, 3, 2},
		{PodCount{Value: 100, Percent: true}, 2147483647, 2147483647},
		{PodCount{Value: 5}, 0, 0},
		{PodCount{Value: 5}, -3, 0},
	} {
		if got := tc.p.Pods(tc.replicas); got != tc.want {
			t.Errorf("%s of %d: %d, want %d", tc.p, tc.replicas, got, tc.want)
		}
	}
}
