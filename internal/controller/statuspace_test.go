package controller

import (
	"fmt"
	"testing"
	"time"
)

func TestStatusPacer(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	p := newStatusPacer(time.Second)
	if d := p.wait("ns/a", t0); d != 0 {
		t.Fatalf("first write waits %v", d)
	}
	p.wrote("ns/a", t0)
	if d := p.wait("ns/a", t0.Add(300*time.Millisecond)); d != 700*time.Millisecond {
		t.Fatalf("a write 300ms after the last waits %v, want 700ms", d)
	}
	if d := p.wait("ns/b", t0.Add(300*time.Millisecond)); d != 0 {
		t.Fatalf("another object waits %v", d)
	}
	if d := p.wait("ns/a", t0.Add(time.Second)); d != 0 {
		t.Fatalf("a write a period later waits %v", d)
	}
	p.forget("ns/a")
	if d := p.wait("ns/a", t0.Add(100*time.Millisecond)); d != 0 {
		t.Fatalf("a forgotten object waits %v", d)
	}
	// Old entries are pruned; recent ones are kept.
	for i := range 100 {
		p.wrote(fmt.Sprintf("ns/old-%d", i), t0)
	}
	p.wrote("ns/recent", t0.Add(5*time.Second))
	for i := range 100 {
		p.wrote(fmt.Sprintf("ns/new-%d", i), t0.Add(5*time.Second))
	}
	if _, ok := p.last["ns/old-1"]; ok || len(p.last) > 101 {
		t.Fatalf("stale entries kept: %d entries", len(p.last))
	}
	if d := p.wait("ns/recent", t0.Add(5500*time.Millisecond)); d != 500*time.Millisecond {
		t.Fatalf("a recent entry was pruned: waits %v", d)
	}
	var off *statusPacer
	if off.wait("x", t0) != 0 || newStatusPacer(0).wait("x", t0) != 0 {
		t.Fatal("no period must never wait")
	}
}
