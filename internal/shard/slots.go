// Package shard is active-active shards (issue 56, docs/architecture.md
// "Active-active shards"). Its pure core, with no clock and no client
// (slots.go, ring.go): which slot of the hash space a namespace falls in,
// which live replica should hold a slot, and what one replica may take,
// keep and must give up given the slots every live replica holds. Built on
// it: Membership (member.go: each replica's Lease, the one table of who
// holds which slots, written only by conditioned updates, and the
// self-fence) and the Gate (gate.go) the reconcilers ask before a sync.
//
// The hash is the API server's own for a shard selector
// (k8s.io/apimachinery/pkg/sharding: the 64-bit FNV-1a of the field's
// value), so a slot's range, given as a ListOptions.ShardSelector, selects
// on the server exactly the namespaces SlotOf puts in it here.
package shard

import (
	"fmt"
	"hash/fnv"
	"math/bits"
	"strconv"

	"k8s.io/apimachinery/pkg/sharding"
)

// Count is the number of slots: the hash space cut into equal widths, a
// slot the unit that moves between replicas. 64, so a set of slots is one
// uint64 (Slots).
const Count = 64

// slotBits is log2(Count): a hash's top slotBits bits name its slot.
const slotBits = 6

// NamespaceKey is the field a shard selector hashes: everything of one
// namespace (a MyDeployment, its pods and revisions, an Application and its
// children) is in one slot.
const NamespaceKey = "object.metadata.namespace"

// hash is the API server's hash of a shard selector's field value.
func hash(value string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(value)) // a hash's Write never fails
	return h.Sum64()
}

// SlotOf is the slot namespace falls in.
func SlotOf(namespace string) int {
	return int(hash(namespace) >> (64 - slotBits))
}

// Slots is a set of slots, slot i the bit 1<<i.
type Slots uint64

// All is every slot.
const All = ^Slots(0)

// Of is the set of the slots given.
func Of(slots ...int) Slots {
	var s Slots
	for _, i := range slots {
		s |= 1 << uint(i)
	}
	return s
}

// Has says slot i is in s.
func (s Slots) Has(i int) bool { return i >= 0 && i < Count && s&(1<<uint(i)) != 0 }

// HasNamespace says namespace's slot is in s: the filter on our side when
// the API server does not filter.
func (s Slots) HasNamespace(namespace string) bool { return s.Has(SlotOf(namespace)) }

// Len is how many slots s has.
func (s Slots) Len() int { return bits.OnesCount64(uint64(s)) }

// List are s's slots, in order.
func (s Slots) List() []int {
	out := make([]int, 0, s.Len())
	for i := range Count {
		if s.Has(i) {
			out = append(out, i)
		}
	}
	return out
}

// String is s as a Lease annotation holds it: the slots' bits in hex
// ("0x0000000000000000" for none).
func (s Slots) String() string { return fmt.Sprintf("0x%016x", uint64(s)) }

// Parse reads a Slots String wrote.
func Parse(v string) (Slots, error) {
	if len(v) != 18 || v[:2] != "0x" {
		return 0, fmt.Errorf("slots %q: must be 0x and 16 hex digits", v)
	}
	n, err := strconv.ParseUint(v[2:], 16, 64)
	if err != nil {
		return 0, fmt.Errorf("slots %q: %w", v, err)
	}
	return Slots(n), nil
}

// bound is the hash at which slot i begins, as a shard selector writes a
// bound: 0x and 16 hex digits, or 2^64 (17) for the end of the last slot.
func bound(i int) string {
	if i >= Count {
		return "0x10000000000000000"
	}
	return fmt.Sprintf("0x%016x", uint64(i)<<(64-slotBits))
}

// Selector is the shard selector of s's namespaces: one range per run of
// consecutive slots, Everything for all slots. (None selects nothing, and
// has no selector: the caller lists nothing.)
func (s Slots) Selector() sharding.Selector {
	if s == All {
		return sharding.Everything()
	}
	var reqs []sharding.ShardRangeRequirement
	for i := 0; i < Count; {
		if !s.Has(i) {
			i++
			continue
		}
		j := i
		for j < Count && s.Has(j) {
			j++
		}
		reqs = append(reqs, sharding.ShardRangeRequirement{Key: NamespaceKey, Start: bound(i), End: bound(j)})
		i = j
	}
	return sharding.NewSelector(reqs...)
}
