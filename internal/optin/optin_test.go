package optin

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

func md(strategy appsv1.DeploymentStrategyType, annotations map[string]string) *appsv1beta1.MyDeployment {
	return &appsv1beta1.MyDeployment{
		ObjectMeta: metav1.ObjectMeta{Annotations: annotations},
		Spec:       appsv1beta1.MyDeploymentSpec{RolloutSpec: appsv1beta1.RolloutSpec{Strategy: appsv1.DeploymentStrategy{Type: strategy}}},
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

// spec is a Spec of a module named after its value.
type spec struct{ name, value string }

func (s *spec) Module() string { return s.name }

// TestSetWith: With replaces the spec of its module, in place, and
// leaves the set it is called on, and a set without that module, as
// they were.
func TestSetWith(t *testing.T) {
	a, b := &spec{"a", "parsed"}, &spec{"b", "parsed"}
	s := NewSet(Options{}, a, b)
	with := s.With(&spec{"b", "observed"})
	if got, _ := Get[*spec](with, "b"); got.value != "observed" || len(with.Specs()) != 2 || with.Specs()[0] != a {
		t.Errorf("with: %v", with.Specs())
	}
	if got, _ := Get[*spec](s, "b"); got != b {
		t.Errorf("the set With was called on changed: %v", s.Specs())
	}
	if none := NewSet(Options{}, a).With(&spec{"b", "observed"}); len(none.Specs()) != 1 || none.Specs()[0] != a {
		t.Errorf("a set without b: %v", none.Specs())
	}
}
