package shard

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// The Leases of membership, in the operator's namespace.
const (
	// MemberLabel marks a replica's own Lease (value "true"); the Lease is
	// named MemberPrefix and the replica's identity.
	MemberLabel  = v1beta1.ShardMemberLabel
	MemberPrefix = "mydeployment-shard-"
	// TableName is the Lease whose HoldersAnnotation lists which replica
	// holds which slots: "<identity>=<Slots>,..." sorted by identity. It is
	// the one place a slot's holder is written, always by a write
	// conditioned on the resourceVersion read, so the API server orders
	// every move and no version of it lists a slot twice.
	TableName         = "mydeployment-shards"
	HoldersAnnotation = v1beta1.ShardHoldersAnnotation
)

// Config is one replica's membership.
type Config struct {
	// Client reads from the API server, not a cache: a Lease's
	// resourceVersion must be the server's latest when liveness is judged
	// and when the table is written.
	Client    client.Client
	Namespace string
	// Identity names this replica (its pod's name): unique among live ones.
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod as leader election's:
	// another replica is live while its Lease changed within LeaseDuration
	// of this replica's clock; this replica acts only while it renewed
	// within RenewDeadline; each round runs every RetryPeriod.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	Clock                                     clock.Clock
	Log                                       logr.Logger
}

// A Holder is told as this replica's slots move: a reconciler that keeps
// memory of its objects or must sync them when their slot arrives.
type Holder interface {
	// Forget drops the per-object memory of slots' namespaces: they are
	// given up, their syncs over, and the table is about to stop listing
	// them, so the next time this replica holds them it starts as after a
	// restart.
	Forget(slots Slots)
	// Taking is told of slots the table now lists for this replica, before
	// the gate admits their syncs: their objects start as after a restart.
	// It returns those of slots it is ready for; the others are not
	// admitted this round and are told again at the next (a cache still
	// listing a slot's objects, shardcache). Holders are asked in the order
	// Tell added them, each of what the ones before were ready for.
	Taking(ctx context.Context, slots Slots) (ready Slots)
	// Taken is told once the gate admits them: their syncs were refused
	// until now, so their objects are to be synced.
	Taken(ctx context.Context, slots Slots)
}

// Membership is one replica's part in the shards: it renews the replica's
// Lease, judges which others are live, and moves slots through the table,
// giving one up only after its syncs are over and taking one only once no
// live replica's entry lists it. Its Gate is what the reconcilers ask.
type Membership struct {
	cfg     Config
	gate    *Gate
	holders []Holder

	// seen is when each other replica's Lease was last seen to change, by
	// this replica's clock (never another machine's): name -> observation.
	seen map[string]observation
	// stale says this replica's table entry may list slots it must not act
	// on: at start (an entry of an earlier run under the same identity) and
	// after its Lease went unrenewed past the renew deadline (the others may
	// have judged it gone and taken its slots). Until its entry is written
	// empty, it holds nothing.
	stale bool
	// acted are the slots this replica may have synced since its memory was
	// last forgotten: what Forget must drop when it gives slots up or goes
	// stale.
	acted Slots
}

type observation struct {
	resourceVersion string
	at              time.Time
}

// New is a membership that holds nothing until its first rounds.
func New(cfg Config) *Membership {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Membership{
		cfg:   cfg,
		gate:  NewGate(cfg.Clock, cfg.RenewDeadline),
		seen:  map[string]observation{},
		stale: true,
	}
}

// Tell adds h to those told as slots move; before Start.
func (m *Membership) Tell(h Holder) { m.holders = append(m.holders, h) }

// Gate is what the reconcilers ask before a sync.
func (m *Membership) Gate() *Gate { return m.gate }

// NeedLeaderElection: every replica is a member.
func (m *Membership) NeedLeaderElection() bool { return false }

