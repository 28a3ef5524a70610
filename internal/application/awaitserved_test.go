package application

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestAwaitServedRetriesAnError: a failed discovery lookup is asked again
// within a short backoff, not at the next poll (issue 57).
func TestAwaitServedRetriesAnError(t *testing.T) {
	const poll = 2 * time.Second
	asked, failures := 0, 0
	served := func() (bool, error) {
		if asked++; asked <= 2 {
			return false, errors.New("injected: discovery failed")
		}
		return true, nil
	}
	start := time.Now()
	if !awaitServed(context.Background(), poll, served, func(error) { failures++ }) {
		t.Fatal("awaitServed gave up")
	}
	// The first ask waits one poll; then two errors, each retried in at
	// most a few hundred ms. Waiting a poll after each would take 3 polls.
	if took := time.Since(start); took > poll+time.Second {
		t.Errorf("served after %s: an error waited for the next poll (%s)", took.Round(time.Millisecond), poll)
	}
	if asked != 3 || failures != 2 {
		t.Errorf("asked %d times, %d failures told; want 3 and 2", asked, failures)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if awaitServed(ctx, poll, served, func(error) {}) {
		t.Error("served after its context ended")
	}
}
