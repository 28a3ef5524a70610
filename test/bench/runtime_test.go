package main

import (
	"strings"
	"testing"
	"time"
)

func TestParseGoRuntime(t *testing.T) {
	exposition := `# HELP go_gc_heap_allocs_bytes_total Cumulative sum of memory allocated to the heap by the application.
# TYPE go_gc_heap_allocs_bytes_total counter
go_gc_heap_allocs_bytes_total 3.170893824e+09
go_gc_cycles_total_gc_cycles_total 412
go_gc_heap_live_bytes 1.4651976e+07
go_gc_heap_allocs_objects_total 9e+07
`
	g, err := parseGoRuntime(strings.NewReader(exposition))
	if err != nil || g.AllocBytes != 3_170_893_824 || g.GCCycles != 412 || g.LiveHeapBytes != 14_651_976 {
		t.Fatalf("parsed %+v, %v", g, err)
	}
}

// TestResultsRuntime checks the figures issue 43 added: what our manager
// allocated per window (per round), its live heap per pod (the median over
// rounds), the split of the peak RSS, the load of each round, and the
// targets with the issue that set them, reconciles at rest among them.
func TestResultsRuntime(t *testing.T) {
	cfg := &config{Objects: 4, Replicas: 50, Rounds: 2, SyncPeriodS: 30, Parties: []string{partyDeployment, partyMyDeployment}}
	b := &bench{cfg: cfg, cl: &cluster{root: t.TempDir()}}
	t0 := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	var reqs []requests
	add := func(party, scenario string, secs float64, w window) {
		w.Party, w.Scenario, w.Start, w.End = party, scenario, t0, t0.Add(time.Duration(secs*float64(time.Second)))
		b.windows = append(b.windows, &w)
		reqs = append(reqs, requests{allRequesters: {"get": 1}})
	}
	for i := range 2 {
		add(partyMyDeployment, scaleOut, 10, window{Runtime: &windowRuntime{AllocBytes: float64((100 + 20*i) << 20), GCCycles: float64(10 + i)},
			RSS: map[string]rssSplit{procManager: {AnonMiB: float64(40 + i), FileMiB: 50}, "kube-controller-manager": {AnonMiB: 200, FileMiB: 90}}})
		add(partyDeployment, scaleOut, 12, window{RSS: map[string]rssSplit{"kube-controller-manager": {AnonMiB: float64(300 + i), FileMiB: 95}}})
		// 4 objects, 67.5 s at rest (2.25 periods of 30 s): 9 is once a period.
		add(partyMyDeployment, steadyState, 67.5, window{Reconciles: float64(9 + 9*i)})
	}
	b.heaps = []heapSample{{Party: partyMyDeployment, Round: 1, Pods: 200, StartBytes: 1e6, ScaledBytes: 1e6 + 200*3000},
		{Party: partyMyDeployment, Round: 2, Pods: 200, StartBytes: 1e6, ScaledBytes: 1e6 + 200*4000}}
	b.loads = []roundLoad{{Round: 1, Start: "3.10 2.00 1.00", End: "4.00 3.00 2.00", At: "2026-11-28T00:00:00Z"}}
	b.managerRuns = []procSample{{CPUSeconds: 2, PeakRSSMiB: 90}}
	b.kcmEnd = procSample{CPUSeconds: 10, PeakRSSMiB: 400}

	r := b.results(reqs, time.Minute)
	if so := r.ScaleOut; so.ManagerAllocMiB == nil || *so.ManagerAllocMiB != 110 || *so.ManagerGCCycles != 10.5 {
		t.Errorf("scale-out allocation %v MiB in %v collections, want the means 110 and 10.5", so.ManagerAllocMiB, so.ManagerGCCycles)
	}
	if r.ManagerHeapPerPodBytes == nil || *r.ManagerHeapPerPodBytes != 3500 {
		t.Errorf("heap per pod %v, want the median of 3000 and 4000", r.ManagerHeapPerPodBytes)
	}
	if m, k := r.PeakRSSSplit[procManager], r.PeakRSSSplit["kube-controller-manager"]; m.AnonMiB != 41 || k.AnonMiB != 301 || k.FileMiB != 95 {
		t.Errorf("RSS split: manager %+v, kcm %+v; want each one's most anonymous sample", m, k)
	}
	byName := map[string]target{}
	for _, tg := range r.Targets {
		byName[tg.Name] = tg
	}
	if tg := byName["steady_state reconciles per object per resync period"]; tg.Value != 1 || !tg.Met || tg.Issue != 43 {
		t.Errorf("reconciles at rest: %+v, want 9 reconciles of 4 objects over 2.25 periods = 1, met, issue 43", tg)
	}
	if tg := byName["manager peak RSS / kcm peak RSS"]; tg.Value != 0.225 || tg.Limit != 0.30 || tg.Issue != 43 {
		t.Errorf("RSS target %+v", tg)
	}
	md := r.markdown()
	for _, s := range []string{"**3500 bytes a pod**", "scale-out 110 MiB in 10 collections", "our manager 41.0 MiB anonymous",
		"round 1 (2026-11-28T00:00:00Z) 3.10 2.00 1.00 to 4.00 3.00 2.00", "| met | issue |"} {
		if !strings.Contains(md, s) {
			t.Errorf("README lacks %q", s)
		}
	}
}

// checkRuntimeOutputs checks, in a smoke run's results.json, what issue 43
// added: our manager's allocation per window, its live heap per pod, the
// split of its peak RSS, the load of every round, and each target's issue.
func checkRuntimeOutputs(t *testing.T, res map[string]any) {
	t.Helper()
	if v, ok := res["manager_heap_per_pod_bytes"].(float64); !ok || v <= 0 {
		t.Errorf("results.json: manager_heap_per_pod_bytes = %v, want > 0", res["manager_heap_per_pod_bytes"])
	}
	so, _ := res[scaleOut].(map[string]any)
	if v, ok := so["manager_alloc_mib"].(float64); !ok || v <= 0 {
		t.Errorf("results.json: scale_out.manager_alloc_mib = %v, want > 0", so["manager_alloc_mib"])
	}
	split, _ := res["peak_rss_split"].(map[string]any)
	for _, proc := range []string{procManager, "kube-controller-manager"} {
		if s, _ := split[proc].(map[string]any); s["anon_mib"] == nil || s["file_mib"] == nil {
			t.Errorf("results.json: peak_rss_split.%s = %v", proc, split[proc])
		}
	}
	if loads, _ := res["load_by_round"].([]any); len(loads) != 1 {
		t.Errorf("results.json: load_by_round = %v, want one round's", res["load_by_round"])
	}
	targets, _ := res["targets"].([]any)
	for _, tg := range targets {
		if m, _ := tg.(map[string]any); m["issue"] == nil {
			t.Errorf("target %v names no issue", m)
		}
	}
}