// Start runs rounds every RetryPeriod until ctx ends, then leaves: it gives
// every slot up (syncs over, memory forgotten, entry removed) and deletes
// its Lease, so the others take its slots at their next round rather than
// after a lease duration.
func (m *Membership) Start(ctx context.Context) error {
	for {
		round, cancel := context.WithTimeout(ctx, m.cfg.RenewDeadline)
		err := m.Round(round)
		cancel()
		if err != nil && ctx.Err() == nil {
			m.cfg.Log.Error(err, "shard membership round")
		}
		select {
		case <-ctx.Done():
			leave, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.cfg.RenewDeadline)
			defer cancel()
			return m.Leave(leave)
		case <-m.cfg.Clock.After(m.cfg.RetryPeriod):
		}
	}
}

// Round is one round: renew, observe, then give up and take slots.
func (m *Membership) Round(ctx context.Context) error {
	if err := m.renew(ctx); err != nil {
		if !m.gate.fresh() {
			m.fence()
		}
		return err
	}
	live, err := m.observe(ctx)
	if err != nil {
		return err
	}
	table, err := m.table(ctx)
	if err != nil {
		return err
	}
	holders, err := parseHolders(table.Annotations[HoldersAnnotation])
	if err != nil {
		return fmt.Errorf("lease %s/%s: %w", m.cfg.Namespace, TableName, err)
	}
	if m.stale {
		return m.clear(ctx, table, holders)
	}
	m.collect(ctx, holders)

	members := make([]Member, 0, len(live)+1)
	var others Slots
	for _, name := range append(live, m.cfg.Identity) {
		members = append(members, Member{Name: name, Held: holders[name]})
		if name != m.cfg.Identity {
			others |= holders[name]
		}
	}
	step := Next(m.cfg.Identity, members)
	if step.Release != 0 {
		if err := m.giveUp(ctx, step.Release); err != nil {
			return err
		}
	}
	next := withEntry(holders, m.cfg.Identity, step.Hold, live)
	if formatHolders(next) != formatHolders(holders) {
		if err := m.write(ctx, table, next); apierrors.IsConflict(err) {
			m.cfg.Log.V(1).Info("shard table moved meanwhile: next round", "error", err.Error())
			return nil
		} else if err != nil {
			return err
		}
	}
	// What the table now says this replica holds, less anything a live
	// replica's entry lists too (no version of the table does: defensive).
	held := step.Hold &^ others
	// Told to Forget when given up, even if no holder was ready for it.
	m.acted |= held
	taken := held &^ m.gate.Held()
	if taken != 0 {
		ready := taken
		for _, h := range m.holders {
			if ready == 0 {
				break
			}
			ready &= h.Taking(ctx, ready)
		}
		if waiting := taken &^ ready; waiting != 0 {
			m.cfg.Log.V(1).Info("shard slots held, not yet admitted: a holder is not ready", "slots", waiting.String())
			held &^= waiting
			taken = ready
		}
	}
	m.gate.hold(held)
	if taken != 0 {
		m.cfg.Log.Info("shard slots taken", "slots", taken.String(), "count", taken.Len(), "holds", held.Len())
		for _, h := range m.holders {
			h.Taken(ctx, taken)
		}
	}
	if step.Release != 0 {
		m.cfg.Log.Info("shard slots given up", "slots", step.Release.String(), "count", step.Release.Len(), "holds", held.Len())
	}
	return nil
}

// Leave gives every slot up and deletes this replica's Lease.
func (m *Membership) Leave(ctx context.Context) error {
	if err := m.giveUp(ctx, All); err != nil {
		return err
	}
	// The entry is removed by a conditioned write: another replica may move
	// slots meanwhile, so read again on a conflict. Should it still fail,
	// the Lease's deletion below lets the others take the slots anyway.
	var err error
	for range 3 {
		if err = m.removeEntry(ctx); !apierrors.IsConflict(err) {
			break
		}
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: m.cfg.Namespace, Name: MemberPrefix + m.cfg.Identity}}
	return errors.Join(err, client.IgnoreNotFound(m.cfg.Client.Delete(ctx, lease)))
}

// removeEntry writes the table without this replica's entry.
func (m *Membership) removeEntry(ctx context.Context) error {
	table, err := m.table(ctx)
	if err != nil {
		return err
	}
	holders, err := parseHolders(table.Annotations[HoldersAnnotation])
	if err != nil {
		return err
	}
	if _, ok := holders[m.cfg.Identity]; !ok {
		return nil
	}
	delete(holders, m.cfg.Identity)
	return m.write(ctx, table, holders)
}

