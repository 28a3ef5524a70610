package rollout

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// fuzzPodBytes is how many fuzz bytes describe one pod.
const fuzzPodBytes = 4

// fuzzPhases and fuzzCosts are what a pod's bytes select from.
var (
	fuzzPhases = []corev1.PodPhase{corev1.PodPending, corev1.PodRunning, corev1.PodUnknown,
		corev1.PodSucceeded, corev1.PodFailed, "", corev1.PodRunning, corev1.PodRunning}
	fuzzRevisions = []string{revNew, revOld, revOld2, ""}
	fuzzCosts     = []string{"", "0", "5", "-5", "+3", "007", "x", "2147483648"}
)

// fuzzPods decodes up to 64 pods, fuzzPodBytes each:
//
//	b0: revision (bits 0-1), phase (2-4), terminating (5), ready (6), unknown ready time (7)
//	b1: node (bits 0-2, 0 = unscheduled), restarts (3-7)
//	b2: seconds since ready
//	b3: deletion cost (bits 0-2), minutes since creation (3-7)
func fuzzPods(data []byte) []*corev1.Pod {
	var out []*corev1.Pod
	for i := 0; i+fuzzPodBytes <= len(data) && len(out) < 64; i += fuzzPodBytes {
		b0, b1, b2, b3 := data[i], data[i+1], data[i+2], data[i+3]
		opts := []podOpt{
			phase(fuzzPhases[b0>>2&7]),
			readyFor(time.Duration(b2) * time.Second),
			createdAgo(time.Duration(b3>>3) * time.Minute),
			restarts(int32(b1 >> 3)),
		}
		if b0&(1<<5) != 0 {
			opts = append(opts, terminating)
		}
		if b0&(1<<6) == 0 {
			opts = append(opts, notReady)
		}
		if b0&(1<<7) != 0 {
			opts = append(opts, func(p *corev1.Pod) { p.Status.Conditions[0].LastTransitionTime.Time = time.Time{} })
		}
		if node := b1 & 7; node == 0 {
			opts = append(opts, unscheduled)
		} else {
			opts = append(opts, onNode(fmt.Sprintf("n%d", node%4)))
		}
		if c := fuzzCosts[b3&7]; c != "" {
			opts = append(opts, cost(c))
		}
		out = append(out, mkPod(fmt.Sprintf("p%02d", len(out)), fuzzRevisions[b0&3], opts...))
	}
	return out
}

