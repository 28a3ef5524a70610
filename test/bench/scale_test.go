package main

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

func TestGrowthFit(t *testing.T) {
	pods := []int{2_000, 10_000, 30_000}
	for _, tc := range []struct {
		name   string
		value  func(p float64) float64
		growth string
		k      float64
	}{
		{"the same at every size", func(float64) float64 { return 8 }, growthFlat, 0},
		{"a fixed part and a little a pod", func(p float64) float64 { return 40 + 0.002*p }, growthSublinear, 0.28},
		{"the same a pod", func(p float64) float64 { return 0.012 * p }, growthLinear, 1},
		{"more a pod the more pods", func(p float64) float64 { return 1e-6 * p * p }, growthWorse, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vs := make([]float64, len(pods))
			for i, p := range pods {
				vs[i] = tc.value(float64(p))
			}
			f := fitPoints(partyMyDeployment, measurePeakRSS, "MiB", pods, vs)
			if f.Growth != tc.growth || math.Abs(f.Exponent-tc.k) > 0.02 {
				t.Errorf("exponent %v (%s), want %v (%s)", f.Exponent, f.Growth, tc.k, tc.growth)
			}
			if got, want := f.PerPod[2], vs[2]/30_000; math.Abs(got-want) > 1e-6 {
				t.Errorf("per pod at 30,000 = %v, want %v", got, want)
			}
		})
	}
	// A straight line's fixed part and slope come back exactly.
	f := fitPoints(partyMyDeployment, measurePeakRSS, "MiB", pods, []float64{44, 60, 100})
	if f.Fixed != 40 || f.Slope != 0.002 {
		t.Errorf("line %v + %v x pods, want 40 + 0.002 x pods", f.Fixed, f.Slope)
	}
}

// scalePointFor is a size's results as a run would give them: MyDeployment's
// rolling update costs 2 ms of its manager's CPU a pod and its RSS grows
// as 40 MiB + 10 KiB a pod; Deployment's rolling update grows with the
// square of the pods.
func scalePointFor(pods int) scalePoint {
	p := float64(pods)
	r := &results{Settings: &config{Objects: pods / 50, Replicas: 50, SyncPeriodS: 30}, Versions: map[string]string{}}
	f := func(v float64) *float64 { return &v }
	r.ScaleOut = scenario{RawS: f(p / 130), DeploymentS: f(p / 90), MyDeploymentS: f(p / 110),
		CPUS: map[string]map[string]float64{partyMyDeployment: {procManager: p / 800, procAll: p / 60},
			partyDeployment: {"kube-controller-manager": p / 400, procAll: p / 40}}}
	r.RollingUpdate = scenario{DeploymentS: f(p * p / 300_000), MyDeploymentS: f(p / 55),
		CPUS: map[string]map[string]float64{partyMyDeployment: {procManager: p * 0.002}}}
	r.SteadyState = scenario{CPUS: map[string]map[string]float64{partyMyDeployment: {procManager: p / 100_000}}}
	r.ManagerPeakRSSMiB, r.KCMPeakRSSMiB = 40+p*10/1024, 300+p*30/1024
	r.LoadByRound = []roundLoad{{Round: 1, Start: "1.00 1.10 1.20", End: "2.00 1.50 1.30"}}
	return pointOf(r)
}

// The scale curve's outputs: scale.json with every size and fit, an SVG a
// browser can draw, and the README section with a row per size and party,
// a row per fit and the capacity sentence, worked out from the limits in
// config/manager/manager.yaml.
func TestScaleOutputs(t *testing.T) {
	sr := &scaleResults{Settings: &config{Replicas: 50, QPS: 500, Burst: 1000, Workers: 5, ManagerWorkers: 10,
		SyncPeriodS: 30, KwokPodWork: 16, Nodes: 10}, Machine: map[string]string{"cpus": "2"},
		Versions: map[string]string{"mydeployment-operator": "abc1234"}, Date: "2026-11-28T12:00:00Z", RunS: 5400}
	for _, pods := range []int{2_000, 10_000, 30_000} {
		sr.Points = append(sr.Points, scalePointFor(pods))
	}
	limits := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("512Mi")}
	sr.fit(&limits)

	rss := sr.fitOf(partyMyDeployment, measurePeakRSS)
	if rss == nil || math.Abs(rss.Fixed-40) > 0.01 || math.Abs(rss.Slope*1024-10) > 0.01 {
		t.Fatalf("our RSS fit %+v, want 40 MiB + 10 KiB a pod", rss)
	}
	if f := sr.fitOf(partyDeployment, timeMeasure(rollingUpdate)); f == nil || f.Growth != growthWorse {
		t.Errorf("Deployment's rolling update fit %+v, want worse than linear", f)
	}
	if f := sr.fitOf(partyMyDeployment, timeMeasure(rollingUpdate)); f == nil || f.Growth != growthLinear {
		t.Errorf("our rolling update fit %+v, want linear", f)
	}
	if f := sr.fitOf(partyRaw, measurePeakRSS); f != nil {
		t.Errorf("the raw client has no controller, yet a fit of its RSS: %+v", f)
	}
	c := sr.Capacity
	// (0.9 x 512 MiB - 40 MiB) / 10 KiB = 43,089 pods; 0.5 cores / 2 ms = 250 pods a second.
	if c == nil || c.PodsWithinMemory < 43_085 || c.PodsWithinMemory > 43_090 || c.RollingPodsPerS != 250 || c.RollingMsPerPod != 2 {
		t.Fatalf("capacity %+v, want about 43,089 pods within memory and 250 pods a second at 500m", c)
	}

	dir := t.TempDir()
	readme := filepath.Join(dir, "README.md")
	if err := os.WriteFile(readme, []byte("# Benchmarks\n\nby hand\n\n"+scaleBegin+"\nold\n"+scaleEnd+"\n\nafter\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := sr.write(dir); err != nil {
		t.Fatal(err)
	}
	var back scaleResults
	data, err := os.ReadFile(filepath.Join(dir, "scale.json"))
	if err != nil || json.Unmarshal(data, &back) != nil || len(back.Points) != 3 || len(back.Fits) != len(sr.Fits) {
		t.Fatalf("scale.json: %v, %d points, %d fits", err, len(back.Points), len(back.Fits))
	}
	svg, err := os.ReadFile(filepath.Join(dir, "scale.svg"))
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(strings.NewReader(string(svg)))
	for {
		if _, err := dec.Token(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("scale.svg is not well-formed: %v", err)
		}
	}
	for _, s := range []string{"wall time", "controller peak RSS", "MyDeployment rolling update", "30000"} {
		if !strings.Contains(string(svg), s) {
			t.Errorf("scale.svg lacks %q", s)
		}
	}
	md, _ := os.ReadFile(readme)
	for _, s := range []string{"by hand", "after", "![wall time, controller CPU and peak RSS against pods](scale.svg)",
		"| 30000 | 600 | mydeployment |", "| 2000 | 40 | raw |", "| deployment | rolling update time |",
		"worse than linear", "about 43,088 pods", "about **250 pods a second**", "rolling update of 30,000 pods", "WATCH_NAMESPACE", "1.00 1.10 1.20; 2.00 1.50 1.30"} {
		if !strings.Contains(string(md), s) {
			t.Errorf("README lacks %q:\n%s", s, md)
		}
	}
	if strings.Contains(string(md), "\nold\n") {
		t.Error("the old section was kept")
	}
}

