package controller

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/event"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/podwatch"
)

// Objects of the initial list are vetted once each; objects created later
// are not (their pods' writes were ours).
func TestStartVetting(t *testing.T) {
	r := &MyDeploymentReconciler{objects: newObjects(0)}
	note := r.noteInitialList()
	old, other, fresh := mdWithUID("old", "old"), mdWithUID("other", "other"), mdWithUID("new", "new")
	for _, e := range []event.CreateEvent{
		{Object: old, IsInInitialList: true},
		{Object: other, IsInInitialList: true},
		{Object: fresh},
	} {
		if !note.Create(e) {
			t.Errorf("%s: the predicate refused a create event", e.Object.GetUID())
		}
	}
	needsVet := func(md *appsv1beta1.MyDeployment) bool { need, _ := r.objects.get(md).NeedsVet(); return need }
	if !needsVet(old) || !needsVet(other) {
		t.Error("an object of the initial list must be vetted")
	}
	if needsVet(fresh) {
		t.Error("an object created after the start must not be vetted")
	}
	r.objects.get(old).Vetted()
	if needsVet(old) {
		t.Error("an object is vetted once")
	}
	if !needsVet(other) {
		t.Error("vetting one object vetted another")
	}
}

// A vetting sync waits until the cache lists every pod the API server
// listed; it is then done, and only then. One that never gets there is
// given up after the record's timeout.
func TestVetted(t *testing.T) {
	now := time.Date(2026, 11, 28, 14, 0, 0, 0, time.UTC)
	r := &MyDeploymentReconciler{objects: newObjects(time.Minute)}
	md := mdWithUID("web", "web")
	obj := r.objects.get(md)
	obj.MarkVet(now)
	cached := func(names ...string) []*corev1.Pod {
		var pods []*corev1.Pod
		for _, n := range names {
			pods = append(pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: n}})
		}
		return pods
	}
	s := &observation{md: md, obj: obj, now: now, vetListed: []string{"web-a", "web-b"}, pods: cached("web-a")}
	if r.observer().vetted(context.Background(), s) {
		t.Fatal("vetted while the cache does not list web-b, which the API server lists")
	}
	if need, _ := obj.NeedsVet(); !need {
		t.Fatal("a vetting that waits was marked done")
	}
	s.pods = cached("web-a", "web-b", "web-c")
	if !r.observer().vetted(context.Background(), s) {
		t.Fatal("not vetted once the cache lists every pod listed")
	}
	if need, _ := obj.NeedsVet(); need {
		t.Fatal("vetted, still marked")
	}
	if !r.observer().vetted(context.Background(), &observation{md: md, obj: obj, now: now}) {
		t.Error("a sync that does not vet waited")
	}

	obj.MarkVet(now)
	late := &observation{md: md, obj: obj, now: now.Add(time.Minute)}
	if err := r.observer().vetStart(context.Background(), late); err != nil || late.vetListed != nil {
		t.Fatalf("a vetting past the timeout listed again (err %v)", err)
	}
	if need, _ := obj.NeedsVet(); need {
		t.Error("a vetting past the timeout was not given up")
	}
}

// A young object waits while the cache shows live pods that a deleted
// object of its name controls and its selector matches; nothing else holds it.
func TestHeldByNamesake(t *testing.T) {
	now := time.Date(2026, 11, 27, 5, 0, 0, 0, time.UTC)
	sel := labels.SelectorFromSet(labels.Set{"app": "web"})
	pod := func(name string, owner types.UID, change func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name),
			Labels: map[string]string{"app": "web", appsv1beta1.RevisionLabel: "web-1", appsv1beta1.PodTemplateHashLabel: "1"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: appsv1beta1.GroupVersion.String(), Kind: "MyDeployment",
				Name: "web", UID: owner, Controller: ptr.To(true)}}}}
		if change != nil {
			change(p)
		}
		return p
	}
	for _, tc := range []struct {
		name string
		age  time.Duration
		pods []*corev1.Pod
		want bool
	}{
		{"a deleted namesake's live pod", time.Second, []*corev1.Pod{pod("a", "old", nil)}, true},
		{"only its own pods", time.Second, []*corev1.Pod{pod("a", "new", nil)}, false},
		{"the namesake's pod terminating", time.Second, []*corev1.Pod{pod("a", "old", func(p *corev1.Pod) {
			p.DeletionTimestamp = &metav1.Time{Time: now}
		})}, false},
		{"the namesake's pod not selected", time.Second, []*corev1.Pod{pod("a", "old", func(p *corev1.Pod) {
			p.Labels["app"] = "other"
		})}, false},
		{"another name's pod", time.Second, []*corev1.Pod{pod("a", "old", func(p *corev1.Pod) {
			p.OwnerReferences[0].Name = "api"
		})}, false},
		{"older than the wait", namesakeWait, []*corev1.Pod{pod("a", "old", nil)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			idx := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{podwatch.ByController: podwatch.ControllerKeys})
			for _, p := range tc.pods {
				if err := idx.Add(p); err != nil {
					t.Fatal(err)
				}
			}
			r := &MyDeploymentReconciler{PodIndex: podwatch.IndexOf(idx)}
			md := mdWithUID("web", "new")
			md.CreationTimestamp = metav1.NewTime(now.Add(-tc.age))
			held, err := r.observer().heldByNamesake(context.Background(), &observation{md: md, now: now, selector: sel})
			if err != nil || held != tc.want {
				t.Errorf("held %v (%v), want %v", held, err, tc.want)
			}
		})
	}
}
