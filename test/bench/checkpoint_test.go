package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCheckpointResumes: a run stopped after round 1 and resumed for round
// 2 gives the results a run of both rounds in one go gives (medians over
// both rounds' windows, each window's requests as counted in its own
// part), with the process figures of both parts added and the parts listed.
func TestCheckpointResumes(t *testing.T) {
	cfg := &config{Size: "small", Objects: 2, Replicas: 4, Rounds: 2, Parties: []string{partyRaw, partyMyDeployment}}
	path := filepath.Join(t.TempDir(), "checkpoint.json")
	t0 := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	add := func(b *bench, party string, round int, secs float64, creates int) {
		w := &window{Party: party, Scenario: scaleOut, Round: round, Start: t0, End: t0.Add(time.Duration(secs * float64(time.Second))),
			CPU: map[string]float64{"kube-apiserver": secs / 10}}
		b.windows = append(b.windows, w)
		b.reqs = append(b.reqs, requests{actor[party]: {"create": creates}, allRequesters: {"create": creates}})
	}

	// Part 1: round 1, then the checkpoint.
	first := &bench{cfg: cfg, commit: "abc123", started: time.Now().Add(-time.Hour), firstRound: 1}
	add(first, partyRaw, 1, 10, 8)
	add(first, partyMyDeployment, 1, 12, 9)
	first.managerRuns = []procSample{{CPUSeconds: 3, PeakRSSMiB: 70}}
	first.kcmStart, first.apiStart = procSample{CPUSeconds: 1}, procSample{CPUSeconds: 5}
	first.extra.kcm = 1
	if err := first.writeCheckpoint(path, 1, first.part(procSample{CPUSeconds: 11, PeakRSSMiB: 300}, procSample{CPUSeconds: 105}, 1)); err != nil {
		t.Fatal(err)
	}

	// Part 2: resumed, round 2.
	if _, err := loadCheckpoint(path, cfg, "def456"); err == nil || !strings.Contains(err.Error(), "same commit") {
		t.Errorf("a checkpoint of another commit: %v, want refused", err)
	}
	other := *cfg
	other.Objects = 3
	if _, err := loadCheckpoint(path, &other, "abc123"); err == nil || !strings.Contains(err.Error(), "other settings") {
		t.Errorf("a checkpoint of other settings: %v, want refused", err)
	}
	cp, err := loadCheckpoint(path, cfg, "abc123")
	if err != nil {
		t.Fatal(err)
	}
	second := &bench{cfg: cfg, cl: &cluster{root: t.TempDir()}, commit: "abc123", started: time.Now().Add(-30 * time.Minute), firstRound: 1}
	second.resume(cp)
	if second.firstRound != 2 || len(second.windows) != 2 || len(second.reqs) != 2 {
		t.Fatalf("resumed at round %d with %d windows, %d counts; want round 2, 2, 2", second.firstRound, len(second.windows), len(second.reqs))
	}
	add(second, partyRaw, 2, 20, 8)
	add(second, partyMyDeployment, 2, 16, 11)
	second.managerRuns = append(second.managerRuns, procSample{CPUSeconds: 4, PeakRSSMiB: 60})
	second.kcmStart, second.kcmEnd = procSample{CPUSeconds: 2}, procSample{CPUSeconds: 8, PeakRSSMiB: 250}
	second.apiStart, second.apiEnd = procSample{CPUSeconds: 10}, procSample{CPUSeconds: 60}
	r := second.results(second.reqs, 30*time.Minute)

	so := r.ScaleOut
	if *so.RawS != 15 || *so.MyDeploymentS != 14 || len(so.MyDeploymentRunsS) != 2 || so.MyDeploymentRunsS[0] != 12 {
		t.Errorf("scale-out medians %v raw / %v ours (rounds %v), want 15 / 14 over both parts, round 1 first",
			*so.RawS, *so.MyDeploymentS, so.MyDeploymentRunsS)
	}
	if so.Requests[partyMyDeployment]["create"] != 10 {
		t.Errorf("our creates per round %d, want the mean of 9 and 11", so.Requests[partyMyDeployment]["create"])
	}
	if r.ManagerCPUS != 7 || r.ManagerPeakRSSMiB != 70 {
		t.Errorf("manager CPU %v s, peak %v MiB; want both parts' 7 s and the higher peak, 70", r.ManagerCPUS, r.ManagerPeakRSSMiB)
	}
	// kube-controller-manager: part 1 11-1-1 = 9 s, part 2 8-2 = 6 s; the higher peak.
	if r.KCMCPUS != 15 || r.KCMPeakRSSMiB != 300 || r.APIServerCPUS != 150 {
		t.Errorf("kcm CPU %v s, peak %v MiB, API server CPU %v s; want 15, 300, 100+50", r.KCMCPUS, r.KCMPeakRSSMiB, r.APIServerCPUS)
	}
	if len(r.Parts) != 2 || r.Parts[0].LastRound != 1 || r.Parts[1].FirstRound != 2 || r.Parts[1].LastRound != 2 {
		t.Fatalf("parts %+v, want rounds 1-1 and 2-2", r.Parts)
	}
	if r.RunS < 1800+3599 || r.RunS > 1800+3601+5 {
		t.Errorf("run %v s, want both parts' (30 min + the first's hour)", r.RunS)
	}
	if md := r.markdown(); !strings.Contains(md, "in 2 parts") || !strings.Contains(md, "rounds 2 to 2") {
		t.Errorf("the README section does not say the run went in parts:\n%s", md)
	}

	// Both rounds done: nothing left to resume.
	if err := second.writeCheckpoint(path, 2, second.part(second.kcmEnd, second.apiEnd, 2)); err != nil {
		t.Fatal(err)
	}
	if _, err := loadCheckpoint(path, cfg, "abc123"); err == nil || !strings.Contains(err.Error(), "all 2 rounds") {
		t.Errorf("a finished checkpoint: %v, want refused", err)
	}
}

func TestUntilRoundFlags(t *testing.T) {
	cfg, err := parseFlags([]string{"--size", "full", "--until-round", "1", "--root", t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.untilRound != 1 || !strings.HasSuffix(cfg.checkpoint, "bin/bench-checkpoint-full.json") {
		t.Errorf("until round %d, checkpoint %q", cfg.untilRound, cfg.checkpoint)
	}
	for _, args := range [][]string{
		{"--size", "full", "--until-round", "4"},
		{"--size", "full", "--scale-pods", "2000", "--resume"},
	} {
		if _, err := parseFlags(args); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}
