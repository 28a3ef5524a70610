package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The scale curve (`make bench-scale`): the same parties and scenarios at
// several sizes, one round each on a fresh cluster, the same replicas per
// object (more objects, not larger ones), so that what one pod costs can be
// read at each size and how it grows fitted over them.

// scaleParties run at every size: the two controllers, and the raw client
// for scale-out (and the scale-in that clears its pods).
var scaleParties = []string{partyRaw, partyDeployment, partyMyDeployment}

// defaultScalePods are the sizes of `make bench-scale`.
var defaultScalePods = []int{2_000, 10_000, 30_000}

// scaleKwokPodWorkers is kwok's pod workers at every size of the curve: its
// default (4) paces readiness at 30,000 pods (ENVIRONMENT.md measured 16
// cutting a 10,000-pod rolling update from 135 s to 98 s).
const scaleKwokPodWorkers = 16

// scaleResults is scale.json: one point per size, and the fits over them.
type scaleResults struct {
	Points []scalePoint `json:"points"`
	// Fits: per party, per measure, how it grows with pods.
	Fits     []scaleFit        `json:"fits"`
	Capacity *scaleCapacity    `json:"capacity,omitempty"`
	Settings *config           `json:"settings"`
	Machine  map[string]string `json:"machine"`
	Versions map[string]string `json:"versions"`
	RunS     float64           `json:"run_s"`
	Date     string            `json:"date"`
}

// scalePoint is one size's figures, per party: wall times by scenario,
// the controller's CPU seconds in its own windows (our manager;
// kube-controller-manager for Deployment), its peak RSS over the size's
// run, and what every process spent.
type scalePoint struct {
	Pods     int `json:"pods"`
	Objects  int `json:"objects"`
	Replicas int `json:"replicas"`
	// TimeS: party -> scenario -> seconds.
	TimeS map[string]map[string]float64 `json:"time_s"`
	// ControllerCPUS: party -> scenario -> CPU seconds of its controller
	// (our manager; kube-controller-manager) in the window.
	ControllerCPUS map[string]map[string]float64 `json:"controller_cpu_s"`
	// AllCPUS: party -> scenario -> CPU seconds of every process.
	AllCPUS map[string]map[string]float64 `json:"all_cpu_s"`
	// PeakRSSMiB: our manager's (its run at this size), kube-controller-manager's (the size's whole run).
	PeakRSSMiB map[string]float64 `json:"peak_rss_mib"`
	// ManagerHeapPerPodBytes: our manager's live heap per pod once scaled out.
	ManagerHeapPerPodBytes *float64    `json:"manager_heap_per_pod_bytes,omitempty"`
	ReconcilesAtRest       *float64    `json:"mydeployment_reconciles_at_rest,omitempty"`
	Load                   []roundLoad `json:"load_by_round,omitempty"`
	RunS                   float64     `json:"run_s"`
	Date                   string      `json:"date"`
	Commit                 string      `json:"commit,omitempty"`
}

// The controller process of each controller party.
var controllerProc = map[string]string{partyDeployment: "kube-controller-manager", partyMyDeployment: procManager}

// pointOf reads one size's point from its run's results.
func pointOf(r *results) scalePoint {
	s := r.Settings
	p := scalePoint{Pods: s.Objects * s.Replicas, Objects: s.Objects, Replicas: s.Replicas,
		TimeS: map[string]map[string]float64{}, ControllerCPUS: map[string]map[string]float64{},
		AllCPUS: map[string]map[string]float64{}, PeakRSSMiB: map[string]float64{},
		ManagerHeapPerPodBytes: r.ManagerHeapPerPodBytes, ReconcilesAtRest: r.SteadyState.ReconcilesAtRest,
		Load: r.LoadByRound, RunS: r.RunS, Date: r.Date, Commit: r.Versions["mydeployment-operator"]}
	scenarios := map[string]*scenario{scaleOut: &r.ScaleOut, rollingUpdate: &r.RollingUpdate, scaleIn: &r.ScaleIn, steadyState: &r.SteadyState}
	for name, sc := range scenarios {
		for party, t := range map[string]*float64{partyRaw: sc.RawS, partyDeployment: sc.DeploymentS, partyMyDeployment: sc.MyDeploymentS} {
			if t != nil {
				setIn(p.TimeS, party, name, *t)
			}
		}
		for party, cpu := range sc.CPUS {
			setIn(p.AllCPUS, party, name, cpu[procAll])
			if proc, ok := controllerProc[party]; ok {
				setIn(p.ControllerCPUS, party, name, cpu[proc])
			}
		}
	}
	if r.ManagerPeakRSSMiB > 0 {
		p.PeakRSSMiB[partyMyDeployment] = r.ManagerPeakRSSMiB
	}
	if r.KCMPeakRSSMiB > 0 {
		p.PeakRSSMiB[partyDeployment] = r.KCMPeakRSSMiB
	}
	return p
}

