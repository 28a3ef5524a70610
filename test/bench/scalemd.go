package main

import (
	"fmt"
	"strings"
)

// The markers of the scale curve's section in README.md.
const (
	scaleBegin = "<!-- BEGIN GENERATED SCALE (go run ./test/bench --scale-pods ...) -->"
	scaleEnd   = "<!-- END GENERATED SCALE -->"
)

// measureNames are the measures as the README names them.
var measureNames = map[string]string{
	timeMeasure(scaleOut): "scale-out time", timeMeasure(rollingUpdate): "rolling update time",
	timeMeasure(scaleIn): "scale-in time", measureControllerCPU: "controller CPU, its windows",
	measureRestCPU: "controller CPU at rest", measurePeakRSS: "controller peak RSS",
}

func (sr *scaleResults) markdown() string {
	var sb strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&sb, format, a...) }
	s := sr.Settings
	p("\nRun %s (%s): one round at each size, on a fresh cluster each, %d replicas an object (more objects, not "+
		"larger ones), parties %s; whole run %.0f s. Each size's own results.json and README section are in "+
		"`bin/bench-scale/<pods>` of the run.\n\n", sr.Date, sr.Versions["mydeployment-operator"], s.Replicas,
		strings.Join(scaleParties, ", "), sr.RunS)
	p("![wall time, controller CPU and peak RSS against pods](scale.svg)\n\n")
	p("| pods | objects | party | scale-out | rolling update | scale-in | controller CPU, its windows | CPU a pod | peak RSS | RSS a pod | load (start, end) |\n")
	p("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, pt := range sr.Points {
		load := ""
		if len(pt.Load) > 0 {
			load = pt.Load[0].Start + "; " + pt.Load[len(pt.Load)-1].End
		}
		for _, party := range scaleParties {
			t := pt.TimeS[party]
			secs := func(sc string) string {
				if v, ok := t[sc]; ok {
					return fmt.Sprintf("%.1f s", v)
				}
				return ""
			}
			cpu, rss := "", ""
			cpuPod, rssPod := "", ""
			if m, ok := pt.ControllerCPUS[party]; ok {
				c := sum(m)
				cpu, cpuPod = fmt.Sprintf("%.1f CPU-s", c), fmt.Sprintf("%.2f ms", c/float64(pt.Pods)*1000)
			}
			if v, ok := pt.PeakRSSMiB[party]; ok {
				rss, rssPod = fmt.Sprintf("%.1f MiB", v), fmt.Sprintf("%.1f KiB", v*1024/float64(pt.Pods))
			}
			p("| %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", pt.Pods, pt.Objects, party,
				secs(scaleOut), secs(rollingUpdate), secs(scaleIn), cpu, cpuPod, rss, rssPod, load)
		}
	}
	p("\nHow each measure grows: k is the exponent of value ~ pods^k fitted over the sizes (0 flat, 1 linear, 2 " +
		"quadratic); the line is value ~ fixed + slope x pods (least squares), its slope the cost of one more pod. " +
		"The controller's CPU is our manager's for MyDeployment and kube-controller-manager's (every controller of it) " +
		"for Deployment, in the party's own windows; its peak RSS is our manager's over its run and " +
		"kube-controller-manager's over the size's whole run.\n\n")
	p("| party | measure | per pod at each size | k | growth | fixed + slope x pods |\n|---|---|---|---|---|---|\n")
	for _, f := range sr.Fits {
		per := make([]string, len(f.PerPod))
		for i, v := range f.PerPod {
			per[i] = perPodCell(v, f.Unit)
		}
		p("| %s | %s | %s | %.2f | %s | %.1f %s + %s x pods |\n", f.Party, measureNames[f.Measure], strings.Join(per, ", "),
			f.Exponent, f.Growth, f.Fixed, f.Unit, perPodCell(f.Slope, f.Unit))
	}
	p("\n")
	sr.capacityMarkdown(p)
	p("Settings: client QPS %g / burst %d for every party; kube-controller-manager --concurrent-deployment-syncs=%d "+
		"--concurrent-replicaset-syncs=%d, our manager --workers %d --sync-period %gs; kwok pod workers %d; %d nodes; "+
		"RollingUpdate 25%%/25%%.\n", s.QPS, s.Burst, s.Workers, s.Workers, s.ManagerWorkers, s.SyncPeriodS, s.KwokPodWork, s.Nodes)
	if s.BindPods {
		p("Pods are bound: every party's pod template names its node (nodeName, the objects round-robin over the " +
			"nodes), so kube-scheduler places none and the curve measures the controllers and the API server " +
			"(on 2 cores the scheduler placed ~15 pods a second at 30,000). The run of record keeps the scheduler.\n")
	}
	p("Machine: ")
	writeMap(&sb, sr.Machine)
	p(".\n")
	return sb.String()
}