// FuzzCompute plans for random pod sets and settings (flags: bit 0
// Recreate, 1 paused, 2 old revisions creatable, 3-4 what the pods were
// sized for, 5-6 MaxBurst; optIn: bits 0-4 the partition, 5-6 the current
// revision (none, old, older, the update revision), 7 RespectPDB; labels:
// bit i labels pod i specified-delete, bits 32+2i..33+2i give pod i the
// in-place gate, True, updating or failed; flags bit 7: the old revisions
// can move in place; surge bits 6-7: the nodes being drained; replicas
// bit 7: aborted, bit 6: TerminationComplete) and checks
// every documented promise
// (checkPlan), determinism under pod reordering, that the input is not
// modified, and that nothing panics.
func FuzzCompute(f *testing.F) {
	f.Add(uint8(3), uint8(1), uint8(0), uint8(0), uint8(0), []byte{0x41, 1, 0, 0, 0x41, 2, 0, 0, 0x40, 3, 0, 0}, uint8(0), uint64(0))
	f.Add(uint8(10), uint8(3), uint8(2), uint8(5), uint8(0), []byte{0x45, 1, 2, 8, 0x44, 1, 9, 16, 0x01, 0, 0, 0, 0x20, 2, 0, 0, 0x10, 3, 0, 0}, uint8(0), uint64(0))
	f.Add(uint8(2), uint8(0), uint8(0), uint8(0), uint8(1), []byte{0x45, 1, 0, 0, 0x25, 2, 0, 0, 0x40, 3, 0, 0}, uint8(0), uint64(0))
	f.Add(uint8(1), uint8(1), uint8(1), uint8(10), uint8(2), []byte{0x46, 9, 200, 3, 0x44, 10, 1, 4, 0xC0, 11, 0, 5}, uint8(0), uint64(0))
	f.Add(uint8(0), uint8(0), uint8(5), uint8(0), uint8(3), []byte{0x41, 1, 0, 0, 0x10, 0, 0, 0}, uint8(0), uint64(0))
	f.Add(uint8(4), uint8(1), uint8(0), uint8(0), uint8(0), []byte{}, uint8(0), uint64(0))
	// a scaling event mid-rollout, old revisions creatable, MaxBurst 1
	f.Add(uint8(12), uint8(0x1a), uint8(2), uint8(0x30), uint8(0x34), []byte{0x41, 1, 0, 0, 0x41, 2, 0, 0, 0x00, 3, 0, 0, 0x02, 4, 0, 0}, uint8(0), uint64(0))
	// paused, proportional, nothing recorded
	f.Add(uint8(3), uint8(2), uint8(1), uint8(0), uint8(0x06), []byte{0x41, 1, 0, 0, 0x41, 2, 0, 0, 0x40, 3, 0, 0, 0x42, 4, 0, 0, 0x01, 5, 0, 0}, uint8(0), uint64(0))

	// partitioned mid-rollout, a labelled held pod, RespectPDB
	f.Add(uint8(10), uint8(3), uint8(2), uint8(0), uint8(0x04), []byte{0x41, 1, 0, 0, 0x41, 2, 0, 0, 0x41, 3, 0, 0, 0x40, 4, 0, 0, 0x42, 5, 0, 0},
		uint8(0x80|0x20|4), uint64(0b00100))
	// a partition raised above the updated pods, the current revision not creatable
	f.Add(uint8(5), uint8(1), uint8(1), uint8(0), uint8(0x00), []byte{0x40, 1, 0, 0, 0x40, 2, 0, 0, 0x40, 3, 0, 0, 0x41, 4, 0, 0},
		uint8(0x20|3), uint64(0))
	// in place: gated old pods, one updating, one failed, maxUnavailable 0 or 2
	f.Add(uint8(6), uint8(1), uint8(0), uint8(0), uint8(0x80), []byte{0x41, 1, 0, 0, 0x41, 2, 0, 0, 0x41, 3, 0, 0, 0x40, 4, 0, 0, 0x40, 5, 0, 0},
		uint8(0), uint64(0b1101010101)<<32)
	f.Add(uint8(8), uint8(2), uint8(2), uint8(3), uint8(0x84), []byte{0x41, 1, 0, 0, 0x41, 2, 0, 0, 0x42, 3, 0, 0, 0x40, 4, 0, 0, 0x40, 5, 0, 0},
		uint8(0x20|3), uint64(0b0111010101)<<32)
	// drain: pods on n1 (and n2) draining, maxSurge 0, in sync and mid-rollout
	f.Add(uint8(3), uint8(0x40), uint8(1), uint8(0), uint8(0), []byte{0x40, 1, 0, 0, 0x40, 2, 0, 0, 0x40, 3, 0, 0}, uint8(0), uint64(0))
	f.Add(uint8(4), uint8(0x81), uint8(1), uint8(0), uint8(0), []byte{0x40, 1, 0, 0, 0x41, 2, 0, 0, 0x40, 3, 0, 0, 0x01, 1, 0, 0, 0x40, 0, 0, 0},
		uint8(0x80), uint64(0))
	// in sync, one pod labelled, Recreate and RollingUpdate alike
	f.Add(uint8(3), uint8(1), uint8(0), uint8(0), uint8(0x01), []byte{0x40, 1, 0, 0, 0x40, 2, 0, 0, 0x40, 3, 0, 0},
		uint8(0x80), uint64(0b010))

	// aborted mid-rollout: old pods of two revisions, gated, the current one creatable
	f.Add(uint8(0x80|6), uint8(1), uint8(1), uint8(0), uint8(0x84), []byte{0x41, 1, 0, 0, 0x41, 2, 0, 0, 0x40, 3, 0, 0, 0x40, 4, 0, 0, 0x02, 5, 0, 0},
		uint8(0x20), uint64(0b0110010101)<<32)
	// TerminationComplete mid-rollout: an old pod terminating, a finished one
	f.Add(uint8(0x40|3), uint8(1), uint8(0), uint8(0), uint8(0), []byte{0x41, 1, 0, 0, 0x61, 2, 0, 0, 0x40, 3, 0, 0, 0x50, 4, 0, 0}, uint8(0), uint64(0))

	f.Fuzz(func(t *testing.T, replicas, surge, unavailable, minReady, flags uint8, podData []byte, optIn uint8, labels uint64) {
		fuzzCompute(t, replicas, surge, unavailable, minReady, flags, podData, optIn, labels)
	})
}

// fuzzCompute is FuzzCompute's body: one input, decoded and checked.
func fuzzCompute(t testing.TB, replicas, surge, unavailable, minReady, flags uint8, podData []byte, optIn uint8, labels uint64) {
	in := fuzzInput(replicas, surge, unavailable, minReady, flags, podData, optIn, labels)
	checkFuzzed(t, in)
}

