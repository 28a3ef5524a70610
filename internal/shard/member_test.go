package shard

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

func TestHoldersRoundTrip(t *testing.T) {
	h := map[string]Slots{"b": Of(1, 2), "a": Of(63), "empty": 0}
	v := formatHolders(h)
	if v != "a=0x8000000000000000,b=0x0000000000000006" {
		t.Fatalf("format: %q", v)
	}
	back, err := parseHolders(v)
	if err != nil || len(back) != 2 || back["a"] != Of(63) || back["b"] != Of(1, 2) {
		t.Fatalf("parse %q: %v %v", v, back, err)
	}
	for _, bad := range []string{"a", "=0x0000000000000001", "a=1", "a=0x1,b=0x0000000000000001"} {
		if _, err := parseHolders(bad); err == nil {
			t.Errorf("parse %q: no error", bad)
		}
	}
}

// TestWithEntry: self's entry becomes what it holds; what it takes leaves
// the entries of replicas not live, never a live one's.
func TestWithEntry(t *testing.T) {
	h := map[string]Slots{"self": Of(1), "live": Of(2), "gone": Of(3, 4)}
	got := withEntry(h, "self", Of(1, 3), []string{"live"})
	want := map[string]Slots{"self": Of(1, 3), "live": Of(2), "gone": Of(4)}
	if formatHolders(got) != formatHolders(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if got := withEntry(map[string]Slots{"self": Of(1), "gone": Of(3)}, "self", 0, nil); formatHolders(got) != "gone=0x0000000000000008" {
		t.Fatalf("an empty entry is dropped, another kept: %v", got)
	}
}

// TestGateDrainWaitsForSyncsInFlight: a slot given up admits no new sync at
// once, and drain returns only when the one in flight left; a gate whose
// Lease went unrenewed past the renew deadline admits nothing.
func TestGateDrainWaitsForSyncsInFlight(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	g := NewGate(clk, 10*time.Second)
	g.hold(All)
	if _, ok := g.Enter("a"); ok {
		t.Fatal("admitted before any renewal")
	}
	g.renewedAt(clk.Now())
	leave, ok := g.Enter("a")
	if !ok {
		t.Fatal("held and fresh: not admitted")
	}
	done := make(chan error)
	go func() { done <- g.drain(context.Background(), Of(SlotOf("a"))) }()
	time.Sleep(50 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("drain returned (%v) with a sync in flight", err)
	default:
	}
	if _, ok := g.Enter("a"); ok {
		t.Fatal("a slot being given up admitted a new sync")
	}
	leave()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	other := "b"
	for SlotOf(other) == SlotOf("a") {
		other += "b"
	}
	if !g.Acts(other) {
		t.Fatalf("%s's slot was not given up", other)
	}
	clk.Step(10 * time.Second)
	if g.Acts(other) {
		t.Fatal("acts with a Lease unrenewed for the renew deadline")
	}
	ctx, cancel := context.WithCancel(context.Background())
	g.renewedAt(clk.Now())
	leave, _ = g.Enter(other)
	cancel()
	if err := g.drain(ctx, All); err == nil {
		t.Fatal("drain with a sync in flight and its context ended: no error")
	}
	leave()
}

// replica is one member in the envtest: rounds run by the test, so that it
// can stop one as a SIGKILL would (no more rounds, no Leave) or let it
// leave.
type replica struct {
	m      *Membership
	stop   context.CancelFunc
	done   chan struct{}
	forgot atomic.Int64
}

const (
	testLease = 3 * time.Second
	testRenew = 2 * time.Second
	testRetry = 200 * time.Millisecond
)

func startReplica(t *testing.T, c client.Client, name string) *replica {
	t.Helper()
	r := &replica{done: make(chan struct{})}
	r.m = New(Config{Client: c, Namespace: "operator", Identity: name, LeaseDuration: testLease, RenewDeadline: testRenew,
		RetryPeriod: testRetry, Log: logr.Discard()})
	r.m.Tell(r)
	ctx, cancel := context.WithCancel(context.Background())
	r.stop = cancel
	go func() {
		defer close(r.done)
		for ctx.Err() == nil {
			_ = r.m.Round(ctx)
			select {
			case <-ctx.Done():
			case <-time.After(testRetry):
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-r.done })
	return r
}

// The replica as a shard.Holder: it counts the slots it forgot.
func (r *replica) Forget(s Slots)                          { r.forgot.Add(int64(s.Len())) }
func (r *replica) Taking(_ context.Context, s Slots) Slots { return s }
func (r *replica) Taken(context.Context, Slots)            {}

// kill stops the replica's rounds without a Leave.
func (r *replica) kill() { r.stop(); <-r.done }

// leave stops its rounds and leaves as Start does at a graceful stop.
func (r *replica) leave(t *testing.T) {
	r.kill()
	if err := r.m.Leave(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// watchNoTwoActors samples every replica's gate until the test ends and
// fails if two ever act on one slot at once.
func watchNoTwoActors(t *testing.T, all func() []*replica) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	var samples atomic.Int64
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			var seen Slots
			for _, r := range all() {
				acting := r.m.gate.busy()
				if both := seen & acting; both != 0 {
					t.Errorf("two replicas act on slots %s", both)
					return
				}
				seen |= acting
			}
			samples.Add(1)
			time.Sleep(5 * time.Millisecond)
		}
	}()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		t.Logf("%d samples of every replica's gate: never two actors on one slot", samples.Load())
	})
}