func setIn(m map[string]map[string]float64, a, b string, v float64) {
	if m[a] == nil {
		m[a] = map[string]float64{}
	}
	m[a][b] = v
}

// sum is every scenario's value of one party (the controller's CPU over all its windows).
func sum(m map[string]float64) float64 {
	t := 0.0
	for _, v := range m {
		t += v
	}
	return t
}

// scaleConfig is cfg at one size: pods/replicas objects, one round of the
// scale parties, a scenario limit grown with the size, nodes that hold it
// and kwok's pod workers of the curve; its outputs under work/<pods>.
func scaleConfig(cfg *config, pods int, work string) *config {
	c := *cfg
	c.Objects = max(1, pods/c.Replicas)
	c.Rounds = 1
	c.Parties = scaleParties
	c.BindPods = true
	c.Timeout = time.Duration(float64(cfg.Timeout) * max(1, float64(pods)/10_000*1.5))
	c.PodsPerNode = 0
	if need := c.Objects * (c.Replicas + c.Replicas/4 + 1) * 2; c.Nodes*c.PodsPerNode < need {
		c.PodsPerNode = (need + c.Nodes - 1) / c.Nodes
	}
	c.out = filepath.Join(work, strconv.Itoa(pods))
	return &c
}

// runScale runs the benchmark at each size of cfg.ScalePods, writing
// scale.json, scale.svg and README.md's scale section to cfg.out after
// every size (a failure at the largest keeps the others).
func runScale(ctx context.Context, cfg *config) (*scaleResults, error) {
	started := time.Now()
	settings := *cfg
	settings.BindPods = true // as scaleConfig runs every size
	sr := &scaleResults{Settings: &settings}
	work := filepath.Join(cfg.root, "bin", "bench-scale")
	if cfg.commit == "" {
		cfg.commit = describe(cfg.root) // before the first size's outputs change the tree
	}
	for _, pods := range cfg.ScalePods {
		c := scaleConfig(cfg, pods, work)
		logf("scale: %d pods (%d objects x %d replicas, %d nodes of %d pods), outputs in %s", c.Objects*c.Replicas,
			c.Objects, c.Replicas, c.Nodes, c.PodsPerNode, c.out)
		res, err := run(ctx, c)
		if err != nil {
			return sr, fmt.Errorf("%d pods: %w", pods, err)
		}
		sr.Points = append(sr.Points, pointOf(res))
		sr.Machine, sr.Versions = res.Machine, res.Versions
		sr.RunS, sr.Date = round(time.Since(started).Seconds(), 1), time.Now().UTC().Format(time.RFC3339)
		sr.fit(managerLimits(cfg.root))
		if err := sr.write(cfg.out); err != nil {
			return sr, err
		}
	}
	return sr, nil
}

// write puts scale.json, scale.svg and the scale section of README.md in dir.
func (sr *scaleResults) write(dir string) error {
	js, err := json.MarshalIndent(sr, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, "scale.json"), append(js, '\n')); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, "scale.svg"), sr.svg()); err != nil {
		return err
	}
	return updateSection(filepath.Join(dir, "README.md"), scaleBegin, scaleEnd, sr.markdown())
}

// renderScale rewrites scale.svg and the README section in dir from a scale.json.
func renderScale(path, dir string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var sr scaleResults
	if err := json.Unmarshal(data, &sr); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return sr.write(dir)
}

// parsePods reads a comma-separated list of pod counts ("2000,10000,30000").
func parsePods(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("--scale-pods: %q is not a pod count", f)
		}
		if len(out) > 0 && n <= out[len(out)-1] {
			return nil, fmt.Errorf("--scale-pods: sizes must grow (%d after %d)", n, out[len(out)-1])
		}
		out = append(out, n)
	}
	if len(out) < 2 {
		return nil, fmt.Errorf("--scale-pods: a curve needs two sizes at least")
	}
	return out, nil
}

// scaleMain runs the scale curve, or with --render rewrites its outputs
// from a scale.json.
func scaleMain(ctx context.Context, cfg *config) error {
	if cfg.render != "" {
		return renderScale(cfg.render, cfg.out)
	}
	sr, err := runScale(ctx, cfg)
	if err != nil {
		return err
	}
	logf("wrote %s: %d sizes", cfg.out, len(sr.Points))
	return nil
}
