package main

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestSmoke runs the whole benchmark at the tiny size on a cluster of its
// own (`make test-bench`, part of `make test`; it needs bin/ built) and
// checks what a reader of docs/benchmarks relies on: every output is
// written, every party ran every scenario it takes part in, the rollout kept
// its invariants and our manager wrote nothing at rest.
func TestSmoke(t *testing.T) {
	if os.Getenv("BENCH_SMOKE") == "" {
		t.Skip("needs a local cluster and bin/: run with make test-bench")
	}
	out := t.TempDir()
	name := os.Getenv("BENCH_CLUSTER")
	if name == "" {
		name = "mydeployment-bench-smoke"
	}
	cfg, err := parseFlags([]string{"--size", "tiny", "--root", "../..", "--out", out, "--cluster", name})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := run(ctx, cfg); err != nil {
		t.Fatal(err)
	}

	raw, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res map[string]any
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	num := func(obj map[string]any, key string) float64 {
		t.Helper()
		v, ok := obj[key].(float64)
		if !ok {
			t.Fatalf("results.json: %q is %v, want a number", key, obj[key])
		}
		return v
	}
	for _, key := range []string{"manager_peak_rss_mib", "kcm_peak_rss_mib", "manager_cpu_s", "kcm_cpu_s"} {
		if num(res, key) <= 0 {
			t.Errorf("results.json: %s = %v, want > 0", key, res[key])
		}
	}
	want := map[string][]string{
		scaleOut:      {"raw_s", "deployment_s", "mydeployment_s", "raw_plain_s"},
		rollingUpdate: {"deployment_s", "mydeployment_s"},
		scaleIn:       {"raw_s", "deployment_s", "mydeployment_s", "raw_plain_s"},
		steadyState:   {},
		inPlaceUpdate: {"deployment_s", "mydeployment_s"},
	}
	for sc, timed := range want {
		obj, ok := res[sc].(map[string]any)
		if !ok {
			t.Fatalf("results.json has no object %q", sc)
		}
		for _, key := range []string{"raw_s", "deployment_s", "mydeployment_s", "objects", "replicas", "invariant_violations", "writes_at_rest"} {
			if _, ok := obj[key]; !ok {
				t.Errorf("results.json: %s has no key %q", sc, key)
			}
		}
		if num(obj, "objects") != 3 || num(obj, "replicas") != 4 {
			t.Errorf("results.json: %s is not 3 x 4: %v x %v", sc, obj["objects"], obj["replicas"])
		}
		for _, key := range timed {
			if num(obj, key) <= 0 {
				t.Errorf("results.json: %s.%s = %v, want > 0", sc, key, obj[key])
			}
		}
	}
	ru := res[rollingUpdate].(map[string]any)
	if v := num(ru, "invariant_violations"); v != 0 {
		t.Errorf("MyDeployment broke the RollingUpdate invariants %v times: %v", v, ru["violation_examples"])
	}
	// The in-place update: every pod kept (none appeared), the bounds held,
	// and both sides' writes counted.
	ip := res[inPlaceUpdate].(map[string]any)
	if v := num(ip, "invariant_violations"); v != 0 {
		t.Errorf("the in-place update broke its invariants %v times: %v", v, ip["violation_examples"])
	}
	if v := num(ip, "pods_recreated"); v != 0 {
		t.Errorf("the in-place update recreated %v pods, want 0", v)
	}
	totals, _ := ip["writes_total"].(map[string]any)
	for _, who := range []string{partyMyDeployment, partyDeployment, partyMyDeployment + "_all", partyDeployment + "_all"} {
		if num(totals, who) <= 0 {
			t.Errorf("results.json: in_place_update.writes_total.%s = %v, want > 0", who, totals[who])
		}
	}
	// Issue 31: at most 3 pod writes a pod by our manager (gate False, one
	// spec patch with the labels, gate True; no resize: only the image).
	if v := num(ip["pod_writes_per_pod"].(map[string]any), partyMyDeployment); v <= 0 || v > 3 {
		t.Errorf("results.json: in_place_update.pod_writes_per_pod.%s = %v, want at most 3", partyMyDeployment, v)
	}
	// Only the image changed: our manager patched pods and created none.
	ours, _ := ip["writes"].(map[string]any)[partyMyDeployment].(map[string]any)
	if ours["patch pods"] == nil || ours["create pods"] != nil {
		t.Errorf("our manager's writes in the in-place update: %v, want pod patches and no pod creates", ours)
	}
	st := res[steadyState].(map[string]any)
	if v := num(st, "writes_at_rest"); v != 0 {
		t.Errorf("our manager wrote %v times at rest: %v", v, st["requests"])
	}
	if v := num(st, "mydeployment_reconciles_at_rest"); v < 3 {
		t.Errorf("only %v reconciles at rest: the resync did not happen, so 0 writes proves nothing", v)
	}
	checkRuntimeOutputs(t, res)
	// Every process's CPU is measured in every window: the cluster's, ours, the benchmark's.
	so := res[scaleOut].(map[string]any)
	cpu, _ := so["cpu_s"].(map[string]any)[partyMyDeployment].(map[string]any)
	for _, proc := range cpuColumns() {
		if _, ok := cpu[proc]; !ok {
			t.Errorf("results.json: scale_out.cpu_s.%s has no %q: %v", partyMyDeployment, proc, cpu)
		}
	}
	if perS := num(so["cpu_all_per_s"].(map[string]any), partyMyDeployment); perS <= 0 || perS > float64(runtime.NumCPU())+0.5 {
		t.Errorf("scale-out CPU per second = %v, want within (0, %d]", perS, runtime.NumCPU())
	}

	md, err := os.ReadFile(filepath.Join(out, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{beginMarker, endMarker, "| scale-out |", "| rolling update |", "chart.png", "| per s |",
		"| raw / raw_plain |", "| in-place update |", "| writes by the controller |"} {
		if !strings.Contains(string(md), s) {
			t.Errorf("README.md lacks %q", s)
		}
	}
	pngData, err := os.ReadFile(filepath.Join(out, "chart.png"))
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(pngData))
	if err != nil {
		t.Fatalf("chart.png: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 400 || b.Dy() < 200 {
		t.Errorf("chart.png is %v", b)
	}
}
