package main

import (
	"strings"
	"testing"
	"time"
)

// TestResultsOverRounds checks how results() folds several rounds into the
// figures a reader of docs/benchmarks sees: times are medians with every
// round kept, counts and CPU are per round, and the rest checks (violations,
// writes at rest, resyncs, peak memory) take the worst round.
func TestResultsOverRounds(t *testing.T) {
	cfg := &config{Objects: 2, Replicas: 4, Rounds: 3, Parties: []string{partyRaw, partyMyDeployment}}
	b := &bench{cfg: cfg, cl: &cluster{root: t.TempDir()}}
	t0 := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	var reqs []requests
	add := func(party, scenario string, round int, secs float64, w window, r requests) {
		w.Party, w.Scenario, w.Round = party, scenario, round
		w.Start = t0
		w.End = t0.Add(time.Duration(secs * float64(time.Second)))
		b.windows = append(b.windows, &w)
		reqs = append(reqs, r)
	}
	creates := func(who string, n int) requests {
		return requests{who: {"create": n, "create pods": n}, allRequesters: {"create": n + 10, "create pods": n + 10}}
	}
	// Three rounds of scale-out: the medians are 10 (raw) and 12 (ours), not the means.
	for i, secs := range []float64{10, 30, 9} {
		add(partyRaw, scaleOut, i+1, secs, window{CPU: map[string]float64{"kube-apiserver": 3, procBench: 1}}, creates(whoRaw, 8))
	}
	for i, secs := range []float64{12, 11, 40} {
		add(partyMyDeployment, scaleOut, i+1, secs, window{CPU: map[string]float64{"kube-apiserver": float64(i + 1), procManager: 1}}, creates(whoManager, 9+i))
	}
	for i, v := range []int{0, 2, 1} {
		add(partyMyDeployment, rollingUpdate, i+1, 20, window{Violations: v, ViolationExamples: []string{"x"}}, requests{})
	}
	// At rest: round 2 wrote once and resynced least; every round had audit data.
	for i, rec := range []float64{9, 4, 7} {
		writes := requests{allRequesters: {"get": 5}}
		if i == 1 {
			writes[whoManager] = map[string]int{"patch": 1}
		}
		add(partyMyDeployment, steadyState, i+1, 5, window{Reconciles: rec}, writes)
	}
	b.managerRuns = []procSample{{CPUSeconds: 2, PeakRSSMiB: 50}, {CPUSeconds: 3, PeakRSSMiB: 70}, {CPUSeconds: 4, PeakRSSMiB: 60}}
	b.kcmStart, b.kcmEnd = procSample{CPUSeconds: 1}, procSample{CPUSeconds: 19, PeakRSSMiB: 200}

	r := b.results(reqs, time.Minute)

	so := r.ScaleOut
	if *so.RawS != 10 || *so.MyDeploymentS != 12 {
		t.Errorf("scale-out medians = %v raw / %v ours, want 10 / 12", *so.RawS, *so.MyDeploymentS)
	}
	if got := so.MyDeploymentRunsS; len(got) != 3 || got[0] != 12 || got[2] != 40 {
		t.Errorf("our scale-out rounds = %v, want [12 11 40] in round order", got)
	}
	if *so.MyDeploymentOverRaw != 1.2 {
		t.Errorf("ours/raw = %v, want the ratio of the medians, 1.2", *so.MyDeploymentOverRaw)
	}
	if so.PodsPerS[partyRaw] != 0.8 {
		t.Errorf("raw pods/s = %v, want 8 pods / 10 s", so.PodsPerS[partyRaw])
	}
	if got := so.Requests[partyMyDeployment]["create pods"]; got != 10 {
		t.Errorf("our creates per round = %d, want the mean of 9, 10, 11", got)
	}
	if got := so.RequestsAll[partyRaw]; got != 18 {
		t.Errorf("all requests per round = %d, want 18", got)
	}
	if got := so.CPUS[partyMyDeployment]["kube-apiserver"]; got != 2 {
		t.Errorf("apiserver CPU per round = %v, want the mean of 1, 2, 3", got)
	}
	if got := so.CPUS[partyMyDeployment][procAll]; got != 3 {
		t.Errorf("all processes' CPU per round = %v, want the mean of 2, 3, 4", got)
	}
	if got := so.CPUPerS[partyRaw]; got != 0.24 {
		t.Errorf("raw CPU per second = %v, want 12 CPU-s over 49 s of windows", got)
	}
	if got := r.RollingUpdate.InvariantViolations; got == nil || *got != 3 {
		t.Errorf("violations = %v, want every round's summed (3)", got)
	}
	st := r.SteadyState
	if st.WritesAtRest == nil || *st.WritesAtRest != 1 {
		t.Errorf("writes at rest = %v, want the worst round's (1)", st.WritesAtRest)
	}
	if st.ReconcilesAtRest == nil || *st.ReconcilesAtRest != 4 {
		t.Errorf("reconciles at rest = %v, want the fewest of any round (4)", st.ReconcilesAtRest)
	}
	if r.ManagerPeakRSSMiB != 70 || r.ManagerCPUS != 9 {
		t.Errorf("manager peak %v MiB, CPU %v s; want the highest peak (70) and every run's CPU (9)", r.ManagerPeakRSSMiB, r.ManagerCPUS)
	}
	if r.ManagerCPUMyDeploymentWinS != 3 {
		t.Errorf("manager CPU in its windows = %v, want 3 (scale-out only had any)", r.ManagerCPUMyDeploymentWinS)
	}
	if got := r.SteadyState.Reconciles; got == nil || *got != 6.7 {
		t.Errorf("reconciles at rest per round = %v, want the mean of 9, 4, 7", got)
	}
	if r.Rounds != 3 {
		t.Errorf("rounds = %d", r.Rounds)
	}
}

