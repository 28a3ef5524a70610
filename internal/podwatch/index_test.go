package podwatch

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// TestPodIndex: pods are found by their controller's UID whatever their
// namespace, orphans by namespace, across every informer the cache made
// (one per watched namespace), and what is returned is the stored pod.
func TestPodIndex(t *testing.T) {
	x := NewIndex()
	if _, err := x.Owned("a"); err == nil {
		t.Fatal("Owned with no pod informer: no error")
	}
	lw := &toolscache.ListWatch{}
	base := toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc}
	// Other kinds get client-go's informer, without the index.
	if inf := x.NewInformer(lw, &corev1.ConfigMap{}, 0, base); inf.GetIndexer().GetIndexers()[ByController] != nil {
		t.Fatal("a ConfigMap informer got the pod index")
	}
	infA, infB := x.NewInformer(lw, &corev1.Pod{}, 0, base), x.NewInformer(lw, &corev1.Pod{}, 0, base)
	if _, ok := base[ByController]; ok {
		t.Fatal("NewInformer changed the indexers it was given")
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

// TestPodIndexNotesLeavesFirst: a pod watch's DELETE event for a pod not
// terminating (one that left the cache's selector) reaches the leave hook
// while the pod is still in the index, so a sync never finds the pod in
// neither the index nor its strays; a terminating pod's DELETE does not.
func TestPodIndexNotesLeavesFirst(t *testing.T) {
	x := NewIndex()
	fw := watch.NewFake()
	lw := noWatchList{&toolscache.ListWatch{
		ListFunc:  func(metav1.ListOptions) (runtime.Object, error) { return &corev1.PodList{}, nil },
		WatchFunc: func(metav1.ListOptions) (watch.Interface, error) { return fw, nil },
	}}
	inf := x.NewInformer(lw, &corev1.Pod{}, 0, toolscache.Indexers{})
	type noted struct {
		name    string
		indexed bool
	}
	notes := make(chan noted, 2)
	x.NotifyLeaves(func(p *corev1.Pod) {
		owned, _ := x.Owned("md-uid")
		notes <- noted{p.Name, slices.ContainsFunc(owned, func(q *corev1.Pod) bool { return q.Name == p.Name })}
	})
	stop := make(chan struct{})
	defer close(stop)
	go inf.Run(stop)
	// The fake watch sends no initial-events bookmark: the informer syncs
	// only if the index passed on that the client does not stream lists.
	timeout := make(chan struct{})
	time.AfterFunc(10*time.Second, func() { close(timeout) })
	if !toolscache.WaitForCacheSync(timeout, inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	pod := func(name string, terminating bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: "1",
			OwnerReferences: []metav1.OwnerReference{{UID: "md-uid", Name: "md", Controller: ptr.To(true)}}}}
		if terminating {
			p.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		}
		return p
	}
	indexed := func(name string) bool {
		owned, _ := x.Owned("md-uid")
		return slices.ContainsFunc(owned, func(q *corev1.Pod) bool { return q.Name == name })
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	fw.Add(pod("left", false))
	fw.Add(pod("deleted", true))
	waitFor("both pods indexed", func() bool { return indexed("left") && indexed("deleted") })

	fw.Delete(pod("left", false))
	select {
	case n := <-notes:
		if n.name != "left" || !n.indexed {
			t.Fatalf("leave hook called for %s, pod still indexed: %v; want left, still indexed", n.name, n.indexed)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the leave hook was not called")
	}
	waitFor("the pod that left dropped from the index", func() bool { return !indexed("left") })

	fw.Delete(pod("deleted", true))
	waitFor("the terminating pod dropped from the index", func() bool { return !indexed("deleted") })
	select {
	case n := <-notes:
		t.Fatalf("leave hook called for the terminating pod %s", n.name)
	default:
	}
}

// noWatchList is a ListWatch that says it cannot stream its initial list
// (WatchList), as client-go's fakes do.
type noWatchList struct{ *toolscache.ListWatch }

func (noWatchList) IsWatchListSemanticsUnSupported() bool { return true }

// TestCountOverEveryInformer: Count counts the pods of every pod informer
// still running, all of them and those of the namespaces asked.
func TestCountOverEveryInformer(t *testing.T) {
	a := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{ByController: ControllerKeys})
	b := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{ByController: ControllerKeys})
	for _, p := range []struct {
		store    toolscache.Indexer
		ns, name string
	}{{a, "team-a", "p0"}, {a, "team-a", "p1"}, {b, "team-b", "p0"}} {
		if err := p.store.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: p.name}}); err != nil {
			t.Fatal(err)
		}
	}
	in, all, err := IndexOf(a, b).Count(func(ns string) bool { return ns == "team-b" })
	if err != nil || in != 1 || all != 3 {
		t.Fatalf("Count = %d of %d, %v; want 1 of 3", in, all, err)
	}
}