// busy are the slots the gate admits syncs of now, and those with a sync
// still in flight (admitted before the slot began to be given up).
func (g *Gate) busy() Slots {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.actingLocked()
	for i := range Count {
		if g.inflight[i] > 0 {
			s |= Of(i)
		}
	}
	return s
}

// settled waits until the replicas given act on every slot between them,
// each on some, and the table lists exactly that; it returns how long.
func settled(t *testing.T, c client.Client, within time.Duration, rs ...*replica) time.Duration {
	t.Helper()
	start := time.Now()
	var last string
	for time.Since(start) < within {
		var union Slots
		ok := true
		want := map[string]Slots{}
		for _, r := range rs {
			h := r.m.gate.Acting()
			if h == 0 || union&h != 0 {
				ok = false
			}
			union |= h
			want[r.m.cfg.Identity] = h
		}
		var table coordinationv1.Lease
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: "operator", Name: TableName}, &table); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
		last = fmt.Sprintf("table %q, gates %v", table.Annotations[HoldersAnnotation], want)
		if ok && union == All && table.Annotations[HoldersAnnotation] == formatHolders(want) {
			return time.Since(start)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("not settled within %s: %s", within, last)
	return 0
}

// TestMembersOnAnAPIServer: three replicas on a real kube-apiserver share
// the 64 slots, one holder each, through a kill (its slots taken within a
// lease duration and a few rounds, its Lease deleted after), a graceful
// leave (taken within rounds, not a lease duration) and two joins while a
// sync of a slot that moves is in flight (the slot moves once it is over),
// and no sample of their gates ever finds two acting on one slot or one
// acting on a slot another still runs a sync of.
func TestMembersOnAnAPIServer(t *testing.T) {
	c := startEnv(t)
	if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "operator"}}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var running []*replica
	set := func(rs ...*replica) { mu.Lock(); running = rs; mu.Unlock() }
	watchNoTwoActors(t, func() []*replica { mu.Lock(); defer mu.Unlock(); return running })

	a, b, cc := startReplica(t, c, "a"), startReplica(t, c, "b"), startReplica(t, c, "c")
	set(a, b, cc)
	t.Logf("3 replicas settled in %s", settled(t, c, 20*time.Second, a, b, cc))

	cc.kill()
	set(a, b, cc) // still sampled: its gate must stop by itself
	took := settled(t, c, testLease+20*testRetry+5*time.Second, a, b)
	t.Logf("a killed replica's slots taken in %s (lease duration %s)", took, testLease)
	if took < testRenew {
		t.Errorf("slots taken %s after a kill: before the killed replica's renew deadline (%s)", took, testRenew)
	}

	bForgot := b.forgot.Load()
	b.leave(t)
	set(a, b)
	took = settled(t, c, testLease, a)
	t.Logf("a leaving replica's slots taken in %s", took)
	if b.forgot.Load() == bForgot {
		t.Error("the replica that left forgot no slot's memory")
	}
	var lease coordinationv1.Lease
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "operator", Name: MemberPrefix + "b"}, &lease); err == nil {
		t.Error("the replica that left kept its Lease")
	}

	Eventually := func(what string, within time.Duration, ok func() bool) {
		t.Helper()
		for start := time.Now(); !ok(); time.Sleep(50 * time.Millisecond) {
			if time.Since(start) > within {
				t.Fatalf("not within %s: %s", within, what)
			}
		}
	}
	Eventually("the killed replica's Lease deleted once its slots were taken", 3*testLease, func() bool {
		var l coordinationv1.Lease
		return apierrors.IsNotFound(c.Get(context.Background(), client.ObjectKey{Namespace: "operator", Name: MemberPrefix + "c"}, &l))
	})
	// A sync of a's in flight in a namespace that d is to hold: a gives
	// the slot up only once it is over, and d acts on it only after.
	ns := "team-0"
	for i := 1; Owner(SlotOf(ns), []string{"a", "d", "e"}) != "d"; i++ {
		ns = fmt.Sprintf("team-%d", i)
	}
	leaveSync, ok := a.m.Gate().Enter(ns)
	if !ok {
		t.Fatalf("a holds every slot but does not admit %s", ns)
	}
	aForgot := a.forgot.Load()
	d, e := startReplica(t, c, "d"), startReplica(t, c, "e")
	set(a, cc, d, e)
	time.Sleep(10 * testRetry)
	if d.m.Gate().Acts(ns) {
		t.Fatalf("d acts on %s while a's sync of it is in flight", ns)
	}
	leaveSync()
	Eventually("d acts on "+ns+" once a's sync is over", 10*testRetry, func() bool { return d.m.Gate().Acts(ns) })
	t.Logf("a, d and e settled in %s", settled(t, c, 20*time.Second, a, d, e))
	if a.forgot.Load() == aForgot {
		t.Error("a gave slots to the joining replicas and forgot none")
	}
}

