package chaos

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// phaseFigures are one phase's numbers.
type phaseFigures struct {
	name                    string
	mds                     int
	res                     workloadResult
	kills                   int
	writeFaults, readFaults int
	failovers               int
	takeovers               []time.Duration
	duration                time.Duration
}

// figureBook collects every phase's figures for the report.
type figureBook struct {
	mu         sync.Mutex
	phases     []phaseFigures
	notes      []string
	total      time.Duration
	events     int
	created    int
	violations []string
}

func (b *figureBook) add(p phaseFigures) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.phases = append(b.phases, p)
}

func (b *figureBook) note(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.notes = append(b.notes, fmt.Sprintf(format, args...))
}

func round(d time.Duration) string { return d.Round(100 * time.Millisecond).String() }

// markdown renders the figures as the table docs/reliability.md shows.
func (b *figureBook) markdown() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var s strings.Builder
	mode := "short (make test-chaos-short)"
	if *full {
		mode = "full (make chaos)"
	}
	fmt.Fprintf(&s, "Run: %s, %s, finished %s UTC.\n\n", mode, round(b.total), time.Now().UTC().Format("2006-01-02 15:04"))
	s.WriteString("| phase | MyDeployments | rollouts | scale changes | kills | write faults | read delays | failovers (takeover max) | slowest change | duration |\n")
	s.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	var rollouts, scales int64
	var kills, writes, reads, failovers int
	for _, p := range b.phases {
		take := "-"
		if p.failovers > 0 {
			var worst time.Duration
			for _, d := range p.takeovers {
				worst = max(worst, d)
			}
			take = fmt.Sprintf("%d (%s)", p.failovers, round(worst))
		}
		slowest := "-" // not measured (failover rounds run three rollouts at once)
		if p.res.slowest > 0 {
			slowest = round(p.res.slowest)
		}
		fmt.Fprintf(&s, "| %s | %d | %d | %d | %d | %d | %d | %s | %s | %s |\n", p.name, p.mds, p.res.rollouts, p.res.scales,
			p.kills, p.writeFaults, p.readFaults, take, slowest, round(p.duration))
		rollouts += p.res.rollouts
		scales += p.res.scales
		kills += p.kills
		writes += p.writeFaults
		reads += p.readFaults
		failovers += p.failovers
	}
	fmt.Fprintf(&s, "| **total** | | **%d** | **%d** | **%d** | **%d** | **%d** | **%d** | | **%s** |\n\n",
		rollouts, scales, kills, writes, reads, failovers, round(b.total))
	fmt.Fprintf(&s, "- rollouts and scale changes completed: %d (every one converged: pods and status)\n", rollouts+scales)
	fmt.Fprintf(&s, "- pod events recorded by the watcher: %d; pods created: %d\n", b.events, b.created)
	fmt.Fprintf(&s, "- invariant violations: **%d**\n", len(b.violations))
	for _, v := range b.violations[:min(len(b.violations), 10)] {
		fmt.Fprintf(&s, "  - %s\n", v)
	}
	for _, n := range b.notes {
		fmt.Fprintf(&s, "- %s\n", n)
	}
	return s.String()
}

const (
	beginMarker = "<!-- BEGIN chaos figures (written by make chaos) -->"
	endMarker   = "<!-- END chaos figures -->"
)

// writeReport replaces what lies between the markers of path with text.
func writeReport(path, text string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	doc := string(raw)
	i, j := strings.Index(doc, beginMarker), strings.Index(doc, endMarker)
	if i < 0 || j < i {
		return fmt.Errorf("%s has no chaos markers", path)
	}
	doc = doc[:i+len(beginMarker)] + "\n" + text + doc[j:]
	return os.WriteFile(path, []byte(doc), 0o644)
}
