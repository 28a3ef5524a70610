package controller

import (
	"bytes"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/configref"
	"github.com/mydeployment-io/mydeployment-operator/internal/revision"
)

func mdWithUID(name, uid string) *appsv1beta1.MyDeployment {
	return &appsv1beta1.MyDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid), Generation: 1}}
}

// One object per UID: a namesake never inherits one, a deleted namesake's
// pod events make none, and forget drops it.
func TestObjectsByUID(t *testing.T) {
	o := newObjects(0)
	a := o.get(mdWithUID("web", "a"))
	if o.get(mdWithUID("web", "a")) != a {
		t.Fatal("the same object got a second record")
	}
	if o.ofPod(types.NamespacedName{Namespace: "ns", Name: "web"}, "a") != a || o.lookup("a") != a {
		t.Fatal("a pod event of the object found another record")
	}
	a.ExpectCreate("web-1", time.Now())
	b := o.get(mdWithUID("web", "b")) // re-created under its name
	if b == a || b.Pending() {
		t.Fatal("a namesake inherited the deleted object's record")
	}
	if o.lookup("a") != nil {
		t.Error("the deleted namesake's record was kept")
	}
	if o.ofPod(types.NamespacedName{Namespace: "ns", Name: "web"}, "a") != nil || o.lookup("a") != nil {
		t.Error("a pod event of the deleted namesake made a record")
	}
	if o.ofPod(types.NamespacedName{Namespace: "ns", Name: "other"}, "c") == nil {
		t.Error("a pod event of an object not synced yet made no record")
	}
	b.ExpectCreate("web-2", time.Now())
	if n := o.pending(); n != 1 {
		t.Errorf("pending %d, want 1", n)
	}
	o.forget(types.NamespacedName{Namespace: "ns", Name: "web"})
	if o.lookup("b") != nil || o.pending() != 0 {
		t.Error("forget kept the object")
	}
	if len(o.byName) != 1 || len(o.byUID) != 1 {
		t.Errorf("left %d names and %d objects, want only ns/other", len(o.byName), len(o.byUID))
	}
}

func TestPaceStatus(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	var m memory
	if d := m.paceStatus(t0, time.Second); d != 0 {
		t.Fatalf("first write waits %v", d)
	}
	m.statusWrittenAt = t0
	if d := m.paceStatus(t0.Add(300*time.Millisecond), time.Second); d != 700*time.Millisecond {
		t.Fatalf("a write 300ms after the last waits %v, want 700ms", d)
	}
	if d := m.paceStatus(t0.Add(time.Second), time.Second); d != 0 {
		t.Fatalf("a write a period later waits %v", d)
	}
	if d := m.paceStatus(t0.Add(300*time.Millisecond), 0); d != 0 {
		t.Fatal("no period must never wait")
	}
}

func TestEvictionBackoff(t *testing.T) {
	var m memory
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second}
	for i, w := range want {
		d, first := m.evictionsRefused()
		if d != w || first != (i == 0) {
			t.Fatalf("refusal %d: retry %v first %v, want %v %v", i, d, first, w, i == 0)
		}
	}
	m.evictionsEnd()
	if d, first := m.evictionsRefused(); d != evictionRetryMin || !first {
		t.Fatalf("after the spell ended: %v %v, want a new spell", d, first)
	}
}

// The revision data is computed once per generation and config.
func TestRevisionDataOf(t *testing.T) {
	md := mdWithUID("web", "a")
	md.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c", Image: "v1"}}
	want1, err := revision.Patch(&md.Spec.Template)
	if err != nil {
		t.Fatal(err)
	}
	var m memory
	first, err := m.revisionDataOf(md, &md.Spec.Template, "")
	if err != nil || !bytes.Equal(first, want1) {
		t.Fatalf("data %s, %v; want Patch's %s", first, err, want1)
	}
	md.Spec.Template.Spec.Containers[0].Image = "v2" // impossibly, without a new generation
	if again, _ := m.revisionDataOf(md, &md.Spec.Template, ""); &again[0] != &first[0] {
		t.Error("same generation recomputed")
	}
	md.Generation = 2
	second, _ := m.revisionDataOf(md, &md.Spec.Template, "")
	if bytes.Equal(second, want1) {
		t.Error("a new generation kept the old template's data")
	}
	withConfig := configref.WithHash(&md.Spec.Template, "configmap/app=aaaa")
	if got, _ := m.revisionDataOf(md, withConfig, "configmap/app=aaaa"); bytes.Equal(got, second) {
		t.Error("new config hashes kept the data of the template without them")
	}
}