// giveUp stops the slots' syncs, waits for those in flight and forgets
// their objects' memory; the caller then writes the table without them.
func (m *Membership) giveUp(ctx context.Context, slots Slots) error {
	if err := m.gate.drain(ctx, slots); err != nil {
		return err
	}
	if forget := m.acted & slots; forget != 0 {
		for _, h := range m.holders {
			h.Forget(forget)
		}
		m.acted &^= forget
	}
	return nil
}

// fence stops every sync: the Lease was not renewed within the renew
// deadline, so the others may soon judge this replica gone. Its entry is
// stale until written empty.
func (m *Membership) fence() {
	if m.gate.Held() != 0 {
		m.cfg.Log.Info("shard lease not renewed within the renew deadline: every slot refused until the table is written again")
	}
	m.gate.hold(0)
	m.stale = true
}

// clear writes this replica's entry empty (after giving up what it may
// have acted on), ending stale.
func (m *Membership) clear(ctx context.Context, table *coordinationv1.Lease, holders map[string]Slots) error {
	if err := m.giveUp(ctx, All); err != nil {
		return err
	}
	if _, ok := holders[m.cfg.Identity]; ok {
		next := maps.Clone(holders)
		delete(next, m.cfg.Identity)
		if err := m.write(ctx, table, next); err != nil {
			return err
		}
	}
	m.stale = false
	return nil
}

// renew updates (or creates) this replica's Lease; a success is the gate's
// freshness. A renewal more than the renew deadline after the previous
// one makes the entry stale: the others may have taken its slots.
func (m *Membership) renew(ctx context.Context) error {
	now := m.cfg.Clock.Now()
	name := MemberPrefix + m.cfg.Identity
	var lease coordinationv1.Lease
	err := m.cfg.Client.Get(ctx, client.ObjectKey{Namespace: m.cfg.Namespace, Name: name}, &lease)
	switch {
	case apierrors.IsNotFound(err):
		lease = coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: m.cfg.Namespace, Name: name, Labels: map[string]string{MemberLabel: "true"}},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr.To(m.cfg.Identity),
				LeaseDurationSeconds: ptr.To(int32(m.cfg.LeaseDuration / time.Second)),
				AcquireTime:          &metav1.MicroTime{Time: now},
				RenewTime:            &metav1.MicroTime{Time: now},
			},
		}
		err = m.cfg.Client.Create(ctx, &lease)
	case err == nil:
		lease.Spec.RenewTime = &metav1.MicroTime{Time: now}
		err = m.cfg.Client.Update(ctx, &lease)
	}
	if err != nil {
		return fmt.Errorf("renew lease %s/%s: %w", m.cfg.Namespace, name, err)
	}
	if !m.gate.fresh() {
		m.fence() // a first renewal, or one after a gap: held nothing meanwhile
	}
	m.gate.renewedAt(now)
	return nil
}

// observe lists the members' Leases and returns the others that are live:
// their Lease changed (a new resourceVersion) within a lease duration of
// this replica's clock. A Lease seen for the first time counts as changed
// now, as leader election counts a leader it has just met.
func (m *Membership) observe(ctx context.Context) ([]string, error) {
	var leases coordinationv1.LeaseList
	if err := m.cfg.Client.List(ctx, &leases, client.InNamespace(m.cfg.Namespace), client.MatchingLabels{MemberLabel: "true"}); err != nil {
		return nil, fmt.Errorf("list shard leases: %w", err)
	}
	now := m.cfg.Clock.Now()
	present := map[string]bool{}
	var live []string
	for _, l := range leases.Items {
		name := strings.TrimPrefix(l.Name, MemberPrefix)
		if name == m.cfg.Identity || name == l.Name {
			continue
		}
		present[name] = true
		o, ok := m.seen[name]
		if !ok || o.resourceVersion != l.ResourceVersion {
			o = observation{resourceVersion: l.ResourceVersion, at: now}
			m.seen[name] = o
		}
		if now.Sub(o.at) < m.cfg.LeaseDuration {
			live = append(live, name)
		}
	}
	for name := range m.seen {
		if !present[name] {
			delete(m.seen, name) // left (its Lease deleted): gone at once
		}
	}
	sort.Strings(live)
	return live, nil
}

