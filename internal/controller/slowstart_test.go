package controller

import (
	"errors"
	"sync/atomic"
	"testing"
)

// slowStart is a pure helper: a plain unit test, next to the envtest suite.
func TestSlowStart(t *testing.T) {
	refused := errors.New("refused")
	tests := []struct {
		name       string
		count      int
		failFrom   int64 // calls from this one on fail (0: none fail)
		wantOK     int
		wantCalls  int64
		wantFailed bool
	}{
		{name: "all succeed in batches 1,2,4,3", count: 10, wantOK: 10, wantCalls: 10},
		{name: "first call fails: one request, not ten", count: 10, failFrom: 1, wantOK: 0, wantCalls: 1, wantFailed: true},
		{name: "fails in the third batch: it finishes, no fourth", count: 10, failFrom: 5, wantOK: 4, wantCalls: 7, wantFailed: true},
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
			if ok != tt.wantOK || calls.Load() != tt.wantCalls || (err != nil) != tt.wantFailed {
				t.Fatalf("slowStart = %d, %v after %d calls; want %d ok, failed=%v, %d calls",
					ok, err, calls.Load(), tt.wantOK, tt.wantFailed, tt.wantCalls)
			}
			if tt.wantFailed && !errors.Is(err, refused) {
				t.Fatalf("error %v does not wrap the call's error", err)
			}
		})
	}
}