// fuzzInput decodes FuzzCompute's arguments (see there).
func fuzzInput(replicas, surge, unavailable, minReady, flags uint8, podData []byte, optIn uint8, labels uint64) Input {
	in := Input{
		Replicas:        int32(replicas%32) - 2, // a few negative values too
		MaxSurge:        int32(surge % 8),
		MaxUnavailable:  int32(unavailable % 8),
		MinReadySeconds: int32(minReady % 16),
		Paused:          flags&2 != 0,
		UpdateRevision:  revNew,
		Pods:            fuzzPods(podData),
		Now:             t0,
	}
	if flags&1 != 0 {
		in.Strategy = Recreate
	}
	in.Aborted = replicas&0x80 != 0
	in.TerminationComplete = replicas&0x40 != 0
	if flags&4 != 0 {
		in.Revisions = []string{revOld2, revOld}
	}
	switch flags >> 3 & 3 { // what the pods were last sized for
	case 1:
		in.SizedFor = &Size{Replicas: in.Replicas, MaxReplicas: in.Replicas + in.MaxSurge}
	case 2:
		in.SizedFor = &Size{Replicas: int32(minReady >> 4), MaxReplicas: int32(surge >> 3)}
	case 3:
		in.SizedFor = &Size{Replicas: in.Replicas + 1, MaxReplicas: int32(unavailable>>3) + 1}
	}
	in.MaxBurst = int32(flags >> 5 & 3) // 0 is the default
	in.Partition = int32(optIn & 31)
	in.CurrentRevision = []string{"", revOld, revOld2, revNew}[optIn>>5&3]
	in.RespectPDB = optIn&0x80 != 0
	if optIn&0x18 == 0x18 { // canary steps instead of a partition
		in.Partition, in.Canary = 0, fuzzCanary(int(optIn&7), minReady>>4)
	}
	if flags&0x80 != 0 {
		in.InPlace = []string{revOld, revOld2}
	}
	switch surge >> 6 { // the nodes being drained
	case 1:
		in.DrainingNodes = map[string]bool{"n1": true}
	case 2:
		in.DrainingNodes = map[string]bool{"n1": true, "n2": true}
	case 3:
		in.DrainingNodes = map[string]bool{"n3": true, "n0": false}
	}
	for i, pod := range in.Pods {
		if labels&(1<<i) != 0 {
			labelled(pod)
		}
		if i < 16 {
			switch labels >> (32 + 2*i) & 3 {
			case 1:
				gated(pod)
			case 2:
				gated(pod)
				gateCondition(pod).Status, gateCondition(pod).Reason = corev1.ConditionFalse, "InPlaceUpdate"
			case 3:
				gated(pod)
				inPlaceFailed(pod)
			}
		}
	}
	return in
}

// checkFuzzed plans for in and checks the plan's promises, that in is not
// modified and that the plan does not depend on the pods' order.
func checkFuzzed(t testing.TB, in Input) {
	before := make([]*corev1.Pod, len(in.Pods))
	for i, p := range in.Pods {
		before[i] = p.DeepCopy()
	}

	p := Compute(in)
	checkPlan(t, in, p)

	for i, pod := range in.Pods {
		if !equalPods(pod, before[i]) {
			t.Fatalf("Compute modified input pod %q", pod.Name)
		}
	}
	shuffled := slices.Clone(in.Pods)
	slices.Reverse(shuffled)
	if len(shuffled) > 2 {
		shuffled[0], shuffled[len(shuffled)/2] = shuffled[len(shuffled)/2], shuffled[0]
	}
	in.Pods = shuffled
	if again := Compute(in); describe(again) != describe(p) {
		t.Fatalf("plan depends on pod order:\n%s\n%s", describe(p), describe(again))
	}
}

// fuzzCanary is the canary steps, recorded at step index (of the
// update revision or, by bit 0 of b, another), a timed pause begun 20s
// before t0 (bit 1), and a promote of that step, the next or all (bits 2-3).
func fuzzCanary(index int, b uint8) *Canary {
	steps, err := parseSteps(canarySteps)
	if err != nil {
		panic(err)
	}
	c := &Canary{Steps: steps, State: CanaryState{Revision: revNew, Index: index}}
	if b&1 != 0 {
		c.State.Revision = revOld
	}
	if b&2 != 0 {
		c.State.PausedAt = t0.Add(-20 * time.Second)
	}
	switch b >> 2 & 3 {
	case 1:
		c.Promote = CanaryPromote{Revision: revNew, Index: index}
	case 2:
		c.Promote = CanaryPromote{Revision: revNew, Index: index + 1}
	case 3:
		c.Promote = CanaryPromote{Revision: revNew, Full: true}
	}
	return c
}
