package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// goRuntime is what our manager's Go runtime says of itself on /metrics
// (controller-runtime registers client_golang's Go collector with every
// runtime/metrics series). Bytes allocated and collections are counted by
// the runtime, not timed: a loaded machine barely moves them, so an A/B
// pair of manager builds can be told apart by them where CPU seconds
// cannot.
type goRuntime struct {
	// AllocBytes: bytes allocated on the heap since the process started.
	AllocBytes float64
	// GCCycles: garbage collections since the process started.
	GCCycles float64
	// LiveHeapBytes: the heap the last collection found live.
	LiveHeapBytes float64
}

// The series goRuntime reads.
const (
	metricAllocBytes = "go_gc_heap_allocs_bytes_total"
	metricGCCycles   = "go_gc_cycles_total_gc_cycles_total"
	metricLiveHeap   = "go_gc_heap_live_bytes"
)

// parseGoRuntime reads goRuntime's series from a Prometheus text exposition.
func parseGoRuntime(r io.Reader) (goRuntime, error) {
	var g goRuntime
	fields := map[string]*float64{metricAllocBytes: &g.AllocBytes, metricGCCycles: &g.GCCycles, metricLiveHeap: &g.LiveHeapBytes}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if dst := fields[name]; ok && dst != nil {
			v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
			if err != nil {
				return g, fmt.Errorf("%s: %w", name, err)
			}
			*dst = v
		}
	}
	return g, sc.Err()
}

// goRuntime samples the manager's runtime series (zero if it cannot).
func (m *managerProc) goRuntime() goRuntime {
	resp, err := http.Get("http://" + m.metrics + "/metrics")
	if err != nil {
		return goRuntime{}
	}
	defer func() { _ = resp.Body.Close() }()
	g, _ := parseGoRuntime(resp.Body)
	return g
}

// liveHeap forces a collection in the manager (pprof's heap endpoint with
// gc=1 runs one before it writes the profile) and returns the heap that
// collection found live: what the manager keeps, without the garbage
// between two collections that RSS also holds. The heap profile goes to
// profile, unless that is "".
func (m *managerProc) liveHeap(profile string) (float64, error) {
	if m.pprof == "" {
		return 0, fmt.Errorf("the manager serves no pprof")
	}
	resp, err := http.Get("http://" + m.pprof + "/debug/pprof/heap?gc=1")
	if err != nil {
		return 0, err
	}
	data, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("heap profile: %s %v", resp.Status, err)
	}
	if profile != "" {
		if err := writeFile(profile, data); err != nil {
			return 0, err
		}
	}
	g := m.goRuntime()
	if g.LiveHeapBytes == 0 {
		return 0, fmt.Errorf("no %s on the manager's /metrics", metricLiveHeap)
	}
	return g.LiveHeapBytes, nil
}

// windowRuntime is the manager's allocation and collections in one window.
type windowRuntime struct {
	AllocBytes, GCCycles float64
}

// runtimeSince returns what the manager allocated and collected since
// before (nil when no manager runs).
func (b *bench) runtimeSince(before goRuntime) *windowRuntime {
	if b.mgr == nil {
		return nil
	}
	after := b.mgr.goRuntime()
	return &windowRuntime{AllocBytes: after.AllocBytes - before.AllocBytes, GCCycles: after.GCCycles - before.GCCycles}
}

// runtimeNow samples the manager's runtime, if one runs.
func (b *bench) runtimeNow() goRuntime {
	if b.mgr == nil {
		return goRuntime{}
	}
	return b.mgr.goRuntime()
}

// heapSample is the manager's live heap before its first scenario and
// once every pod of the party's scale-out (or in-place setup) is Ready:
// what it keeps for pods pods, their objects and revisions.
type heapSample struct {
	Party       string  `json:"party"`
	Round       int     `json:"round"`
	Pods        int     `json:"pods"`
	StartBytes  float64 `json:"start_bytes"`
	ScaledBytes float64 `json:"scaled_bytes"`
}

