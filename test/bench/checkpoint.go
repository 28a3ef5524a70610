package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"
)

// A run of record is 3 rounds, each about an hour on a slow 2-core
// machine: longer than a session leaves beside it. So a run can go on where
// it stopped, one part at a time: after every round it writes a checkpoint
// (what it measured so far: its windows, each with the requests the audit
// log holds for it, and the figures that span rounds), and --resume starts
// the next round on a fresh cluster. A round is never split: one stopped
// midway runs again whole. Each figure still compares parties measured in
// the same rounds; results.json lists the parts (parts), each with its
// machine and time, so a reader sees which rounds ran where.

// checkpoint is a run's state after its last finished round.
type checkpoint struct {
	// Settings and Commit must be the resuming run's: the same run, the
	// same manager.
	Settings   *config `json:"settings"`
	Commit     string  `json:"commit"`
	RoundsDone int     `json:"rounds_done"`
	// Windows and Requests (the audit log's count of each window) of
	// every finished round.
	Windows            []*window    `json:"windows"`
	Requests           []requests   `json:"requests"`
	ManagerRuns        []procSample `json:"manager_runs"`
	InPlaceManagerRuns []procSample `json:"in_place_manager_runs"`
	Heaps              []heapSample `json:"heaps,omitempty"`
	Loads              []roundLoad  `json:"loads,omitempty"`
	Parts              []runPart    `json:"parts"`
}

// runPart is one process's share of a run: its rounds, on its cluster.
type runPart struct {
	FirstRound int     `json:"first_round"`
	LastRound  int     `json:"last_round"`
	Start      string  `json:"start"`
	End        string  `json:"end"`
	RunS       float64 `json:"run_s"`
	// CPU seconds of kube-controller-manager and kube-apiserver in the
	// part, less the extra parties' (as results' kcm_cpu_s), and
	// kube-controller-manager's peak RSS.
	KCMCPUS       float64           `json:"kcm_cpu_s"`
	APIServerCPUS float64           `json:"apiserver_cpu_s"`
	KCMPeakRSSMiB float64           `json:"kcm_peak_rss_mib"`
	Machine       map[string]string `json:"machine"`
}

// errStopped: the run stopped after --until-round, its checkpoint written.
var errStopped = errors.New("stopped after --until-round: go on with --resume")

// loadCheckpoint reads the checkpoint at path for a run of cfg at commit:
// an error when it is another run's (other settings, another commit) or
// already complete.
func loadCheckpoint(path string, cfg *config, commit string) (*checkpoint, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--resume: %w", err)
	}
	var cp checkpoint
	if err := json.Unmarshal(data, &cp); err != nil {
		return nil, fmt.Errorf("--resume: %s: %w", path, err)
	}
	want, _ := json.Marshal(cfg)
	got, _ := json.Marshal(cp.Settings)
	switch {
	case !bytes.Equal(want, got):
		return nil, fmt.Errorf("--resume: %s is a run with other settings (%s), not these (%s)", path, got, want)
	case cp.Commit != commit:
		return nil, fmt.Errorf("--resume: %s measured %q, this is %q: resume on the same commit, with a clean tree", path, cp.Commit, commit)
	case cp.RoundsDone >= cfg.Rounds:
		return nil, fmt.Errorf("--resume: %s has all %d rounds already", path, cp.RoundsDone)
	case len(cp.Requests) != len(cp.Windows):
		return nil, fmt.Errorf("--resume: %s has %d windows but %d request counts", path, len(cp.Windows), len(cp.Requests))
	}
	return &cp, nil
}

// resume takes a checkpoint's finished rounds into b.
func (b *bench) resume(cp *checkpoint) {
	b.windows, b.reqs = cp.Windows, cp.Requests
	b.managerRuns, b.inPlaceManagerRuns = cp.ManagerRuns, cp.InPlaceManagerRuns
	b.heaps, b.loads, b.parts = cp.Heaps, cp.Loads, cp.Parts
	b.firstRound = cp.RoundsDone + 1
}

// part is this process's share of the run until now.
func (b *bench) part(kcmNow, apiNow procSample, lastRound int) runPart {
	return runPart{
		FirstRound:    b.firstRound,
		LastRound:     lastRound,
		Start:         b.started.UTC().Format(time.RFC3339),
		End:           time.Now().UTC().Format(time.RFC3339),
		RunS:          round(time.Since(b.started).Seconds(), 1),
		KCMCPUS:       round(kcmNow.CPUSeconds-b.kcmStart.CPUSeconds-b.extra.kcm, 2),
		APIServerCPUS: round(apiNow.CPUSeconds-b.apiStart.CPUSeconds-b.extra.api, 2),
		KCMPeakRSSMiB: round(kcmNow.PeakRSSMiB, 1),
		Machine:       machine(),
	}
}

// writeCheckpoint writes the run's state after round to path.
func (b *bench) writeCheckpoint(path string, round int, now runPart) error {
	cp := checkpoint{
		Settings: b.cfg, Commit: b.commit, RoundsDone: round,
		Windows: b.windows, Requests: b.reqs,
		ManagerRuns: b.managerRuns, InPlaceManagerRuns: b.inPlaceManagerRuns,
		Heaps: b.heaps, Loads: b.loads,
		Parts: append(append([]runPart(nil), b.parts...), now),
	}
	data, err := json.MarshalIndent(cp, "", " ")
	if err != nil {
		return err
	}
	return writeFile(path, append(data, '\n'))
}
