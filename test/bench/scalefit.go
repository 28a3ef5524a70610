package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// scaleFit is how one measure of one party grows with the pods: its value
// and its value per pod at each size, the exponent k of value ~ c * pods^k
// (least squares on the logarithms: 0 is flat, 1 linear, 2 quadratic), what
// that says in words, and the straight line value ~ fixed + slope * pods
// (least squares), whose slope is the cost of one more pod.
type scaleFit struct {
	Party    string    `json:"party"`
	Measure  string    `json:"measure"`
	Unit     string    `json:"unit"`
	Pods     []int     `json:"pods"`
	Values   []float64 `json:"values"`
	PerPod   []float64 `json:"per_pod"`
	Exponent float64   `json:"exponent"`
	Growth   string    `json:"growth"`
	Fixed    float64   `json:"fixed"`
	Slope    float64   `json:"slope"`
}

// The words for an exponent.
const (
	growthFlat      = "flat"
	growthSublinear = "sublinear"
	growthLinear    = "linear"
	growthWorse     = "worse than linear"
)

// growthOf names an exponent: below 0.25 the measure barely moves with the
// pods; up to 0.85 a fixed part dominates; to 1.15 each pod costs the same
// at every size; above, each pod costs more the more there are.
func growthOf(k float64) string {
	switch {
	case k < 0.25:
		return growthFlat
	case k < 0.85:
		return growthSublinear
	case k <= 1.15:
		return growthLinear
	}
	return growthWorse
}

// fitPoints fits values against pods (sizes with no value are left out).
func fitPoints(party, measure, unit string, pods []int, values []float64) scaleFit {
	f := scaleFit{Party: party, Measure: measure, Unit: unit, Pods: pods, Values: values}
	var lx, ly, xs []float64
	for i, p := range pods {
		f.PerPod = append(f.PerPod, round(values[i]/float64(p), 6))
		if values[i] > 0 {
			lx, ly = append(lx, math.Log(float64(p))), append(ly, math.Log(values[i]))
		}
		xs = append(xs, float64(p))
	}
	if len(lx) >= 2 {
		f.Exponent, _ = leastSquares(lx, ly)
		f.Exponent = round(f.Exponent, 2)
		f.Growth = growthOf(f.Exponent)
	}
	if len(xs) >= 2 {
		slope, fixed := leastSquares(xs, values)
		f.Slope, f.Fixed = round(slope, 6), round(fixed, 2)+0 // +0: no "-0" in the README
	}
	return f
}

// leastSquares returns the slope and intercept of the line through (x, y)
// that minimises the squared errors.
func leastSquares(x, y []float64) (slope, intercept float64) {
	n := float64(len(x))
	var sx, sy, sxx, sxy float64
	for i := range x {
		sx, sy, sxx, sxy = sx+x[i], sy+y[i], sxx+x[i]*x[i], sxy+x[i]*y[i]
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return 0, sy / n
	}
	slope = (n*sxy - sx*sy) / d
	return slope, (sy - slope*sx) / n
}

// The measures fitted, per party.
const (
	measureControllerCPU = "controller_cpu_s"
	measurePeakRSS       = "peak_rss_mib"
	measureRestCPU       = "steady_state_controller_cpu_s"
)

// timeMeasure is the measure of a scenario's wall time.
func timeMeasure(scenario string) string { return scenario + "_s" }

// fit fills sr.Fits from its points, and sr.Capacity from them and the
// manager's limits (nil: not known).
func (sr *scaleResults) fit(limits *corev1.ResourceList) {
	sr.Fits = nil
	pods := make([]int, len(sr.Points))
	for i, p := range sr.Points {
		pods[i] = p.Pods
	}
	series := func(party string, get func(scalePoint) (float64, bool)) ([]int, []float64) {
		var ps []int
		var vs []float64
		for i, p := range sr.Points {
			if v, ok := get(p); ok {
				ps, vs = append(ps, pods[i]), append(vs, v)
			}
		}
		return ps, vs
	}
	add := func(party, measure, unit string, get func(scalePoint) (float64, bool)) {
		if ps, vs := series(party, get); len(ps) >= 2 {
			sr.Fits = append(sr.Fits, fitPoints(party, measure, unit, ps, vs))
		}
	}
	for _, party := range scaleParties {
		for _, sc := range []string{scaleOut, rollingUpdate, scaleIn} {
			add(party, timeMeasure(sc), "s", func(p scalePoint) (float64, bool) { v, ok := p.TimeS[party][sc]; return v, ok })
		}
		if _, ok := controllerProc[party]; !ok {
			continue
		}
		add(party, measureControllerCPU, "CPU-s", func(p scalePoint) (float64, bool) {
			m, ok := p.ControllerCPUS[party]
			return sum(m), ok
		})
		add(party, measureRestCPU, "CPU-s", func(p scalePoint) (float64, bool) {
			v, ok := p.ControllerCPUS[party][steadyState]
			return v, ok
		})
		add(party, measurePeakRSS, "MiB", func(p scalePoint) (float64, bool) { v, ok := p.PeakRSSMiB[party]; return v, ok })
	}
	sr.Capacity = sr.capacity(limits)
}

