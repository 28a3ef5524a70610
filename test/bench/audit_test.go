package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestCountRequestsCoveredQuietWindow: a window with no request counts 0
// and is covered once the log holds a later request; a window after the
// log's last request is not (its batch may not be written yet).
func TestCountRequestsCoveredQuietWindow(t *testing.T) {
	at := func(s int) time.Time { return time.Date(2026, 11, 28, 12, 0, s, 0, time.UTC) }
	log := filepath.Join(t.TempDir(), "audit.log")
	line := func(s int, ua string) string {
		return `{"verb":"patch","userAgent":"` + ua + `","objectRef":{"resource":"pods"},"requestReceivedTimestamp":"` +
			at(s).Format(time.RFC3339Nano) + `"}` + "\n"
	}
	if err := os.WriteFile(log, []byte(line(1, "kwok/v0.8.0")+line(9, "manager/v0.3.0")), 0o644); err != nil {
		t.Fatal(err)
	}
	quiet := &window{Start: at(2), End: at(6)}
	busy := &window{Start: at(8), End: at(10)}
	after := &window{Start: at(11), End: at(15)}
	reqs, err := countRequests(log, []*window{quiet, busy, after})
	if err != nil {
		t.Fatal(err)
	}
	if n := reqs[0].total(allRequesters); n != 0 || !quiet.AuditCovered {
		t.Errorf("quiet window: %d requests, covered %v; want 0, true", n, quiet.AuditCovered)
	}
	if n := reqs[1].writes(whoManager); n != 1 || busy.AuditCovered {
		t.Errorf("busy window: %d manager writes, covered %v; want 1, false", n, busy.AuditCovered)
	}
	if after.AuditCovered {
		t.Error("a window past the log's last request is covered")
	}
}
