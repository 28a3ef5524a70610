package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mydeployment-io/mydeployment-operator/test/utils"
)

// Canary analysis (issue 45) against a real Prometheus engine: an
// exporter in this process serves each revision's success ratio and p99
// latency as the spec sets them; bin/e2e-prometheus (Prometheus' scrape
// parser, TSDB and PromQL engine) scrapes it every 250 ms and answers the
// manager's queries. Intervals are short (2 s, count 2) to keep the specs
// quick: each takes 15-30 s.

// revisionHealth is what the exporter says of each revision, by name.
type revisionHealth struct {
	mu      sync.Mutex
	ratio   map[string]float64
	latency map[string]float64
}

func (h *revisionHealth) set(rev string, ratio, latency float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ratio[rev], h.latency[rev] = ratio, latency
}

func (h *revisionHealth) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, _ = fmt.Fprintln(w, "# TYPE e2e_success_ratio gauge")
	for rev, v := range h.ratio {
		_, _ = fmt.Fprintf(w, "e2e_success_ratio{revision=%q} %g\n", rev, v)
	}
	_, _ = fmt.Fprintln(w, "# TYPE e2e_latency_p99_seconds gauge")
	for rev, v := range h.latency {
		_, _ = fmt.Fprintf(w, "e2e_latency_p99_seconds{revision=%q} %g\n", rev, v)
	}
}

// e2ePrometheus runs bin/e2e-prometheus on one address and data directory,
// stopped and started again by the outage spec.
type e2ePrometheus struct {
	addr, target, data, log string
	proc                    *utils.Process
}