// fitOf returns the fit of party's measure, or nil.
func (sr *scaleResults) fitOf(party, measure string) *scaleFit {
	for i := range sr.Fits {
		if sr.Fits[i].Party == party && sr.Fits[i].Measure == measure {
			return &sr.Fits[i]
		}
	}
	return nil
}

// scaleCapacity is what one manager handles within its limits, from the
// curve: the pods whose fitted peak RSS stays under 90% of the memory limit
// (memlimit.Fraction: the rest is the runtime's), and the pods a second
// its CPU limit lets it move in a rolling update at the largest size's cost
// per pod, and what it spends at rest.
type scaleCapacity struct {
	CPULimitCores  float64 `json:"cpu_limit_cores"`
	MemoryLimitMiB float64 `json:"memory_limit_mib"`
	// RSS ~ FixedMiB + KiBPerPod * pods: the manager's peak over the curve.
	FixedMiB         float64 `json:"rss_fixed_mib"`
	KiBPerPod        float64 `json:"rss_kib_per_pod"`
	PodsWithinMemory int     `json:"pods_within_memory"`
	// RollingMsPerPod: the manager's CPU per pod in the largest size's rolling update.
	RollingMsPerPod float64 `json:"rolling_update_cpu_ms_per_pod"`
	// RollingPodsPerS: the pods a second that CPU limit allows in a rolling update.
	RollingPodsPerS float64 `json:"rolling_update_pods_per_s_at_cpu_limit"`
	// RestCoresPer10k: the manager's CPU at rest (steady state), in cores, per 10,000 pods.
	RestCoresPer10k float64 `json:"rest_cores_per_10k_pods"`
	LargestPods     int     `json:"largest_pods"`
}

func (sr *scaleResults) capacity(limits *corev1.ResourceList) *scaleCapacity {
	rss := sr.fitOf(partyMyDeployment, measurePeakRSS)
	if limits == nil || rss == nil || len(sr.Points) == 0 {
		return nil
	}
	c := &scaleCapacity{CPULimitCores: limits.Cpu().AsApproximateFloat64(),
		MemoryLimitMiB: limits.Memory().AsApproximateFloat64() / (1 << 20)}
	c.FixedMiB, c.KiBPerPod = rss.Fixed, round(rss.Slope*1024, 2)
	if rss.Slope > 0 {
		c.PodsWithinMemory = int((c.MemoryLimitMiB*0.9 - rss.Fixed) / rss.Slope)
	}
	last := sr.Points[len(sr.Points)-1]
	c.LargestPods = last.Pods
	if cpu, ok := last.ControllerCPUS[partyMyDeployment][rollingUpdate]; ok && cpu > 0 {
		c.RollingMsPerPod = round(cpu/float64(last.Pods)*1000, 3)
		c.RollingPodsPerS = round(c.CPULimitCores/(cpu/float64(last.Pods)), 0)
	}
	if cpu, ok := last.ControllerCPUS[partyMyDeployment][steadyState]; ok && sr.Settings != nil && sr.Settings.SyncPeriodS > 0 {
		window := sr.Settings.SyncPeriodS*2 + sr.Settings.SyncPeriodS/4 // as steady() waits
		c.RestCoresPer10k = round(cpu/window/float64(last.Pods)*10_000, 4)
	}
	return c
}

// managerLimits reads the manager container's resource limits from
// config/manager/manager.yaml under root (nil when it cannot).
func managerLimits(root string) *corev1.ResourceList {
	data, err := os.ReadFile(filepath.Join(root, "config", "manager", "manager.yaml"))
	if err != nil {
		return nil
	}
	for _, doc := range bytes.Split(data, []byte("\n---")) {
		var d appsv1.Deployment
		if yaml.Unmarshal(doc, &d) != nil || d.Kind != "Deployment" {
			continue
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.Name == "manager" && len(c.Resources.Limits) > 0 {
				return &c.Resources.Limits
			}
		}
	}
	return nil
}
