package controller

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// Objects of the initial list are vetted once each; objects created later
// are not (their pods' writes were ours).
func TestStartVetting(t *testing.T) {
	md := func(uid string) *appsv1beta1.MyDeployment {
		return &appsv1beta1.MyDeployment{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}}
	}
	var v startVetting
	note := v.noteInitialList()
	for _, e := range []event.CreateEvent{
		{Object: md("old"), IsInInitialList: true},
		{Object: md("other"), IsInInitialList: true},
		{Object: md("new")},
	} {
		if !note.Create(e) {
			t.Errorf("%s: the predicate refused a create event", e.Object.GetUID())
		}
	}
	if !v.needed("old") || !v.needed("other") {
		t.Error("an object of the initial list must be vetted")
	}
	if v.needed("new") {
		t.Error("an object created after the start must not be vetted")
	}
	v.done("old")
	if v.needed("old") {
		t.Error("an object is vetted once")
	}
	if !v.needed("other") {
		t.Error("vetting one object vetted another")
	}
}

// A key synced with a new UID names its predecessor until the predecessor's
// pods are released, or for namesakeWait at most.
func TestNamesakes(t *testing.T) {
	now := time.Date(2026, 11, 26, 5, 0, 0, 0, time.UTC)
	var n namesakes
	if p := n.synced("ns/md", "a", now); p != "" {
		t.Errorf("first sync: predecessor %q, want none", p)
	}
	if p := n.synced("ns/md", "a", now); p != "" {
		t.Errorf("same object: predecessor %q, want none", p)
	}
	n.deleted("ns/md", now)
	if p := n.synced("ns/md", "b", now.Add(time.Second)); p != "a" {
		t.Errorf("re-created: predecessor %q, want a", p)
	}
	if p := n.synced("ns/md", "b", now.Add(2*time.Second)); p != "a" {
		t.Errorf("re-created, its namesake's pods not released yet: predecessor %q, want a", p)
	}
	n.released("ns/md")
	if p := n.synced("ns/md", "b", now.Add(3*time.Second)); p != "" {
		t.Errorf("after the release: predecessor %q, want none", p)
	}

	if p := n.synced("ns/md", "c", now.Add(4*time.Second)); p != "b" {
		t.Errorf("re-created again: predecessor %q, want b", p)
	}
	if p := n.synced("ns/md", "c", now.Add(4*time.Second+namesakeWait)); p != "" {
		t.Errorf("after namesakeWait: predecessor %q, want none (the pods are another's)", p)
	}

	n.synced("ns/other", "x", now)
	n.deleted("ns/other", now)
	n.deleted("ns/third", now.Add(namesakeWait)) // sweeps keys deleted namesakeWait ago
	if p := n.synced("ns/other", "y", now.Add(namesakeWait)); p != "" {
		t.Errorf("a key deleted long ago: predecessor %q, want none (forgotten)", p)
	}
	if len(n.last) != 2 {
		t.Errorf("remembered keys: %v, want ns/md and ns/other only", n.last)
	}
}
