package shard

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSlotsSelectAsTheAPIServerDoes: a slot set's selector, matched as
// the API server matches it (apimachinery's sharding.Selector), selects
// exactly the namespaces SlotOf puts in the set.
func TestSlotsSelectAsTheAPIServerDoes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		s := Slots(rng.Uint64())
		if rng.IntN(4) == 0 {
			s = Of(rng.IntN(Count)) // one slot: the bounds of a single range
		}
		sel := s.Selector()
		for i := range 50 {
			ns := fmt.Sprintf("team-%d-%d", rng.IntN(1000), i)
			got, err := sel.Matches(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns}})
			if err != nil {
				t.Fatal(err)
			}
			if got != s.HasNamespace(ns) {
				t.Fatalf("%s (slot %d) in %s: the selector %q says %v", ns, SlotOf(ns), s, sel, got)
			}
		}
	}
	if !All.Selector().Empty() {
		t.Error("every slot selects everything: no selector")
	}
	if got := Of(0, 1, 2, 63).Selector().String(); got !=
		"shardRange(object.metadata.namespace, '0x0000000000000000', '0x0c00000000000000') || "+
			"shardRange(object.metadata.namespace, '0xfc00000000000000', '0x10000000000000000')" {
		t.Errorf("consecutive slots in one range: %s", got)
	}
}

func TestSlotsRoundTrip(t *testing.T) {
	for _, s := range []Slots{0, All, Of(0), Of(63), Of(3, 17, 40)} {
		got, err := Parse(s.String())
		if err != nil || got != s {
			t.Errorf("Parse(%s) = %s, %v", s, got, err)
		}
	}
	for _, bad := range []string{"", "0x1", "12345678901234567x", "0xnothexnothexnoth"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) took it", bad)
		}
	}
}

func names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("manager-%d", i)
	}
	return out
}

// TestOwnersMoveOnlyWhatChanged: the owners of the slots are a function of
// the member set; a member that joins takes slots only for itself, one
// that leaves gives up only its own; every member of 3 holds some.
func TestOwnersMoveOnlyWhatChanged(t *testing.T) {
	for n := 1; n <= 6; n++ {
		members := names(n)
		joined := append(slices.Clone(members), "manager-new")
		var total int
		for _, m := range members {
			total += Wanted(m, members).Len()
		}
		if total != Count {
			t.Fatalf("%d members want %d slots, not %d", n, total, Count)
		}
		for i := range Count {
			before, after := Owner(i, members), Owner(i, joined)
			if after != before && after != "manager-new" {
				t.Errorf("slot %d moved from %s to %s when manager-new joined", i, before, after)
			}
			if left := Owner(i, members[1:]); before != members[0] && left != before {
				t.Errorf("slot %d moved from %s to %s when %s left", i, before, left, members[0])
			}
		}
	}
	for _, m := range names(3) {
		if w := Wanted(m, names(3)).Len(); w < 10 {
			t.Errorf("%s wants %d of %d slots among 3", m, w, Count)
		}
	}
}

// TestNextNeverTwoWriters runs replicas that come and go, each writing
// its Lease (Next's Hold) one at a time in a random order, a release only
// after a step that asked for it: no slot is ever listed by two live
// Leases, and once the members stop changing every slot is held by its
// owner.
func TestNextNeverTwoWriters(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for run := range 100 {
		live := map[string]Slots{}
		pool := names(6)
		check := func(when string) {
			t.Helper()
			var seen Slots
			for m, held := range live {
				if seen&held != 0 {
					t.Fatalf("run %d, %s: %s lists slots another live Lease lists (%s)", run, when, m, seen&held)
				}
				seen |= held
			}
		}
		step := func(m string) {
			members := make([]Member, 0, len(live))
			for name, held := range live {
				members = append(members, Member{Name: name, Held: held})
			}
			live[m] = Next(m, members).Hold
			check("after " + m + " wrote its Lease")
		}
		for range 60 {
			switch r := rng.IntN(10); {
			case r == 0 && len(live) > 1: // a replica dies: its Lease expires
				delete(live, pool[rng.IntN(len(pool))])
			case r == 1: // a replica starts, with no slots yet
				if m := pool[rng.IntN(len(pool))]; !hasKey(live, m) {
					live[m] = 0
				}
			default:
				if len(live) > 0 {
					keys := sortedKeys(live)
					step(keys[rng.IntN(len(keys))])
				}
			}
		}
		if len(live) == 0 {
			continue
		}
		for range 3 { // quiet: every replica writes its Lease in turn, twice (release, then take)
			for _, m := range sortedKeys(live) {
				step(m)
			}
		}
		members := sortedKeys(live)
		for i := range Count {
			if owner := Owner(i, members); !live[owner].Has(i) {
				t.Fatalf("run %d: quiet, slot %d is not held by its owner %s: %v", run, i, owner, live)
			}
		}
	}
}

func hasKey(m map[string]Slots, k string) bool { _, ok := m[k]; return ok }

func sortedKeys(m map[string]Slots) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