func (p *e2ePrometheus) start() {
	GinkgoHelper()
	var err error
	p.proc, err = utils.Start("e2e-prometheus", p.log, nil, filepath.Join(projectDir, "bin", "e2e-prometheus"),
		"--listen="+p.addr, "--target="+p.target, "--data="+p.data, "--scrape-interval=250ms")
	Expect(err).NotTo(HaveOccurred())
	Eventually(func() error {
		resp, err := http.Get("http://" + p.addr + "/-/ready")
		if err == nil {
			_ = resp.Body.Close()
		}
		return err
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
}

// mdChange is one change of a MyDeployment a watch saw: the canary step
// recorded (from 1; 0 when none), the abort record, the Analysis
// condition's reason.
type mdChange struct {
	at       time.Time
	step     int
	aborted  string
	analysis string
}

// mdWatch keeps every change of one MyDeployment (kubectl get -w).
type mdWatch struct {
	mu      sync.Mutex
	changes []mdChange
	end     func()
}

func watchMD(ns, name string) *mdWatch {
	GinkgoHelper()
	w := &mdWatch{}
	w.end = streamKubectl(func(line string) {
		f := strings.Split(line, "|")
		if len(f) != 3 {
			return
		}
		c := mdChange{at: time.Now(), aborted: f[1], analysis: f[2]}
		var rec struct {
			Step int `json:"step"`
		}
		if json.Unmarshal([]byte(f[0]), &rec) == nil {
			c.step = rec.Step
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		w.changes = append(w.changes, c)
	}, "-n", ns, "get", "md", name, "-w", "-o",
		`jsonpath={.metadata.annotations.apps\.mydeployment\.io/canary-step}|{.metadata.annotations.apps\.mydeployment\.io/aborted-revision}|{.status.conditions[?(@.type=="Analysis")].reason}{"\n"}`)
	return w
}

// stop ends the watch (the kubectl it started) and returns what it saw.
func (w *mdWatch) stop() []mdChange {
	w.end()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.changes
}

// stepsSeen are the distinct steps of changes in order, and when each was first seen.
func stepsSeen(changes []mdChange) (steps []int, at []time.Time) {
	for _, c := range changes {
		if len(steps) == 0 || steps[len(steps)-1] != c.step {
			steps, at = append(steps, c.step), append(at, c.at)
		}
	}
	return steps, at
}

var _ = Describe("MyDeployment canary analysis against a real Prometheus engine", Ordered, func() {
	const (
		ns       = "e2e-analysis"
		replicas = 4
		interval = 2 * time.Second
	)
	var (
		health = &revisionHealth{ratio: map[string]float64{}, latency: map[string]float64{}}
		prom   *e2ePrometheus
	)
	BeforeAll(func() {
		utils.MustKubectl("create", "namespace", ns)
		exporter := httptest.NewServer(health)
		DeferCleanup(exporter.Close)
		port, err := utils.FreePort()
		Expect(err).NotTo(HaveOccurred())
		dir := GinkgoT().TempDir()
		prom = &e2ePrometheus{addr: fmt.Sprintf("127.0.0.1:%d", port), target: exporter.URL + "/metrics",
			data: filepath.Join(dir, "data"), log: filepath.Join(projectDir, "bin", "e2e-prometheus.log")}
		prom.start()
		DeferCleanup(func() { prom.proc.Stop() })
	})
	AfterAll(func() {
		_, _ = utils.Kubectl("delete", "namespace", ns, "--wait=false")
	})
	get := func(name, jsonpath string) func() string { return utils.JSONPath(jsonpath, "-n", ns, "md", name) }
	// live lists the revision of each pod of name that is not terminating.
	live := func(name string) []string {
		out := utils.MustKubectl("-n", ns, "get", "pods", "-l", "app="+name, "-o",
			`jsonpath={range .items[*]}{.metadata.deletionTimestamp}|{.metadata.labels.controller-revision-hash}{"\n"}{end}`)
		var revs []string
		for _, l := range utils.GetNonEmptyLines(out) {
			if deleting, rev, _ := strings.Cut(l, "|"); deleting == "" {
				revs = append(revs, rev)
			}
		}
		return revs
	}
	// update creates name under canary steps and analysis, waits for it
	// to be available, marks its stable revision healthy, starts a watch
	// of it and a new template, and returns the stable and update
	// revisions; the update revision's health is the caller's.
	update := func(name string) (w *mdWatch, stable, updated string) {
		GinkgoHelper()
		analysis := fmt.Sprintf(`{"prometheus":"http://%s","interval":"%s","count":2,"failureLimit":0,"queries":[`+
			`{"name":"success-rate","query":"e2e_success_ratio{revision=\"{{revision}}\"}","threshold":">= 0.99"},`+
			`{"name":"latency","query":"max(e2e_latency_p99_seconds{revision=\"{{revision}}\"})","threshold":"<= 0.3"}]}`,
			prom.addr, interval)
		utils.MustApply(fmt.Sprintf(`apiVersion: apps.mydeployment.io/v1beta1
kind: MyDeployment
metadata:
  name: %[1]s
  namespace: %[2]s
  annotations:
    apps.mydeployment.io/canary-steps: "25%%, 50%%, 100%%"
    apps.mydeployment.io/analysis: '%[3]s'
spec:
  replicas: %[4]d
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      containers: [{name: web, image: "nginx:1.27"}]
`, name, ns, analysis, replicas))
		Eventually(get(name, "{.status.availableReplicas}"), 2*time.Minute, 250*time.Millisecond).Should(Equal(fmt.Sprint(replicas)))
		stable = get(name, "{.status.currentRevision}")()
		Expect(stable).NotTo(BeEmpty())
		health.set(stable, 1, 0.1)
		w = watchMD(ns, name)
		utils.MustKubectl("-n", ns, "patch", "md", name, "--type=merge", "-p",
			`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.28"}]}}}}`)
		Eventually(get(name, "{.status.updateRevision}"), 30*time.Second, 100*time.Millisecond).ShouldNot(Equal(stable))
		return w, stable, get(name, "{.status.updateRevision}")()
	}
	atStep := func(name string, step int) {
		GinkgoHelper()
		Eventually(get(name, `{.metadata.annotations.apps\.mydeployment\.io/canary-step}`), time.Minute, 100*time.Millisecond).
			Should(ContainSubstring(fmt.Sprintf(`"step":%d`, step)))
	}
	complete := func(name, updated string) {
		GinkgoHelper()
		Eventually(func(g Gomega) {
			g.Expect(get(name, "{.status.currentRevision}")()).To(Equal(updated))
			g.Expect(get(name, "{.status.availableReplicas}")()).To(Equal(fmt.Sprint(replicas)))
			g.Expect(live(name)).To(And(HaveLen(replicas), HaveEach(updated)))
		}, 2*time.Minute, 250*time.Millisecond).Should(Succeed())
	}

	It("promotes a healthy canary through its three steps, each only after two passing measurements", func() {
		start := time.Now()
		w, _, updated := update("healthy")
		health.set(updated, 0.999, 0.12)
		complete("healthy", updated)
		steps, at := stepsSeen(w.stop())
		By(fmt.Sprintf("steps seen %v, in %s", steps, time.Since(start).Round(100*time.Millisecond)))
		Expect(steps).To(ContainElements(1, 2, 3, 4), "every step recorded, then all done")
		i := 0
		for ; steps[i] != 1; i++ {
		}
		Expect(steps[i:i+3]).To(Equal([]int{1, 2, 3}), "in order, none skipped")
		for j := i; j < i+2; j++ {
			// The first measurement an interval after the step began, the second an interval later.
			Expect(at[j+1].Sub(at[j])).To(BeNumerically(">=", 2*interval-300*time.Millisecond),
				"step %d ended after %s, before its two measurements", steps[j], at[j+1].Sub(at[j]))
		}
		Expect(get("healthy", `{.status.conditions[?(@.type=="Analysis")].reason}`)()).To(Equal("AnalysisPassed"))
	})

	It("aborts to stable within one interval when the error rate crosses the threshold at step 2", func() {
		start := time.Now()
		w, stable, updated := update("failing")
		health.set(updated, 0.999, 0.12)
		atStep("failing", 2)
		health.set(updated, 0.9, 0.12)
		crossed := time.Now()
		Eventually(get("failing", `{.metadata.annotations.apps\.mydeployment\.io/aborted-revision}`), time.Minute, 50*time.Millisecond).
			Should(Equal(updated))
		took := time.Since(crossed)
		By(fmt.Sprintf("aborted %s after the error rate crossed the threshold (interval %s)", took.Round(10*time.Millisecond), interval))
		Expect(took).To(BeNumerically("<=", interval+2*time.Second), "the next measurement aborts: within one interval, a scrape and a sync")
		Eventually(func(g Gomega) {
			g.Expect(live("failing")).To(And(HaveLen(replicas), HaveEach(stable)))
			g.Expect(get("failing", "{.status.availableReplicas}")()).To(Equal(fmt.Sprint(replicas)))
		}, 2*time.Minute, 250*time.Millisecond).Should(Succeed())
		Expect(get("failing", `{.status.conditions[?(@.type=="Progressing")].reason}`)()).To(Equal("RolloutAborted"))
		Expect(get("failing", `{.status.conditions[?(@.type=="Progressing")].message}`)()).
			To(ContainSubstring("analysis failed: success-rate = 0.9 (wants >= 0.99)"))
		Expect(get("failing", `{.status.conditions[?(@.type=="Analysis")].reason}`)()).To(Equal("AnalysisFailed"))
		Expect(get("failing", "{.status.currentRevision}")()).To(Equal(stable))
		events := utils.MustKubectl("-n", ns, "get", "events", "--field-selector", "reason=AnalysisFailed,involvedObject.name=failing",
			"-o", "jsonpath={.items[*].message}")
		Expect(events).To(ContainSubstring("success-rate = 0.9 (wants >= 0.99)"))
		steps, _ := stepsSeen(w.stop())
		Expect(steps).NotTo(ContainElement(3), "never promoted past step 2")
		By(fmt.Sprintf("spec took %s", time.Since(start).Round(100*time.Millisecond)))
	})

	It("holds the step while Prometheus is down (Inconclusive) and resumes when it returns", func() {
		start := time.Now()
		w, _, updated := update("outage")
		health.set(updated, 0.999, 0.12)
		atStep("outage", 2)
		prom.proc.Stop()
		Eventually(get("outage", `{.status.conditions[?(@.type=="Analysis")].reason}`), time.Minute, 100*time.Millisecond).
			Should(Equal("AnalysisInconclusive"))
		Expect(get("outage", `{.status.conditions[?(@.type=="Analysis")].message}`)()).To(ContainSubstring("inconclusive: querying"))
		Consistently(get("outage", `{.metadata.annotations.apps\.mydeployment\.io/canary-step}`), 4*interval, 250*time.Millisecond).
			Should(ContainSubstring(`"step":2`), "held at step 2 while there is no data")
		Expect(get("outage", `{.status.conditions[?(@.type=="Progressing")].reason}`)()).NotTo(Equal("RolloutAborted"))
		prom.start()
		complete("outage", updated)
		steps, _ := stepsSeen(w.stop())
		Expect(steps).To(ContainElements(2, 3))
		By(fmt.Sprintf("spec took %s", time.Since(start).Round(100*time.Millisecond)))
	})
})
