package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// TestPodIndex: pods are found by their controller's UID whatever their
// namespace, orphans by namespace, across every informer the cache made
// (one per watched namespace), and what is returned is the stored pod.
func TestPodIndex(t *testing.T) {
	x := NewPodIndex()
	if _, err := x.Owned("a"); err == nil {
		t.Fatal("Owned with no pod informer: no error")
	}
	lw := &toolscache.ListWatch{}
	base := toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc}
	// Other kinds get client-go's informer, without the index.
	if inf := x.newInformer(lw, &corev1.ConfigMap{}, 0, base); inf.GetIndexer().GetIndexers()[byController] != nil {
		t.Fatal("a ConfigMap informer got the pod index")
	}
	infA, infB := x.newInformer(lw, &corev1.Pod{}, 0, base), x.newInformer(lw, &corev1.Pod{}, 0, base)
	if _, ok := base[byController]; ok {
		t.Fatal("newInformer changed the indexers it was given")
	}

	owned := func(name, ns string, uid types.UID) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
		if uid != "" {
			p.OwnerReferences = []metav1.OwnerReference{{UID: uid, Controller: ptr.To(true), Name: "md"}}
		}
		return p
	}
	a1, a2 := owned("a1", "ns-a", "md-a"), owned("a2", "ns-a", "md-a")
	b1 := owned("b1", "ns-b", "md-b")
	orphanA, orphanB := owned("o-a", "ns-a", ""), owned("o-b", "ns-b", "")
	notController := owned("nc", "ns-a", "")
	notController.OwnerReferences = []metav1.OwnerReference{{UID: "md-a", Name: "md"}} // owner, not controller
	for inf, pods := range map[toolscache.SharedIndexInformer][]*corev1.Pod{
		infA: {a1, a2, orphanA, notController}, infB: {b1, orphanB}} {
		for _, p := range pods {
			if err := inf.GetIndexer().Add(p); err != nil {
				t.Fatal(err)
			}
		}
	}

	for _, tc := range []struct {
		what string
		get  func() ([]*corev1.Pod, error)
		want []*corev1.Pod
	}{
		{"owned by md-a", func() ([]*corev1.Pod, error) { return x.Owned("md-a") }, []*corev1.Pod{a1, a2}},
		{"owned by md-b", func() ([]*corev1.Pod, error) { return x.Owned("md-b") }, []*corev1.Pod{b1}},
		{"owned by nobody known", func() ([]*corev1.Pod, error) { return x.Owned("md-c") }, nil},
		{"orphans of ns-a", func() ([]*corev1.Pod, error) { return x.Orphans("ns-a") }, []*corev1.Pod{orphanA, notController}},
		{"orphans of ns-b", func() ([]*corev1.Pod, error) { return x.Orphans("ns-b") }, []*corev1.Pod{orphanB}},
	} {
		got, err := tc.get()
		if err != nil {
			t.Fatalf("%s: %v", tc.what, err)
		}
		if len(got) != len(tc.want) {
			t.Fatalf("%s: %d pods, want %d", tc.what, len(got), len(tc.want))
		}
		for _, w := range tc.want {
			found := false
			for _, g := range got {
				found = found || g == w // the stored object itself, not a copy
			}
			if !found {
				t.Errorf("%s: %s missing (or copied)", tc.what, w.Name)
			}
		}
	}

	// Adoption moves a pod from the orphans to its controller's pods.
	adopted := orphanA.DeepCopy()
	adopted.OwnerReferences = []metav1.OwnerReference{{UID: "md-a", Controller: ptr.To(true), Name: "md"}}
	if err := infA.GetIndexer().Update(adopted); err != nil {
		t.Fatal(err)
	}
	if got, _ := x.Owned("md-a"); len(got) != 3 {
		t.Errorf("after adoption md-a has %d pods, want 3", len(got))
	}
	if got, _ := x.Orphans("ns-a"); len(got) != 1 {
		t.Errorf("after adoption ns-a has %d orphans, want 1", len(got))
	}
}
