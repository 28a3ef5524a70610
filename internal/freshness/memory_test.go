package freshness

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// A sync that reads the object from a cache that has not shown our writes
// yet plans from the object our last write returned: its annotations (what
// the pods are sized for) and its status.
func TestCatchUp(t *testing.T) {
	at := func(rv, sizedFor string, replicas int32) *appsv1beta1.MyDeployment {
		return &appsv1beta1.MyDeployment{
			ObjectMeta: metav1.ObjectMeta{Name: "md", Namespace: "ns", ResourceVersion: rv,
				Annotations: map[string]string{"sized-for": sizedFor}},
			Status: appsv1beta1.MyDeploymentStatus{Replicas: replicas},
		}
	}
	m := NewRecord(0)
	m.Wrote("1", at("2", "3", 2)) // the annotations, from version 1
	m.Wrote("2", at("3", "3", 3)) // then the status, from version 2

	for _, cached := range []string{"1", "2"} {
		md := at(cached, "2", 2)
		m.CatchUp(md)
		if md.ResourceVersion != "3" || md.Annotations["sized-for"] != "3" || md.Status.Replicas != 3 {
			t.Errorf("cache at version %s: got version %s, sized-for %s, replicas %d; want our last write (3, 3, 3)",
				cached, md.ResourceVersion, md.Annotations["sized-for"], md.Status.Replicas)
		}
	}

	md := at("4", "5", 5) // someone else's write after ours: the cache is newer
	m.CatchUp(md)
	if md.ResourceVersion != "4" || md.Annotations["sized-for"] != "5" {
		t.Errorf("a cache past our writes was overwritten: %+v", md.ObjectMeta)
	}
	md = at("1", "2", 2)
	m.CatchUp(md)
	if md.ResourceVersion != "1" {
		t.Error("the memory outlived a cache that moved past it")
	}

	m.Wrote("7", at("8", "9", 9)) // not chained to the last write
	md = at("2", "2", 2)
	m.CatchUp(md)
	if md.ResourceVersion != "2" {
		t.Error("a write from version 7 caught up a cache at version 2")
	}
}

// A step written for a pod is not written again until the cache shows it
// (its seen holds of the pod the cache has), whatever version the cache
// shows meanwhile; once it does, or the entry is older than StepTTL, the
// step's next decision is the planner's again.
func TestStepPending(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC)
	pod := func(uid, rv, image string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, UID: types.UID("uid-" + uid), ResourceVersion: rv},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}}}
	}
	patched := func(p *corev1.Pod) bool { return p.Spec.Containers[0].Image == "new" }
	w := NewRecord(0)
	if w.StepPending(pod("a", "1", "old"), t0) {
		t.Fatal("nothing written yet, but pod a is pending")
	}
	w.StepWritten(pod("a", "1", "old"), patched, t0)
	if !w.StepPending(pod("a", "1", "old"), t0.Add(time.Second)) {
		t.Error("a step not yet in the cache is not pending")
	}
	if w.StepPending(pod("b", "1", "old"), t0.Add(time.Second)) {
		t.Error("another pod is pending")
	}
	if !w.StepPending(pod("a", "2", "old"), t0.Add(time.Second)) {
		t.Error("the cache shows a newer version without the write (another writer's, or our own first of two), and the step is not pending")
	}
	if w.StepPending(pod("a", "3", "new"), t0.Add(time.Second)) {
		t.Error("the cache shows the write, but the step is still pending")
	}
	if w.StepPending(pod("a", "1", "old"), t0.Add(2*time.Second)) {
		t.Error("an entry seen is not forgotten")
	}
	w.StepWritten(pod("c", "7", "old"), patched, t0)
	if w.StepPending(pod("c", "7", "old"), t0.Add(StepTTL)) {
		t.Error("a step whose event never came is pending beyond StepTTL")
	}
	w.StepWritten(pod("d", "1", "old"), patched, t0)
	w.ForgetSteps(pod("d", "1", "old"))
	if w.StepPending(pod("d", "2", "old"), t0.Add(time.Second)) {
		t.Error("a step forgotten (a new update began) is still pending")
	}
}
