package shardcache

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/mydeployment-io/mydeployment-operator/internal/podwatch"
	"github.com/mydeployment-io/mydeployment-operator/internal/shard"
)

// startAPIServer is an envtest API server, with ShardedListAndWatch on or off.
func startAPIServer(t *testing.T, sharded bool) *rest.Config {
	t.Helper()
	env := &envtest.Environment{}
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		env.BinaryAssetsDirectory = filepath.Join("..", "..", "bin", "k8s")
	}
	env.ControlPlane.GetAPIServer().Configure().Append("feature-gates", fmt.Sprintf("ShardedListAndWatch=%t", sharded))
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting envtest: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	return cfg
}

// TestHonoured: the probe says what the API server's feature gate says.
func TestHonoured(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprintf("ShardedListAndWatch=%t", on), func(t *testing.T) {
			cs := kubernetes.NewForConfigOrDie(startAPIServer(t, on))
			got, err := Honoured(context.Background(), cs)
			if err != nil || got != on {
				t.Fatalf("Honoured = %t, %v; want %t", got, err, on)
			}
		})
	}
}

// namespacesIn returns n namespaces (of names a user might give) in each
// of the slots asked, and which slot each is in.
func namespacesIn(n int, slots ...int) map[string]int {
	want := map[int]int{}
	for _, s := range slots {
		want[s] = n
	}
	out := map[string]int{}
	for i := 0; len(want) > 0; i++ {
		ns := fmt.Sprintf("team-%d-prod", i)
		s := shard.SlotOf(ns)
		if want[s] > 0 {
			out[ns] = s
			if want[s]--; want[s] == 0 {
				delete(want, s)
			}
		}
	}
	return out
}

// TestSlotCachesHoldTheirSlotsOnly: on an API server that filters by shard,
// the cache holds the pods of the slots taken and no others (the server
// sent no others: nothing filters on our side); a handler and an index
// added before a slot is taken reach its cache; a slot forgotten is gone
// from reads, from the pod index, and from events.
func TestSlotCachesHoldTheirSlotsOnly(t *testing.T) {
	cfg := startAPIServer(t, true)
	scheme := runtime.NewScheme()
	_ = corev1.AddToScheme(scheme)
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	const slotA, slotB = 3, 40
	namespaces := namespacesIn(2, slotA, slotB)
	for ns := range namespaces {
		mustCreate(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		for i := range 3 {
			mustCreate(t, c, pod(ns, fmt.Sprintf("p%d", i)))
		}
	}

	index := podwatch.NewIndex()
	sc := startCache(ctx, t, cfg, scheme, index.NewInformer, 10*time.Second)
	if !sc.WaitForCacheSync(ctx) {
		t.Fatal("the cache did not sync")
	}

	// Before any slot: a handler and an index, as a controller's setup adds them.
	events := &seen{}
	inf, err := sc.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inf.AddEventHandler(events); err != nil {
		t.Fatal(err)
	}
	if err := sc.IndexField(ctx, &corev1.Pod{}, "spec.nodeName", func(o client.Object) []string {
		return []string{o.(*corev1.Pod).Spec.NodeName}
	}); err != nil {
		t.Fatal(err)
	}
	if got := listed(t, sc); len(got) != 0 {
		t.Fatalf("no slot held, and the cache lists %v", got)
	}

	if ready := sc.Taking(ctx, shard.Of(slotA)); ready != shard.Of(slotA) {
		t.Fatalf("Taking slot %d: ready %s", slotA, ready)
	}
	want := podsIn(namespaces, slotA)
	if got := listed(t, sc); !equal(got, want) {
		t.Fatalf("slot %d held: the cache lists %v, want %v", slotA, got, want)
	}
	var byNode corev1.PodList
	if err := sc.List(ctx, &byNode, client.MatchingFields{"spec.nodeName": "node-1"}); err != nil || len(byNode.Items) != len(want) {
		t.Fatalf("the index added before the slot: %d pods, %v; want %d", len(byNode.Items), err, len(want))
	}
	for ns, s := range namespaces {
		orphans, err := index.Orphans(ns)
		if err != nil {
			t.Fatal(err)
		}
		if wantN := map[bool]int{true: 3}[s == slotA]; len(orphans) != wantN {
			t.Errorf("the pod index in %s (slot %d): %d pods", ns, s, len(orphans))
		}
		var p corev1.Pod
		err = sc.Get(ctx, client.ObjectKey{Namespace: ns, Name: "p0"}, &p)
		var notHeld *NotHeldError
		if s == slotA && err != nil || s != slotA && !errors.As(err, &notHeld) {
			t.Errorf("Get of a pod in %s (slot %d): %v", ns, s, err)
		}
	}
	eventually(t, func() bool { return equal(events.names(), want) })
	if got := events.names(); !equal(got, want) {
		t.Fatalf("the handler saw %v, want %v", got, want)
	}

	// Slot A given up, slot B taken: A's pods leave every read.
	sc.Forget(shard.Of(slotA))
	if ready := sc.Taking(ctx, shard.Of(slotB)); ready != shard.Of(slotB) {
		t.Fatalf("Taking slot %d: ready %s", slotB, ready)
	}
	want = podsIn(namespaces, slotB)
	if got := listed(t, sc); !equal(got, want) {
		t.Fatalf("slot %d held: the cache lists %v, want %v", slotB, got, want)
	}
	indexed := func(ns string) int {
		orphans, _ := index.Orphans(ns)
		return len(orphans)
	}
	for ns, s := range namespaces {
		wantN := map[bool]int{true: 3}[s == slotB]
		eventually(t, func() bool { return indexed(ns) == wantN }) // slot A's informer stops soon after Forget
		if got := indexed(ns); got != wantN {
			t.Errorf("the pod index in %s (slot %d) after the move: %d pods", ns, s, got)
		}
	}
	// A pod created in the slot given up reaches no handler; one in the
	// slot held does.
	events.reset()
	for ns := range namespaces {
		mustCreate(t, c, pod(ns, "late"))
	}
	eventually(t, func() bool { return len(events.names()) >= 2 })
	time.Sleep(500 * time.Millisecond) // a stray event from slot A would have come by now
	var wantLate []string
	for ns, s := range namespaces {
		if s == slotB {
			wantLate = append(wantLate, ns+"/late")
		}
	}
	sort.Strings(wantLate)
	if got := events.names(); !equal(got, wantLate) {
		t.Fatalf("after the move the handler saw %v, want %v", got, wantLate)
	}
}

// startCache starts a Cache of the API server at cfg, its informers made
// by newInformer, until ctx ends.
func startCache(ctx context.Context, t *testing.T, cfg *rest.Config, scheme *runtime.Scheme,
	newInformer func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer,
	syncWait time.Duration) *Cache {
	t.Helper()
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := New(Options{
		Cache: cache.Options{Scheme: scheme, Mapper: mapper, HTTPClient: httpClient, NewInformer: newInformer},
		New:   func(o cache.Options) (cache.Cache, error) { return cache.New(cfg, o) },
		Log:   logr.Discard(), SyncWait: syncWait,
	})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = sc.Start(ctx) }()
	return sc
}