func TestRoundOrderRotates(t *testing.T) {
	ps := []string{"a", "b", "c"}
	for round, want := range map[int]string{1: "abc", 2: "bca", 3: "cab", 4: "abc"} {
		got := ""
		for _, p := range roundOrder(ps, round) {
			got += p
		}
		if got != want {
			t.Errorf("round %d: %s, want %s", round, got, want)
		}
	}
	if ps[0] != "a" {
		t.Error("roundOrder changed its input")
	}
}

// TestResultsInPlace checks the in_place_update figures a reader compares:
// Deployment's side is its rolling update of the same run, writes are the
// controllers' own and everyone's per round and per pod (of every
// resource, and of pods alone), violations and recreated pods are summed
// over rounds, and issue 31's targets (1.25x time, 0.6x the controllers'
// writes, 0.8x everyone's, 0 and 0) say whether they are met; the in-place
// party stays out of the whole-run and our manager's figures.
func TestResultsInPlace(t *testing.T) {
	cfg := &config{Objects: 2, Replicas: 4, Rounds: 2, Parties: []string{partyDeployment, partyMyDeployment, partyInPlace}}
	b := &bench{cfg: cfg, cl: &cluster{root: t.TempDir()}}
	t0 := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	var reqs []requests
	add := func(party, scenario string, secs float64, w window, r requests) {
		w.Party, w.Scenario = party, scenario
		w.Start, w.End = t0, t0.Add(time.Duration(secs*float64(time.Second)))
		b.windows = append(b.windows, &w)
		reqs = append(reqs, r)
	}
	for _, secs := range []float64{100, 120} {
		add(partyDeployment, rollingUpdate, secs, window{Violations: 5, PodsCreated: 8}, requests{
			whoKCMDeploy:  {"create": 10, "create pods": 10, "delete": 10, "delete pods": 10, "get": 7, "get pods": 7},
			allRequesters: {"create": 30, "create pods": 30, "delete": 20, "delete pods": 20, "watch": 50, "watch pods": 50},
		})
	}
	for i, secs := range []float64{20, 40} {
		add(partyInPlace, inPlaceUpdate, secs, window{Violations: i, ViolationExamples: []string{"obj: 2 ready"}, PodsCreated: 1 - i},
			requests{
				whoManager: {"patch": 10, "patch pods": 4, "patch pods/status": 4, "patch mydeployments/status": 2,
					"list": 3, "list pods": 3},
				allRequesters: {"patch": 12, "patch pods": 4, "patch pods/status": 8, "list": 3, "list pods": 3},
			})
	}
	b.inPlaceManagerRuns = []procSample{{CPUSeconds: 5, PeakRSSMiB: 80}}
	b.managerRuns = []procSample{{CPUSeconds: 2, PeakRSSMiB: 50}}
	b.kcmStart, b.kcmEnd = procSample{CPUSeconds: 1}, procSample{CPUSeconds: 21}
	b.extra.kcm = 4

	r := b.results(reqs, time.Minute)
	ip := r.InPlaceUpdate
	if ip.DeploymentS == nil || *ip.DeploymentS != 110 || *ip.MyDeploymentS != 30 {
		t.Fatalf("times %v / %v, want Deployment's rolling update median 110 and ours 30", ip.DeploymentS, ip.MyDeploymentS)
	}
	if *ip.MyDeploymentOverDeployment != 0.273 {
		t.Errorf("time ratio %v, want 30/110", *ip.MyDeploymentOverDeployment)
	}
	if ip.WritesTotal[partyMyDeployment] != 10 || ip.WritesTotal[partyDeployment] != 20 {
		t.Errorf("controller writes per round %v, want ours 10 (patches, no lists) and Deployment's 20 (no gets)", ip.WritesTotal)
	}
	if ip.WritesPerPod[partyMyDeployment] != 1.25 || ip.PodWritesPerPod[partyMyDeployment] != 1 ||
		ip.WritesPerPod[partyDeployment] != 2.5 || ip.PodWritesPerPod[partyDeployment+"_all"] != 6.25 {
		t.Errorf("writes a pod %v, of pods alone %v: want ours 10/8 and 8/8, Deployment's 20/8 and everyone's 50/8",
			ip.WritesPerPod, ip.PodWritesPerPod)
	}
	if ip.DeploymentPodsRecreated == nil || *ip.DeploymentPodsRecreated != 16 {
		t.Errorf("Deployment's pods recreated %v, want each round's summed (16)", ip.DeploymentPodsRecreated)
	}
	if ip.WritesTotal[partyMyDeployment+"_all"] != 12 || ip.WritesTotal[partyDeployment+"_all"] != 50 {
		t.Errorf("everyone's writes per round %v, want 12 and 50 (no watches)", ip.WritesTotal)
	}
	if ip.Writes[partyMyDeployment]["patch pods/status"] != 4 {
		t.Errorf("writes by resource %v, want patch pods/status 4", ip.Writes[partyMyDeployment])
	}
	if *ip.WritesOverDeployment != 0.5 || *ip.AllWritesOverDeployment != 0.24 {
		t.Errorf("write ratios %v / %v, want 0.5 and 0.24", *ip.WritesOverDeployment, *ip.AllWritesOverDeployment)
	}
	if *ip.InvariantViolations != 1 || *ip.PodsRecreated != 1 {
		t.Errorf("violations %d, pods recreated %d; want each round's summed (1, 1)", *ip.InvariantViolations, *ip.PodsRecreated)
	}
	if r.RollingUpdate.InvariantViolations != nil {
		t.Errorf("the in-place violations leaked into rolling_update: %v", *r.RollingUpdate.InvariantViolations)
	}
	byName := map[string]target{}
	for _, tg := range r.Targets {
		byName[tg.Name] = tg
	}
	for _, want := range []target{
		{"in_place_update mydeployment/deployment (its rolling_update)", 0.273, 1.25, true, 31},
		{"in_place_update writes: our manager / kcm's deployment and replicaset controllers", 0.5, 0.6, true, 31},
		{"in_place_update writes by everyone: in place / rolling update", 0.24, 0.8, true, 31},
		{"in_place_update invariant violations", 1, 0, false, 31},
		{"in_place_update pods recreated", 1, 0, false, 31},
	} {
		if got := byName[want.Name]; got != want {
			t.Errorf("target %+v, want %+v", got, want)
		}
	}
	if r.ManagerCPUS != 2 || r.ManagerPeakRSSMiB != 50 || ip.ManagerCPUS != 5 || ip.ManagerPeakRSSMiB != 80 {
		t.Errorf("manager CPU %v / RSS %v, in-place manager %v / %v: want the in-place manager kept apart",
			r.ManagerCPUS, r.ManagerPeakRSSMiB, ip.ManagerCPUS, ip.ManagerPeakRSSMiB)
	}
	r.ManagerPeakRSSMiB = 0 // as when the mydeployment party did not run
	for _, tg := range targets(r) {
		if strings.HasPrefix(tg.Name, "manager ") {
			t.Errorf("target %+v without our manager's figures: a 0 would pass for met", tg)
		}
	}
	if r.KCMCPUS != 16 {
		t.Errorf("kcm whole-run CPU %v, want 20 less the extra parties' 4", r.KCMCPUS)
	}
	md := r.markdown()
	for _, s := range []string{"| in-place update | n/a | 110.00 s (100.0, 120.0) | 30.00 s (20.0, 40.0) | 0.27x |",
		"| writes by the controller | 20 (create pods 10, delete pods 10) | 10 (patch pods 4, patch pods/status 4, patch mydeployments/status 2) | 0.50x |",
		"| writes a pod by the controller: every resource / pods alone | 2.50 / 2.50 | 1.25 / 1.00 | |"} {
		if !strings.Contains(md, s) {
			t.Errorf("README lacks %q:\n%s", s, md)
		}
	}
}
