package chaos

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mydeployment-io/mydeployment-operator/internal/shard"
)

// TestShardMoves: three managers with --shards (issue 56) while the
// workload's namespace changes hands: a mover SIGKILLs or stops one at
// random moments, most often the one holding the namespace's slot, and
// starts it again, sometimes within a lease duration (same identity: it
// writes its table entry empty and takes its slots back), sometimes after
// (its slots go to the others, then come back), so that rollouts, scale
// changes, corners and opt-ins are in flight as the namespace moves.
func TestShardMoves(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "chaos-shards")
	args := []string{"--shards", "--leader-elect", "--leader-election-namespace=" + managerNamespace,
		"--leader-elect-lease-duration=" + leaseDuration.String(), "--leader-elect-renew-deadline=3s",
		"--leader-elect-retry-period=" + retryPeriod.String()}
	var ms []*manager
	for _, name := range []string{"shard-a", "shard-b", "shard-c"} {
		m := newManager(name, []string{"POD_NAME=" + name}, args...)
		if err := m.start(); err != nil {
			t.Fatal(err)
		}
		defer m.stop()
		ms = append(ms, m)
	}
	holders := &holderLog{slot: shard.SlotOf(ns)}
	stopSampling := holders.sample(ctx)
	defer stopSampling()
	eventually(t, 6*leaseDuration, "a replica holds the namespace's slot", func() error {
		if holders.now() == "" {
			return errNoHolder
		}
		return nil
	})

	minMoves := scale(2, 10)
	mv := startMover(t, ms, holders)
	start := time.Now()
	res := suite.runWorkload(ctx, t, workload{ns: ns, count: scale(3, 8), changes: scale(8, 60), corners: true, optins: true,
		moreWhen: func() bool { return holders.moves() < minMoves }})
	mv.stop()
	writes, reads := faultsOf(ms...)
	figures.add(phaseFigures{name: "shard moves (3 replicas)", mds: scale(3, 8), res: res, kills: int(mv.kills.Load()),
		writeFaults: writes, readFaults: reads, duration: time.Since(start)})
	figures.note("shard moves: the namespace's slot changed hands %d times (%d kills, %d graceful stops; holders in turn: %s); corners: %s; opt-ins: %s",
		holders.moves(), mv.kills.Load(), mv.stops.Load(), holders.sequence(), res.cornersNote(), res.optinsNote())
	if len(res.failures) > 0 {
		var tails []string
		for _, m := range ms {
			tails = append(tails, m.name+":\n"+m.tail(20))
		}
		t.Fatalf("rollouts that did not complete:\n%s\nmanager logs:\n%s", strings.Join(res.failures, "\n"), strings.Join(tails, "\n"))
	}
	if holders.moves() < minMoves {
		t.Fatalf("the namespace's slot changed hands %d times, want at least %d", holders.moves(), minMoves)
	}
	requireNoViolations(t)
}

type chaosError string

func (e chaosError) Error() string { return string(e) }

const errNoHolder = chaosError("no replica holds the namespace's slot yet")

// holderLog samples the shard table: who holds one slot, and each change
// of hands (to another replica; none in between does not count).
type holderLog struct {
	slot int

	mu      sync.Mutex
	current string
	seq     []string
}

// sample reads the table every 100ms until the returned stop is called.
func (h *holderLog) sample(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			var table coordinationv1.Lease
			key := client.ObjectKey{Namespace: managerNamespace, Name: shard.TableName}
			if err := suite.c.Get(ctx, key, &table); err == nil {
				h.note(holderOf(table.Annotations[shard.HoldersAnnotation], h.slot))
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return func() { cancel(); <-done }
}

// holderOf reads the table's annotation ("<identity>=0x<slots>,...").
func holderOf(holders string, slot int) string {
	for entry := range strings.SplitSeq(holders, ",") {
		name, slots, ok := strings.Cut(entry, "=")
		if !ok {
			continue
		}
		if s, err := shard.Parse(slots); err == nil && s.Has(slot) {
			return name
		}
	}
	return ""
}

func (h *holderLog) note(holder string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.current = holder
	if holder != "" && (len(h.seq) == 0 || h.seq[len(h.seq)-1] != holder) {
		h.seq = append(h.seq, holder)
	}
}

func (h *holderLog) now() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.current
}

// moves counts the changes of hands.
func (h *holderLog) moves() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return max(0, len(h.seq)-1)
}

func (h *holderLog) sequence() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.seq, " -> ")
}

// mover kills or stops a replica at random moments (every 1-3 s) and starts
// it again, until stop is called: three times in four the holder of the
// namespace's slot (killed twice as often as stopped), else another; back
// after 1 s to two lease durations, so that some outages outlast the lease
// and move the slot. Never sooner than 1 s: the reason is killer's.
type mover struct {
	kills, stops atomic.Int64
	stop         func()
}

func startMover(t *testing.T, ms []*manager, holders *holderLog) *mover {
	mv := &mover{}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Duration(1000+rand.IntN(2000)) * time.Millisecond):
			}
			target := ms[rand.IntN(len(ms))]
			if rand.IntN(4) > 0 {
				for _, m := range ms {
					if m.name == holders.now() {
						target = m
					}
				}
			}
			if rand.IntN(3) > 0 {
				target.kill()
				mv.kills.Add(1)
			} else {
				target.stop()
				mv.stops.Add(1)
			}
			select {
			case <-done:
			case <-time.After(time.Second + time.Duration(rand.Int64N(int64(2*leaseDuration)))):
			}
			if err := target.start(); err != nil {
				t.Errorf("restarting %s: %v", target.name, err)
				return
			}
		}
	})
	mv.stop = func() { close(done); wg.Wait() }
	return mv
}
