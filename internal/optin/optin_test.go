package optin

import (
	"context"
	"testing"
	"time"

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

// counter is a Spec that reads by counting its memory up: a Reader and a
// Keeper, and an Aborter once it counted to abortAt.
type counter struct {
	n, abortAt int
	seen       Set
}

func (*counter) Module() string { return "counter" }

func (c *counter) Read(_ context.Context, _ *appsv1beta1.MyDeployment, env ReadEnv) (Spec, error) {
	n, _ := env.Memory.(int)
	return &counter{n: n + 1, abortAt: c.abortAt, seen: env.Set}, nil
}

func (c *counter) Keep() any { return c.n }

func (c *counter) AbortCause(revision string) Cause {
	if c.abortAt > 0 && c.n >= c.abortAt {
		return Cause{Reason: "Counted", Message: "counted to " + revision}
	}
	return Cause{}
}

func (c *counter) After() time.Duration { return time.Duration(c.n) * time.Second }

// TestSetReadKeeps: a module's memory goes from one sync's Read to the
// next through Kept, only to its own module; Read leaves the set it is
// called on as it was and shows the module the set; the Aborter's
// verdict and wish to be synced again are the set's.
func TestSetReadKeeps(t *testing.T) {
	other := &spec{"b", "parsed"}
	parsed := NewSet(&counter{abortAt: 3}, other)
	var mem map[string]any
	for sync := 1; sync <= 3; sync++ {
		read, err := parsed.Read(context.Background(), &appsv1beta1.MyDeployment{}, ReadEnv{}, mem)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := Get[*counter](read, "counter")
		if c.n != sync || len(c.seen.Specs()) != 2 {
			t.Fatalf("sync %d: read %d with a set of %d specs", sync, c.n, len(c.seen.Specs()))
		}
		if first, _ := Get[*counter](parsed, "counter"); first.n != 0 {
			t.Fatal("Read modified the set it was called on")
		}
		mem = read.Kept()
		if len(mem) != 1 || mem["counter"] != sync {
			t.Fatalf("sync %d kept %v", sync, mem)
		}
		aborts, cause, after := VerdictOf(read, "web-2")
		if want := map[bool]Cause{true: {Reason: "Counted", Message: "counted to web-2"}}[sync >= 3]; cause != want {
			t.Errorf("sync %d: abort cause %q, want %q", sync, cause, want)
		}
		if !aborts || after != time.Duration(sync)*time.Second {
			t.Errorf("sync %d: aborts %v, after %v", sync, aborts, after)
		}
	}
	if aborts, cause, after := VerdictOf(NewSet(other), "x"); aborts || cause != (Cause{}) || after != 0 || NewSet(other).Kept() != nil {
		t.Error("a set without Aborters or Keepers aborts, waits or keeps")
	}
}
