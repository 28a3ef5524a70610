package main

import (
	"testing"
	"time"
)

func TestProgressSaysDoneElapsedAndLeft(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	steps := func(party string) int {
		if party == partyRaw {
			return 2
		}
		return 4
	}
	p := newProgress(t0, 3, []string{partyRaw, partyMyDeployment}, steps)
	if p.total != 18 {
		t.Fatalf("total %d, want 3 rounds x (2 + 4) = 18", p.total)
	}
	for i, want := range []string{
		"1/18 done, elapsed 1m0s, about 17m0s left",
		"2/18 done, elapsed 2m0s, about 16m0s left",
	} {
		if got := p.step(t0.Add(time.Duration(i+1) * time.Minute)); got != want {
			t.Errorf("step %d: %q, want %q", i+1, got, want)
		}
	}
	p.done = 17
	if got := p.step(t0.Add(36 * time.Minute)); got != "18/18 done, elapsed 36m0s, about 0s left" {
		t.Errorf("last: %q", got)
	}
}