// eventually waits up to 10s for cond.
func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond() && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
}

func pod(ns, name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "c", Image: "img"}}}}
}

func mustCreate(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
}

// podsIn are the 3 pods of each namespace in slot, as namespace/name.
func podsIn(namespaces map[string]int, slot int) []string {
	var out []string
	for ns, s := range namespaces {
		if s == slot {
			for i := range 3 {
				out = append(out, fmt.Sprintf("%s/p%d", ns, i))
			}
		}
	}
	sort.Strings(out)
	return out
}

func listed(t *testing.T, c cache.Cache) []string {
	t.Helper()
	var pods corev1.PodList
	if err := c.List(context.Background(), &pods); err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, p := range pods.Items {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	sort.Strings(out)
	return out
}

func equal(a, b []string) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// seen is an event handler that notes the pods added.
type seen struct {
	mu    sync.Mutex
	added map[string]bool
}

func (s *seen) OnAdd(obj any, _ bool) {
	p := obj.(*corev1.Pod)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.added == nil {
		s.added = map[string]bool{}
	}
	s.added[p.Namespace+"/"+p.Name] = true
}
func (s *seen) OnUpdate(_, _ any) {}
func (s *seen) OnDelete(_ any)    {}

func (s *seen) names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []string{}
	for k := range s.added {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (s *seen) reset() {
	s.mu.Lock()
	s.added = nil
	s.mu.Unlock()
}

var _ toolscache.ResourceEventHandler = &seen{}

// slowList delays every list and watch by d (a watch-list sync is a
// watch): a slot whose informers take that long to sync.
type slowList struct {
	toolscache.ListerWatcher
	d time.Duration
}

func (s slowList) Watch(o metav1.ListOptions) (watch.Interface, error) {
	time.Sleep(s.d)
	return s.ListerWatcher.Watch(o)
}

func (s slowList) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	time.Sleep(s.d)
	return toolscache.ToWatcherWithContext(s.ListerWatcher).WatchWithContext(ctx, o)
}

func (s slowList) List(o metav1.ListOptions) (runtime.Object, error) {
	time.Sleep(s.d)
	return s.ListerWatcher.List(o)
}

func (s slowList) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	time.Sleep(s.d)
	return toolscache.ToListerWithContext(s.ListerWatcher).ListWithContext(ctx, o)
}

// TestTakingSaysReadyOnceSynced: a slot whose informers have not synced
// within SyncWait is not ready (the gate does not admit it); it keeps
// syncing, and Taking says it ready once it has.
func TestTakingSaysReadyOnceSynced(t *testing.T) {
	cfg := startAPIServer(t, true)
	scheme := runtime.NewScheme()
	_ = corev1.AddToScheme(scheme)
	slow := func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
		return toolscache.NewSharedIndexInformer(slowList{ListerWatcher: lw, d: 2 * time.Second}, obj, resync, idx)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sc := startCache(ctx, t, cfg, scheme, slow, 200*time.Millisecond)
	if _, err := sc.GetInformer(ctx, &corev1.Pod{}); err != nil {
		t.Fatal(err)
	}
	if ready := sc.Taking(ctx, shard.Of(7)); ready != 0 {
		t.Fatalf("a slot whose pods are still listing: ready %s", ready)
	}
	time.Sleep(3 * time.Second)
	if ready := sc.Taking(ctx, shard.Of(7)); ready != shard.Of(7) {
		t.Fatalf("listed since: ready %s, want slot 7", ready)
	}
}