// collect deletes the Leases of replicas gone for two lease durations that
// the table no longer lists (their slots taken): a killed replica's pod
// name never comes back, and its Lease would stay in the namespace
// forever. The deletion is conditioned on the resourceVersion last seen,
// so a replica that renews meanwhile keeps its Lease.
func (m *Membership) collect(ctx context.Context, holders map[string]Slots) {
	now := m.cfg.Clock.Now()
	for name, o := range m.seen {
		if now.Sub(o.at) < 2*m.cfg.LeaseDuration || holders[name] != 0 {
			continue
		}
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: m.cfg.Namespace, Name: MemberPrefix + name}}
		err := m.cfg.Client.Delete(ctx, lease, client.Preconditions{ResourceVersion: &o.resourceVersion})
		if err == nil || apierrors.IsNotFound(err) {
			delete(m.seen, name)
			m.cfg.Log.Info("shard lease of a replica gone deleted", "replica", name)
		}
	}
}

// table reads the holders' table, creating it empty if there is none.
func (m *Membership) table(ctx context.Context) (*coordinationv1.Lease, error) {
	var t coordinationv1.Lease
	err := m.cfg.Client.Get(ctx, client.ObjectKey{Namespace: m.cfg.Namespace, Name: TableName}, &t)
	if apierrors.IsNotFound(err) {
		t = coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: m.cfg.Namespace, Name: TableName,
			Annotations: map[string]string{HoldersAnnotation: ""}}}
		if err = m.cfg.Client.Create(ctx, &t); apierrors.IsAlreadyExists(err) {
			err = m.cfg.Client.Get(ctx, client.ObjectKey{Namespace: m.cfg.Namespace, Name: TableName}, &t)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("shard table %s/%s: %w", m.cfg.Namespace, TableName, err)
	}
	return &t, nil
}

// write replaces the table's holders, conditioned on the resourceVersion
// read (a conflict: another replica moved slots first; the next round
// reads again).
func (m *Membership) write(ctx context.Context, table *coordinationv1.Lease, holders map[string]Slots) error {
	t := table.DeepCopy()
	if t.Annotations == nil {
		t.Annotations = map[string]string{}
	}
	t.Annotations[HoldersAnnotation] = formatHolders(holders)
	if err := m.cfg.Client.Update(ctx, t); err != nil {
		return fmt.Errorf("write shard table: %w", err)
	}
	*table = *t
	return nil
}

// withEntry is holders with self's entry set to hold and the slots it holds
// taken out of the entries of replicas not live (theirs expired); entries
// left empty are dropped.
func withEntry(holders map[string]Slots, self string, hold Slots, live []string) map[string]Slots {
	next := make(map[string]Slots, len(holders)+1)
	for name, s := range holders {
		if name != self && !slices.Contains(live, name) {
			s &^= hold
		}
		if s != 0 {
			next[name] = s
		}
	}
	if hold != 0 {
		next[self] = hold
	} else {
		delete(next, self)
	}
	return next
}

// parseHolders reads the table's annotation.
func parseHolders(v string) (map[string]Slots, error) {
	out := map[string]Slots{}
	if v == "" {
		return out, nil
	}
	for _, entry := range strings.Split(v, ",") {
		name, slots, ok := strings.Cut(entry, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("%s: entry %q is not <identity>=<slots>", HoldersAnnotation, entry)
		}
		s, err := Parse(slots)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", HoldersAnnotation, name, err)
		}
		out[name] = s
	}
	return out, nil
}

// formatHolders writes the table's annotation, sorted by identity.
func formatHolders(h map[string]Slots) string {
	names := make([]string, 0, len(h))
	for n, s := range h {
		if s != 0 {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + "=" + h[n].String()
	}
	return strings.Join(parts, ",")
}