func startEnv(t *testing.T) client.Client {
	t.Helper()
	env := &envtest.Environment{}
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		env.BinaryAssetsDirectory = filepath.Join("..", "..", "bin", "k8s")
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting envtest: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	scheme := runtime.NewScheme()
	_ = corev1.AddToScheme(scheme)
	_ = coordinationv1.AddToScheme(scheme)
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// gated is a Holder ready for nothing until open, as a slot's cache that
// has not synced; it notes what it was told.
type gated struct {
	open          atomic.Bool
	taking, taken atomic.Int64 // slots told, summed over calls
}

func (g *gated) Forget(Slots) {}
func (g *gated) Taking(_ context.Context, s Slots) Slots {
	g.taking.Add(int64(s.Len()))
	if g.open.Load() {
		return s
	}
	return 0
}
func (g *gated) Taken(_ context.Context, s Slots) { g.taken.Add(int64(s.Len())) }

// TestSlotsWaitForEveryHolder: a slot the table gives this replica is not
// admitted while a holder is not ready for it; the holders after it are
// not told, nor is any told Taken; once ready, the next round admits it.
func TestSlotsWaitForEveryHolder(t *testing.T) {
	c := startEnv(t)
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "operator"}}); err != nil {
		t.Fatal(err)
	}
	m := New(Config{Client: c, Namespace: "operator", Identity: "only", LeaseDuration: testLease, RenewDeadline: testRenew,
		RetryPeriod: testRetry, Log: logr.Discard()})
	cache, controller := &gated{}, &gated{}
	controller.open.Store(true)
	m.Tell(cache)
	m.Tell(controller)
	for range 3 {
		if err := m.Round(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var table coordinationv1.Lease
	if err := c.Get(ctx, client.ObjectKey{Namespace: "operator", Name: TableName}, &table); err != nil {
		t.Fatal(err)
	}
	if h, _ := parseHolders(table.Annotations[HoldersAnnotation]); h["only"] != All {
		t.Fatalf("the table gives the only replica %s, want every slot", h["only"])
	}
	if acting := m.Gate().Acting(); acting != 0 {
		t.Fatalf("a holder is not ready, and the gate admits %s", acting)
	}
	if cache.taking.Load() < 2*Count || controller.taking.Load() != 0 || cache.taken.Load()+controller.taken.Load() != 0 {
		t.Fatalf("told: cache Taking %d, controller Taking %d, Taken %d, %d", cache.taking.Load(), controller.taking.Load(),
			cache.taken.Load(), controller.taken.Load())
	}
	cache.open.Store(true)
	if err := m.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if acting := m.Gate().Acting(); acting != All {
		t.Fatalf("every holder ready: the gate admits %s", acting)
	}
	if controller.taking.Load() != Count || controller.taken.Load() != Count || cache.taken.Load() != Count {
		t.Fatalf("once ready: controller Taking %d, Taken %d; cache Taken %d", controller.taking.Load(),
			controller.taken.Load(), cache.taken.Load())
	}
}
