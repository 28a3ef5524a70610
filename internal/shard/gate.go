package shard

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Gate says whether this replica acts on a namespace now, and counts the
// syncs in flight per slot so that a slot is given up only once none runs
// (never two writers: the next holder starts on a slot only after this
// one's table entry stopped listing it, which Membership writes only after
// Drain returned).
//
// A replica acts on a namespace while its slot is held (the table lists it
// for this replica and Membership has not begun to give it up) and its own
// Lease was renewed within the renew deadline: a replica that cannot renew
// stops by itself, before the others can judge its Lease expired (lease
// duration > renew deadline), as a leader stops leading.
type Gate struct {
	clock         clock.PassiveClock
	renewDeadline time.Duration

	mu       sync.Mutex
	idle     *sync.Cond // signalled when a sync leaves
	held     Slots
	renewed  time.Time // the last successful renewal of this replica's Lease
	inflight [Count]int
}

// NewGate is a gate that holds nothing until Membership says otherwise.
func NewGate(c clock.PassiveClock, renewDeadline time.Duration) *Gate {
	g := &Gate{clock: c, renewDeadline: renewDeadline}
	g.idle = sync.NewCond(&g.mu)
	return g
}

// Enter admits one sync of an object in namespace: ok is false when this
// replica does not act on it now (the sync does nothing: the holder of the
// slot syncs it). leave must be called once the sync is over.
func (g *Gate) Enter(namespace string) (leave func(), ok bool) {
	slot := SlotOf(namespace)
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.actsLocked(slot) {
		return func() {}, false
	}
	g.inflight[slot]++
	return func() {
		g.mu.Lock()
		g.inflight[slot]--
		g.mu.Unlock()
		g.idle.Broadcast()
	}, true
}

// Acts says whether this replica acts on namespace now (no sync admitted).
func (g *Gate) Acts(namespace string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.actsLocked(SlotOf(namespace))
}

func (g *Gate) actsLocked(slot int) bool { return g.actingLocked().Has(slot) }

// Acting are the slots whose syncs the gate admits now: those held, while
// the Lease is fresh.
func (g *Gate) Acting() Slots {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.actingLocked()
}

func (g *Gate) actingLocked() Slots {
	if g.renewed.IsZero() || g.clock.Since(g.renewed) >= g.renewDeadline {
		return 0
	}
	return g.held
}

// Held are the slots this replica acts on while its Lease is fresh.
func (g *Gate) Held() Slots {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.held
}

// renewedAt records a successful renewal of this replica's Lease.
func (g *Gate) renewedAt(t time.Time) {
	g.mu.Lock()
	g.renewed = t
	g.mu.Unlock()
}

// fresh says the Lease was renewed within the renew deadline.
func (g *Gate) fresh() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return !g.renewed.IsZero() && g.clock.Since(g.renewed) < g.renewDeadline
}

// hold sets the slots acted on to s. Membership calls it with more slots
// only after the table lists them for this replica.
func (g *Gate) hold(s Slots) {
	g.mu.Lock()
	g.held = s
	g.mu.Unlock()
}

// drain stops admitting syncs of slots and waits until none of theirs is in
// flight (or ctx ends: the error, and the slots stay refused).
func (g *Gate) drain(ctx context.Context, slots Slots) error {
	g.mu.Lock()
	g.held &^= slots
	g.mu.Unlock()
	stop := context.AfterFunc(ctx, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.idle.Broadcast()
	})
	defer stop()
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.busyLocked(slots) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		g.idle.Wait()
	}
	return nil
}

func (g *Gate) busyLocked(slots Slots) bool {
	for _, i := range slots.List() {
		if g.inflight[i] > 0 {
			return true
		}
	}
	return false
}
