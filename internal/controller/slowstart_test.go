package controller

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// slowStart is a pure helper: a plain unit test, next to the envtest suite.
func TestSlowStart(t *testing.T) {
	refused := errors.New("refused")
	tests := []struct {
		name     string
		count    int
		failFrom int64 // calls from this one on fail (0: none fail)
		// a call that fails makes the others fail too: quota.
		wantOK, wantCalls int
		wantFailed        bool
	}{
		{name: "all succeed", count: 10, wantOK: 10, wantCalls: 10},
		{name: "first call fails: one request, not ten", count: 10, failFrom: 1, wantOK: 0, wantCalls: 1, wantFailed: true},
		{name: "second call fails: the two the first success allowed, no more", count: 10, failFrom: 2, wantOK: 1, wantCalls: 3, wantFailed: true},
		{name: "nothing to do", count: 0, wantOK: 0, wantCalls: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int64
			ok, err := slowStart(tt.count, func() error {
				if n := calls.Add(1); tt.failFrom > 0 && n >= tt.failFrom {
					return refused
				}
				return nil
			})
			if ok != tt.wantOK || int(calls.Load()) != tt.wantCalls || (err != nil) != tt.wantFailed {
				t.Fatalf("slowStart = %d, %v after %d calls; want %d ok, failed=%v, %d calls",
					ok, err, calls.Load(), tt.wantOK, tt.wantFailed, tt.wantCalls)
			}
			if tt.wantFailed && !errors.Is(err, refused) {
				t.Fatalf("error %v does not wrap the call's error", err)
			}
		})
	}
}

// TestSlowStartBounds checks, under concurrency, the promises a refused
// scale-up relies on: never more calls in flight than one plus the
// successes so far, and none started once a failure is recorded, so at most
// successes+1 requests fail, however the calls interleave.
func TestSlowStartBounds(t *testing.T) {
	for _, failAfter := range []int64{0, 1, 3, 7, 20, 1000} {
		for range 20 {
			var mu sync.Mutex
			inFlight, succeeded, failed, worst := 0, 0, 0, 0
			var calls atomic.Int64
			ok, err := slowStart(100, func() error {
				mu.Lock()
				inFlight++
				if over := inFlight - (succeeded + 1); over > worst {
					worst = over
				}
				mu.Unlock()
				n := calls.Add(1)
				time.Sleep(time.Duration(n%3) * 100 * time.Microsecond)
				mu.Lock()
				defer mu.Unlock()
				inFlight--
				if failAfter > 0 && n > failAfter {
					failed++
					return errors.New("quota")
				}
				succeeded++
				return nil
			})
			if worst > 0 {
				t.Fatalf("failAfter=%d: %d calls in flight beyond successes+1", failAfter, worst)
			}
			if failed > succeeded+1 {
				t.Fatalf("failAfter=%d: %d failed requests for %d successes", failAfter, failed, succeeded)
			}
			if ok != succeeded || (err != nil) != (failed > 0) {
				t.Fatalf("failAfter=%d: returned %d, %v; %d succeeded, %d failed", failAfter, ok, err, succeeded, failed)
			}
			if failAfter == 0 && ok != 100 {
				t.Fatalf("all should succeed: %d", ok)
			}
		}
	}
}

// TestSlowStartNoBarrier: a slow call does not hold back the calls its
// successes allow. Call 2 returns only once call 4 has started; batches of
// 1, 2, 4 would wait for call 2 before starting call 4, and never finish.
func TestSlowStartNoBarrier(t *testing.T) {
	fourth := make(chan struct{})
	var calls atomic.Int64
	done := make(chan int, 1)
	go func() {
		ok, _ := slowStart(4, func() error {
			switch calls.Add(1) {
			case 2:
				<-fourth
			case 4:
				close(fourth)
			}
			return nil
		})
		done <- ok
	}()
	select {
	case ok := <-done:
		if ok != 4 {
			t.Fatalf("%d succeeded, want 4", ok)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the fourth call waited for the slow second one")
	}
}