// perPodCell is a per-pod value in a unit a reader can picture.
func perPodCell(v float64, unit string) string {
	switch unit {
	case "s", "CPU-s":
		return fmt.Sprintf("%.3f ms", v*1000)
	case "MiB":
		return fmt.Sprintf("%.2f KiB", v*1024)
	}
	return fmt.Sprintf("%g %s", v, unit)
}

// capacityMarkdown says, from the curve, how many pods one manager handles
// within its default limits, and what to do past that.
func (sr *scaleResults) capacityMarkdown(p func(string, ...any)) {
	c := sr.Capacity
	if c == nil {
		p("**How many pods one manager handles**: not known from this run (no fit of our manager's peak RSS, or no " +
			"limits in config/manager/manager.yaml).\n\n")
		return
	}
	s := sr.Settings
	p("**How many pods one manager handles.** At its default limits (%s CPU, %.0f MiB memory: "+
		"config/manager/manager.yaml) and the benchmark's flags (`--workers %d --kube-api-qps %g --kube-api-burst %d`): "+
		"its peak RSS grew as %.1f MiB + %.2f KiB a pod over this curve, so it holds **about %s pods** within 90%% of its "+
		"memory limit (the Go runtime's soft limit: memlimit). ", fmtCores(c.CPULimitCores), c.MemoryLimitMiB,
		s.ManagerWorkers, s.QPS, s.Burst, c.FixedMiB, c.KiBPerPod, thousands(c.PodsWithinMemory))
	if c.RollingMsPerPod > 0 {
		p("Its CPU in the rolling update of %s pods was %.2f ms a pod, so at %s it rolls at most about **%.0f pods a "+
			"second**, however fast the API server is. ", thousands(c.LargestPods), c.RollingMsPerPod, fmtCores(c.CPULimitCores), c.RollingPodsPerS)
	}
	if c.RestCoresPer10k > 0 {
		p("At rest (resyncs only) it spent %.4f cores per 10,000 pods. ", c.RestCoresPer10k)
	}
	p("\n\nPast that, in this order: raise the memory limit (the manager's pod cache grows with the pods, so memory " +
		"is the first limit; `GOMEMLIMIT` follows the container's limit); raise `--kube-api-qps` and `--kube-api-burst` " +
		"(the defaults, 50 and 100, pace pod creates and deletes long before its CPU does) and the CPU limit; raise " +
		"`--workers` when many objects roll at once (one sync does what a Deployment sync and a ReplicaSet sync do); " +
		"and past what one process holds, run one manager per tenant, each installed for its own namespaces " +
		"(`WATCH_NAMESPACE`, or OLM's OwnNamespace, SingleNamespace and MultiNamespace install modes: " +
		"[install](../install.md)), so that each caches only its tenants' pods.\n\n")
}

func fmtCores(c float64) string {
	if c < 1 {
		return fmt.Sprintf("%.0fm", c*1000)
	}
	return fmt.Sprintf("%g cores", c)
}

// thousands writes n with a comma every three digits (43,088).
func thousands(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