// perPod is the live heap the manager added per pod.
func (h heapSample) perPod() float64 {
	if h.Pods == 0 {
		return 0
	}
	return (h.ScaledBytes - h.StartBytes) / float64(h.Pods)
}

// noteHeap records the manager's live heap now, as the start of a party
// (pods == 0) or once pods pods are cached.
func (b *bench) noteHeap(ps *partyState, pods int) {
	if b.mgr == nil {
		return
	}
	profile := ""
	if dir := os.Getenv("BENCH_PROFILE_DIR"); dir != "" {
		profile = filepath.Join(dir, fmt.Sprintf("%s-r%d-manager-heap-%dpods.pprof", ps.name, ps.round, pods))
	}
	live, err := b.mgr.liveHeap(profile)
	if err != nil {
		logf("%s: live heap: %v", ps.name, err)
		return
	}
	if pods == 0 {
		b.heaps = append(b.heaps, heapSample{Party: ps.name, Round: ps.round, StartBytes: live})
		return
	}
	if n := len(b.heaps); n > 0 && b.heaps[n-1].Party == ps.name && b.heaps[n-1].Round == ps.round {
		b.heaps[n-1].Pods, b.heaps[n-1].ScaledBytes = pods, live
	}
}

// loadAverage is /proc/loadavg's 1, 5 and 15 minute averages ("" if unread).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// roundLoad is the machine's load average at the start and end of a round:
// what else ran beside the benchmark (2 cores: above 2, something waited).
type roundLoad struct {
	Round int    `json:"round"`
	Start string `json:"start"`
	End   string `json:"end"`
	// At is when the round started (UTC).
	At string `json:"at"`
}

// startRound notes the load as round begins; endRound as it ends.
func (b *bench) startRound(round int) {
	b.loads = append(b.loads, roundLoad{Round: round, Start: loadAverage(), At: time.Now().UTC().Format(time.RFC3339)})
}

func (b *bench) endRound() {
	if n := len(b.loads); n > 0 {
		b.loads[n-1].End = loadAverage()
	}
}

// runtimeResults puts the manager's allocation and collections per window
// (per round, the mean), its live heap per pod (the median over rounds of
// the MyDeployment party) and the load around each round into res.
func (b *bench) runtimeResults(res *results) {
	byName := map[string]*scenario{scaleOut: &res.ScaleOut, rollingUpdate: &res.RollingUpdate, scaleIn: &res.ScaleIn,
		steadyState: &res.SteadyState, inPlaceSetup: &res.InPlaceSetup, inPlaceUpdate: &res.InPlaceUpdate.scenario}
	type sum struct {
		alloc, gc float64
		n         int
	}
	sums := map[string]*sum{}
	for _, w := range b.windows {
		if w.Runtime == nil || (w.Party != partyMyDeployment && w.Party != partyInPlace) {
			continue
		}
		if sums[w.Scenario] == nil {
			sums[w.Scenario] = &sum{}
		}
		s := sums[w.Scenario]
		s.alloc, s.gc, s.n = s.alloc+w.Runtime.AllocBytes, s.gc+w.Runtime.GCCycles, s.n+1
	}
	for name, s := range sums {
		alloc, gc := round(s.alloc/float64(s.n)/(1<<20), 1), round(s.gc/float64(s.n), 1)
		byName[name].ManagerAllocMiB, byName[name].ManagerGCCycles = &alloc, &gc
	}
	var perPod, scaled []float64
	for _, h := range b.heaps {
		if h.Party == partyMyDeployment && h.Pods > 0 {
			perPod, scaled = append(perPod, h.perPod()), append(scaled, h.ScaledBytes)
		}
	}
	if len(perPod) > 0 {
		p, s := round(median(perPod), 0), round(median(scaled)/(1<<20), 1)
		res.ManagerHeapPerPodBytes, res.ManagerLiveHeapMiB = &p, &s
	}
	res.ManagerHeaps, res.LoadByRound = b.heaps, b.loads
	res.PeakRSSSplit = map[string]rssSplit{}
	for _, w := range b.windows {
		for proc, s := range w.RSS {
			if proc == procManager && w.Party != partyMyDeployment {
				continue // the in-place party's manager is reported apart
			}
			if s.AnonMiB > res.PeakRSSSplit[proc].AnonMiB {
				res.PeakRSSSplit[proc] = s
			}
		}
	}
}

