package shard

import (
	"slices"
	"strconv"
)

// Owner is the replica among members that should hold slot: rendezvous
// (highest random weight) hashing, the member with the highest hash of
// "<member>/<slot>" (mixed), ties to the smaller name. A pure function of the
// member set: every replica that sees the same live Leases computes the
// same owners, and a member that comes or goes moves only the slots it
// gains or had. "" without members.
func Owner(slot int, members []string) string {
	var (
		best  string
		score uint64
	)
	for _, m := range members {
		h := mix(hash(m + "/" + strconv.Itoa(slot)))
		if best == "" || h > score || h == score && m < best {
			best, score = m, h
		}
	}
	return best
}

// mix spreads h's bits over all 64 (MurmurHash3's fmix64): FNV-1a of
// names that differ in their last characters differs mostly in its low
// bits, and rendezvous compares whole hashes.
func mix(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// Wanted are the slots member should hold among members (Owner); member
// counts as one of them whether listed or not.
func Wanted(member string, members []string) Slots {
	all := members
	if !slices.Contains(members, member) {
		all = append(slices.Clone(members), member)
	}
	var s Slots
	for i := range Count {
		if Owner(i, all) == member {
			s |= 1 << uint(i)
		}
	}
	return s
}

// Member is a live replica as its Lease says: its name and the slots it
// lists as held (acts on).
type Member struct {
	Name string
	Held Slots
}

// Step is what one replica does with its slots now (Next).
type Step struct {
	// Hold is what its Lease is to list once Release is given up: the
	// slots it keeps and those it takes.
	Hold Slots
	// Take are slots it should hold that no live Lease lists: it acts on
	// them once its Lease lists them.
	Take Slots
	// Release are slots it holds and should not: it stops their syncs,
	// waits for those in flight, forgets their objects' memory, and only
	// then writes its Lease without them (Hold).
	Release Slots
}

// Next is the step of replica self given the live replicas' Leases (self's
// among them or not: a replica without a Lease yet holds nothing). Never
// two writers: self takes a slot only when no other live Lease lists it,
// so a slot moves only once its holder released it (or its Lease expired
// and it is no longer live); self keeps of what it holds only what it
// should.
func Next(self string, live []Member) Step {
	names := make([]string, 0, len(live)+1)
	var mine, others Slots
	for _, m := range live {
		names = append(names, m.Name)
		if m.Name == self {
			mine = m.Held
		} else {
			others |= m.Held
		}
	}
	wanted := Wanted(self, names)
	take := wanted &^ others &^ mine
	release := mine &^ wanted
	return Step{Hold: (mine &^ release) | take, Take: take, Release: release}
}
