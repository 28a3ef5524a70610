package main

import (
	"fmt"
	"time"
)

// progress is where a run is: scenarios done of all its rounds, and the
// time it took, for the line each scenario ends with ("3/15 done,
// elapsed 4m10s, about 16m40s left"). The time left assumes each scenario
// to come takes what the done ones took on average (cleanups and manager
// starts included).
type progress struct {
	start       time.Time
	done, total int
}

// newProgress counts the scenarios of rounds rounds of parties, each
// running steps(party).
func newProgress(start time.Time, rounds int, parties []string, steps func(string) int) *progress {
	p := &progress{start: start}
	for _, party := range parties {
		p.total += rounds * steps(party)
	}
	return p
}

// step records one more scenario done at now and says where the run is.
func (p *progress) step(now time.Time) string {
	p.done++
	elapsed := now.Sub(p.start)
	left := time.Duration(0)
	if p.done < p.total {
		left = elapsed / time.Duration(p.done) * time.Duration(p.total-p.done)
	}
	return fmt.Sprintf("%d/%d done, elapsed %s, about %s left", p.done, p.total,
		elapsed.Round(time.Second), left.Round(time.Second))
}