// runtimeMarkdown: the manager's allocation, collections and heap per pod,
// and the load around each round (nothing for results from before them).
func (r *results) runtimeMarkdown(p func(string, ...any)) {
	if r.ManagerHeapPerPodBytes != nil {
		p("Our manager's live heap (a collection forced before each reading, through pprof): %.1f MiB once every pod of its "+
			"scale-out is Ready, **%.0f bytes a pod** more than before its first scenario (the median over rounds; each pod's "+
			"share of its MyDeployment, revisions and records included).\n\n", *r.ManagerLiveHeapMiB, *r.ManagerHeapPerPodBytes)
	}
	if m, k := r.PeakRSSSplit[procManager], r.PeakRSSSplit["kube-controller-manager"]; m.AnonMiB > 0 && k.AnonMiB > 0 {
		p("What the peak RSS is made of, at each process's most anonymous memory seen (every %s): our manager %.1f MiB "+
			"anonymous (heap, stacks, buffers) and %.1f MiB of its binary's pages; kube-controller-manager %.1f MiB and "+
			"%.1f MiB.\n\n", rssSampleEvery, m.AnonMiB, m.FileMiB, k.AnonMiB, k.FileMiB)
	}
	var cells []string
	for _, sc := range r.scenarios() {
		if sc.s.ManagerAllocMiB != nil {
			cells = append(cells, fmt.Sprintf("%s %.0f MiB in %.0f collections", sc.name, *sc.s.ManagerAllocMiB, *sc.s.ManagerGCCycles))
		}
	}
	if len(cells) > 0 {
		p("What our manager allocated per round (its Go runtime's own count; the in-place update's is its party's manager): %s.\n\n",
			strings.Join(cells, ", "))
	}
	if len(r.LoadByRound) > 0 {
		parts := make([]string, len(r.LoadByRound))
		for i, l := range r.LoadByRound {
			parts[i] = fmt.Sprintf("round %d (%s) %s to %s", l.Round, l.At, l.Start, l.End)
		}
		p("Load average (1, 5, 15 min) at the start and end of each round: %s.\n\n", strings.Join(parts, "; "))
	}
}

// rssSplit is a process's resident set at its highest anonymous part seen
// in a window: its heap, stacks and buffers (anonymous) and the pages of
// its binary (file). VmHWM says how high the whole went, not of what.
type rssSplit struct {
	AnonMiB float64 `json:"anon_mib"`
	FileMiB float64 `json:"file_mib"`
}

// rssSampleEvery is how often the window's RSS sampler reads /proc.
const rssSampleEvery = 500 * time.Millisecond

// sampleRSS reads, every rssSampleEvery until stop is called, the resident
// set of our manager and kube-controller-manager, and returns at stop each
// one's sample with the most anonymous memory.
func (b *bench) sampleRSS() (stop func() map[string]rssSplit) {
	pids := map[string]int{}
	if pid, err := b.cl.pid("kube-controller-manager"); err == nil {
		pids["kube-controller-manager"] = pid
	}
	if b.mgr != nil {
		pids[procManager] = b.mgr.cmd.Process.Pid
	}
	peaks := map[string]rssSplit{}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(rssSampleEvery)
		defer t.Stop()
		for {
			for proc, pid := range pids {
				if s, err := readProc(pid); err == nil && s.RSSAnonMiB > peaks[proc].AnonMiB {
					peaks[proc] = rssSplit{AnonMiB: round(s.RSSAnonMiB, 1), FileMiB: round(s.RSSFileMiB, 1)}
				}
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() map[string]rssSplit {
		close(done)
		<-finished
		return peaks
	}
}