func TestParsePods(t *testing.T) {
	if got, err := parsePods("2000, 10000,30000"); err != nil || len(got) != 3 || got[2] != 30_000 {
		t.Errorf("parsePods = %v, %v", got, err)
	}
	for _, bad := range []string{"2000", "2000,1000", "2000,x", "0,10"} {
		if _, err := parsePods(bad); err == nil {
			t.Errorf("parsePods(%q): no error", bad)
		}
	}
}

func TestScaleConfig(t *testing.T) {
	cfg, err := parseFlags([]string{"--size", "full", "--scale-pods", "2000,30000", "--root", t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.KwokPodWork != scaleKwokPodWorkers {
		t.Errorf("kwok pod workers %d, want the curve's %d", cfg.KwokPodWork, scaleKwokPodWorkers)
	}
	c := scaleConfig(cfg, 30_000, "/work")
	if c.Objects != 600 || c.Replicas != 50 || c.Rounds != 1 || c.Timeout < cfg.Timeout*4 {
		t.Errorf("30,000 pods: %d x %d, %d rounds, limit %s", c.Objects, c.Replicas, c.Rounds, c.Timeout)
	}
	if c.Nodes*c.PodsPerNode < 30_000*5/4 || podCIDRPrefix(c.PodsPerNode) > 19 {
		t.Errorf("%d nodes of %d pods (/%d) cannot hold a rolling update of 30,000", c.Nodes, c.PodsPerNode, podCIDRPrefix(c.PodsPerNode))
	}
	if podCIDRPrefix(2520) != 20 {
		t.Errorf("the full benchmark's nodes changed CIDR: /%d", podCIDRPrefix(2520))
	}
	if !c.BindPods || cfg.BindPods {
		t.Errorf("bind pods: the curve's %v (want true), the run of record's %v (want false)", c.BindPods, cfg.BindPods)
	}
	if c.out != "/work/30000" || strings.Join(c.Parties, ",") != "raw,deployment,mydeployment" {
		t.Errorf("out %s, parties %v", c.out, c.Parties)
	}
}

// Every party's objects spread alike over the nodes, round-robin, and each
// object's template (so each of its pods) names its node.
func TestSpreadBindsObjectsRoundRobin(t *testing.T) {
	objects := []string{"a-000", "a-001", "a-002", "a-003", "a-004"}
	on := spread(objects, []string{"n0", "n1"})
	for i, want := range []string{"n0", "n1", "n0", "n1", "n0"} {
		if on[objects[i]] != want {
			t.Errorf("%s on %q, want %s", objects[i], on[objects[i]], want)
		}
	}
	if spread(objects, nil) != nil {
		t.Errorf("no nodes: want the pods left to the scheduler")
	}
	b := &bench{cfg: &config{Replicas: 4}}
	for _, party := range []string{partyDeployment, partyMyDeployment} {
		ps := &partyState{name: party, ns: "bench", nodeOf: on}
		obj := b.object(ps, "a-003")
		var node string
		switch o := obj.(type) {
		case *appsv1.Deployment:
			node = o.Spec.Template.Spec.NodeName
		case *appsv1beta1.MyDeployment:
			node = o.Spec.Template.Spec.NodeName
		}
		if node != "n1" {
			t.Errorf("%s: template nodeName %q, want n1", party, node)
		}
	}
}
