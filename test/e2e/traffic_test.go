package e2e

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/weights"
	"github.com/mydeployment-io/mydeployment-operator/test/utils"
)

// watchRoute keeps every version of an HTTPRoute's first rule (kubectl
// get -w) as "backend=weight,...|filter header": what the route said at
// each write, not just where it ended. (kubectl's watch printed only the
// first version with a jsonpath {range}, so the lists come whole, as JSON.)
func watchRoute(ns, name string) *lineLog {
	GinkgoHelper()
	return watchLines(routeVersion, "-n", ns, "get", "httproute", name, "-w", "-o",
		`jsonpath={.spec.rules[0].backendRefs}|{.spec.rules[0].filters}{"\n"}`)
}

// routeVersion is a line of the watch ("<backendRefs JSON>|<filters
// JSON>") as "backend=weight,...|header,...".
func routeVersion(line string) string {
	refsJSON, filtersJSON, _ := strings.Cut(line, "|")
	var refs []struct {
		Name   string `json:"name"`
		Weight *int   `json:"weight"`
	}
	var filters []struct {
		RequestHeaderModifier struct {
			Add []struct {
				Name string `json:"name"`
			} `json:"add"`
		} `json:"requestHeaderModifier"`
	}
	if json.Unmarshal([]byte(refsJSON), &refs) != nil || (filtersJSON != "" && json.Unmarshal([]byte(filtersJSON), &filters) != nil) {
		return "unreadable: " + line
	}
	var b strings.Builder
	for _, r := range refs {
		b.WriteString(r.Name + "=")
		if r.Weight != nil {
			b.WriteString(strconv.Itoa(*r.Weight))
		}
		b.WriteString(",")
	}
	b.WriteString("|")
	for _, f := range filters {
		for _, h := range f.RequestHeaderModifier.Add {
			b.WriteString(h.Name + ",")
		}
	}
	return b.String()
}

// canaryWeights are the canary's weights in the route versions that split
// the traffic (backend <app>-canary), in order.
func canaryWeights(app string, versions []string) []int {
	var weights []int
	for _, v := range versions {
		backends, _, _ := strings.Cut(v, "|")
		for _, b := range strings.Split(backends, ",") {
			if name, weight, ok := strings.Cut(b, "="); ok && name == app+"-canary" {
				w, err := strconv.Atoi(weight)
				Expect(err).NotTo(HaveOccurred(), v)
				weights = append(weights, w)
			}
		}
	}
	return weights
}

// readyPodsOf are the names of the Ready pods of revision in ns, not
// terminating, sorted.
func readyPodsOf(ns, revision string) []string {
	GinkgoHelper()
	var names []string
	for _, l := range utils.GetNonEmptyLines(utils.MustKubectl("-n", ns, "get", "pods", "-l", "controller-revision-hash="+revision, "-o",
		`jsonpath={range .items[*]}{.metadata.name}|{.metadata.deletionTimestamp}|{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`)) {
		if f := strings.Split(l, "|"); len(f) == 3 && f[1] == "" && f[2] == "True" {
			names = append(names, f[0])
		}
	}
	sort.Strings(names)
	return names
}

// serviceEndpoints are the pods a Service's EndpointSlices in ns list as
// ready, sorted.
func serviceEndpoints(ns, service string) []string {
	GinkgoHelper()
	var names []string
	for _, l := range utils.GetNonEmptyLines(utils.MustKubectl("-n", ns, "get", "endpointslices", "-l", "kubernetes.io/service-name="+service, "-o",
		`jsonpath={range .items[*].endpoints[*]}{.targetRef.name}|{.conditions.ready}{"\n"}{end}`)) {
		if f := strings.Split(l, "|"); len(f) == 2 && f[1] == "true" {
			names = append(names, f[0])
		}
	}
	sort.Strings(names)
	return names
}

// addFilterByHand adds a RequestHeaderModifier filter (header X-Added-By)
// to the first rule of route in ns, as a user would with kubectl.
func addFilterByHand(ns, route string) {
	GinkgoHelper()
	utils.MustKubectl("-n", ns, "patch", "httproute", route, "--type=json", "-p",
		`[{"op":"add","path":"/spec/rules/0/filters","value":[{"type":"RequestHeaderModifier","requestHeaderModifier":{"add":[{"name":"X-Added-By","value":"hand"}]}}]}]`)
}

// canaryTrafficOnRoute drives an Application with a route through a
// canary (10%, pause, 50%, pause, 100%) as a user would, in ns, on a
// cluster with the Gateway API CRDs: a filter added to the route by hand
// before the rollout stays in every version of the route; the weights are
// 10 and 50 at the pauses; the stable and canary Services' endpoints
// (written by kube-controller-manager's EndpointSlice controller from the
// pods kwok runs) are exactly each revision's Ready pods at each step; at
// the end the route points at the one Service again, and the two
// Services are gone.
func canaryTrafficOnRoute(ns string) {
	const app = "weighted"
	kubectl := func(args ...string) string {
		GinkgoHelper()
		out, err := utils.Kubectl(append([]string{"-n", ns}, args...)...)
		Expect(err).NotTo(HaveOccurred(), out)
		return out
	}
	get := func(kind, name, jsonpath string) func() string {
		return func() string {
			out, _ := utils.Kubectl("-n", ns, "get", kind, name, "-o", "jsonpath="+jsonpath)
			return out
		}
	}
	readyPods := func(revision string) []string { return readyPodsOf(ns, revision) }
	endpoints := func(service string) []string { return serviceEndpoints(ns, service) }
	// expectEndpoints: the revision Services' endpoints are exactly the
	// Ready pods of their revisions, once the EndpointSlice controller caught
	// up, and stay so.
	expectEndpoints := func(stable, canary string, canaryPods int) {
		GinkgoHelper()
		match := func() bool {
			c, s := readyPods(canary), readyPods(stable)
			return len(c) == canaryPods && strings.Join(endpoints(app+"-canary"), " ") == strings.Join(c, " ") &&
				strings.Join(endpoints(app+"-stable"), " ") == strings.Join(s, " ")
		}
		Eventually(match, time.Minute, 250*time.Millisecond).Should(BeTrue(), "canary %v, stable %v", endpoints(app+"-canary"), endpoints(app+"-stable"))
		Consistently(match, 2*time.Second, 250*time.Millisecond).Should(BeTrue())
	}
	promote := func() {
		GinkgoHelper()
		out, err := utils.Run(exec.Command(filepath.Join(projectDir, "bin", "kubectl-mydeployment"), "-n", ns, "rollout", "promote", app))
		Expect(err).NotTo(HaveOccurred(), out)
	}
	backends := get("httproute", app, `{range .spec.rules[0].backendRefs[*]}{.name}={.weight},{end}`)

	applyRoutedApp(ns, app, map[string]string{appsv1beta1.CanaryStepsAnnotation: "10%, pause, 50%, pause, 100%"})

	By("a filter added to the route by hand, before the rollout")
	addFilterByHand(ns, app)
	watch := watchRoute(ns, app)
	Eventually(watch.seen, 10*time.Second, 100*time.Millisecond).Should(BeNumerically(">", 0))
	stable := get("md", app, "{.status.currentRevision}")()

	By("a new image: step 2, the pause after 10%")
	kubectl("patch", "mdapp", app, "--type=merge", "-p", `{"spec":{"deployment":{"image":"nginx:1.28"}}}`)
	Eventually(backends, time.Minute, 250*time.Millisecond).Should(Equal(app + "-stable=90," + app + "-canary=10,"))
	canary := get("md", app, "{.status.updateRevision}")()
	Expect(canary).NotTo(Equal(stable))
	expectEndpoints(stable, canary, 1)
	Eventually(get("mdapp", app, "{.status.children.httpRoute}"), 30*time.Second, 250*time.Millisecond).
		Should(ContainSubstring("canary traffic: " + app + "-stable 90%, " + app + "-canary 10%"))

	By("promoted: step 4, the pause after 50%")
	promote()
	Eventually(backends, time.Minute, 250*time.Millisecond).Should(Equal(app + "-stable=50," + app + "-canary=50,"))
	expectEndpoints(stable, canary, 5)

	By("promoted: step 5, 100%, completes the rollout; the route points at the one Service again")
	promote()
	Eventually(backends, time.Minute, 250*time.Millisecond).Should(Equal(app + "=1,"))
	Eventually(get("md", app, "{.status.currentRevision}"), time.Minute, 250*time.Millisecond).Should(Equal(canary))
	Eventually(func() string { return kubectl("get", "svc", "-o", "name") }, time.Minute, 250*time.Millisecond).
		ShouldNot(Or(ContainSubstring(app+"-stable"), ContainSubstring(app+"-canary")))
	Eventually(func() []string { return endpoints(app) }, time.Minute, 250*time.Millisecond).Should(Equal(readyPods(canary)))
	Expect(readyPods(canary)).To(HaveLen(10))

	versions := watch.result()
	By("every version of the route kept the filter; the canary's weight only grew: " + strings.Join(versions, " "))
	for _, v := range versions {
		Expect(v).To(HaveSuffix("|X-Added-By,"), "a version of the route without the filter added by hand")
	}
	weights := canaryWeights(app, versions)
	Expect(weights).To(ContainElements(10, 50))
	Expect(sort.IntsAreSorted(weights)).To(BeTrue(), "canary weights %v", weights)
	Expect(versions[len(versions)-1]).To(Equal(app + "=1,|X-Added-By,"))
	Eventually(func() string {
		return kubectl("get", "events", "--field-selector", "involvedObject.name="+app+",reason=TrafficShifted", "-o",
			`jsonpath={range .items[*]}{.note}{.message}{"\n"}{end}`)
	}, 30*time.Second, 250*time.Millisecond).Should(And(ContainSubstring(app+"-stable 50%, "+app+"-canary 50%"),
		ContainSubstring("sends all traffic to Service "+app+" again")))
	kubectl("delete", "mdapp", app, "--wait=true")
}

// weightStepsOnRoute drives an Application with a route through weight
// steps (issue 54: "weight 2%, 1, pause, weight 10%, pause, weight 50%,
// 50%, pause") on 10 replicas, in ns, on a cluster with the Gateway API
// CRDs: the route carries exactly 2/98 with one canary pod and nine
// stable, 10/90 with the same one pod, 50/50 with five; the canary's
// weight only grows; a filter added by hand stays in every version of
// the route; promoted at
// the last pause, the rollout completes and the route points at the one
// Service again.
func weightStepsOnRoute(ns string) {
	const app = "weights"
	get := func(kind, jsonpath string) func() string { return utils.JSONPath(jsonpath, "-n", ns, kind, app) }
	backends := get("httproute", `{range .spec.rules[0].backendRefs[*]}{.name}={.weight},{end}`)
	promote := func() {
		GinkgoHelper()
		out, err := utils.Run(exec.Command(filepath.Join(projectDir, "bin", "kubectl-mydeployment"), "-n", ns, "rollout", "promote", app))
		Expect(err).NotTo(HaveOccurred(), out)
	}
	canaryPods := func(revision string, n int) {
		GinkgoHelper()
		Eventually(func() []string { return readyPodsOf(ns, revision) }, time.Minute, 250*time.Millisecond).Should(HaveLen(n))
		Consistently(func() []string { return readyPodsOf(ns, revision) }, 2*time.Second, 250*time.Millisecond).Should(HaveLen(n))
	}
	applyRoutedApp(ns, app, map[string]string{
		appsv1beta1.CanaryStepsAnnotation: "weight 2%, 1, pause, weight 10%, pause, weight 50%, 50%, pause"})
	stable := get("md", "{.status.currentRevision}")()
	addFilterByHand(ns, app)
	watch := watchRoute(ns, app)
	Eventually(watch.seen, 10*time.Second, 100*time.Millisecond).Should(BeNumerically(">", 0))

	By("a new image: weight 2% to one pod of ten, nine stable")
	utils.MustKubectl("-n", ns, "patch", "mdapp", app, "--type=merge", "-p", `{"spec":{"deployment":{"image":"nginx:1.28"}}}`)
	Eventually(backends, time.Minute, 250*time.Millisecond).Should(Equal(app + "-stable=98," + app + "-canary=2,"))
	canary := get("md", "{.status.updateRevision}")()
	Expect(canary).NotTo(Equal(stable))
	canaryPods(canary, 1)
	Expect(readyPodsOf(ns, stable)).To(HaveLen(9))
	Expect(get("mdapp", `{.status.conditions[?(@.type=="CapacityLimited")].status}`)()).To(BeEmpty(), "2% is below the pod's share")

	By("promoted: weight 10% to the same one pod")
	promote()
	Eventually(backends, time.Minute, 250*time.Millisecond).Should(Equal(app + "-stable=90," + app + "-canary=10,"))
	canaryPods(canary, 1)

	By("promoted: weight 50%, then half the pods")
	promote()
	Eventually(backends, 2*time.Minute, 250*time.Millisecond).Should(Equal(app + "-stable=50," + app + "-canary=50,"))
	canaryPods(canary, 5)
	Expect(readyPodsOf(ns, stable)).To(HaveLen(5))
	Expect(get("mdapp", `{.status.conditions[?(@.type=="CapacityLimited")].status}`)()).To(BeEmpty(), "50% carried as stated")

	By("promoted at the last pause: the rollout completes, the route points at the one Service again")
	promote()
	Eventually(backends, 2*time.Minute, 250*time.Millisecond).Should(Equal(app + "=1,"))
	Eventually(get("md", "{.status.currentRevision}"), time.Minute, 250*time.Millisecond).Should(Equal(canary))

	versions := watch.result()
	By("every version of the route kept the filter; the canary's weights: " + strings.Join(versions, " "))
	for _, v := range versions {
		Expect(v).To(HaveSuffix("|X-Added-By,"), "a version of the route without the filter added by hand")
	}
	weights := canaryWeights(app, versions)
	Expect(weights).To(ContainElements(2, 10, 50))
	Expect(sort.IntsAreSorted(weights)).To(BeTrue(), "canary weights %v", weights)
	Expect(slices.Max(weights)).To(BeNumerically("<=", 50), "never past the last weight stated: %v", weights)
	utils.MustKubectl("-n", ns, "delete", "mdapp", app, "--wait=true")
}

// weightAbortOnRoute aborts a rollout with weight steps on an Application
// with a route (issue 54: "abort sets 0 before any pod goes"), in ns, on a
// cluster with the Gateway API CRDs: "weight 10%, 1, weight 30%, 3,
// pause" on 10 replicas, the new pods behind a readiness gate the spec
// sets on the first one only, so step 2 ends with the route carrying
// that pod's share and step 4 never does; past progressDeadlineSeconds (15) the rollout
// aborts. The new pods have a preStop hook and a grace period of 20 s, so
// kwok keeps a deleted one terminating and its deletion is seen. The route's canary weight goes to 0 (a version of the route
// says so, and the Application records it on the MyDeployment,
// route-weight) before any canary pod is deleted, and the first deletion
// comes no sooner than the drain delay (abort-drain-delay 5s) after the
// record; then the route points at the one Service again.
func weightAbortOnRoute(ns string) {
	const app = "drained"
	get := func(kind, jsonpath string) func() string { return utils.JSONPath(jsonpath, "-n", ns, kind, app) }
	applyRoutedApp(ns, app, map[string]string{
		appsv1beta1.CanaryStepsAnnotation: "weight 10%, 1, weight 30%, 3, pause",
		appsv1beta1.OnFailureAnnotation:   appsv1beta1.OnFailureAbort,
		weights.AbortDrainDelayAnnotation: "5s"})
	stable := get("md", "{.status.currentRevision}")()
	watch := watchRoute(ns, app)
	Eventually(watch.seen, 10*time.Second, 100*time.Millisecond).Should(BeNumerically(">", 0))

	By("a new template whose pods wait for a readiness gate; the spec opens it for the first pod only")
	utils.MustKubectl("-n", ns, "patch", "mdapp", app, "--type=merge", "-p", `{"spec":{"deployment":{"image":null,"port":null,
		"progressDeadlineSeconds":15,"template":{"spec":{"readinessGates":[{"conditionType":"e2e.mydeployment.io/ready"}],
		"terminationGracePeriodSeconds":20,"containers":[{"name":"`+app+`","image":"nginx:1.28","ports":[{"name":"http","containerPort":80}],
		"lifecycle":{"preStop":{"exec":{"command":["sleep","1"]}}}}]}}}}}`)
	Eventually(get("md", "{.status.updateRevision}"), time.Minute, 250*time.Millisecond).ShouldNot(Equal(stable))
	canary := get("md", "{.status.updateRevision}")()
	var first string
	Eventually(func() string {
		first = utils.MustKubectl("-n", ns, "get", "pods", "-l", "controller-revision-hash="+canary, "-o", "jsonpath={.items[0].metadata.name}")
		return first
	}, time.Minute, 250*time.Millisecond).ShouldNot(BeEmpty())
	utils.MustKubectl("-n", ns, "patch", "pod", first, "--subresource=status", "--type=strategic", "-p",
		`{"status":{"conditions":[{"type":"e2e.mydeployment.io/ready","status":"True"}]}}`)
	backends := get("httproute", `{range .spec.rules[0].backendRefs[*]}{.name}={.weight},{end}`)
	// 10% at step 2 (1 pod of 10), or the pod's share of fewer stable pods
	// once step 4 begins: capped by the Ready pods, never above 30%.
	Eventually(backends, time.Minute, 250*time.Millisecond).Should(MatchRegexp(`^` + app + `-stable=[0-9]+,` + app + `-canary=[1-9][0-9]?,$`))

	By("step 4's pods never Ready: aborted past the deadline; the route's 0 first, the canary pods a drain delay later")
	var zero weights.Record // the first record of the route's 0 for the canary
	deletedAt := func() (time.Time, bool) {
		var first time.Time
		for _, l := range utils.GetNonEmptyLines(utils.MustKubectl("-n", ns, "get", "pods", "-l", "controller-revision-hash="+canary, "-o",
			`jsonpath={range .items[*]}{.metadata.deletionTimestamp}|{.metadata.deletionGracePeriodSeconds}{"\n"}{end}`)) {
			at, grace, _ := strings.Cut(l, "|")
			if at == "" {
				continue
			}
			t, err := time.Parse(time.RFC3339, at)
			Expect(err).NotTo(HaveOccurred(), l)
			g, err := strconv.Atoi(grace)
			Expect(err).NotTo(HaveOccurred(), l)
			if requested := t.Add(-time.Duration(g) * time.Second); first.IsZero() || requested.Before(first) {
				first = requested
			}
		}
		return first, !first.IsZero()
	}
	Eventually(func() bool {
		deleted, gone := deletedAt()
		if zero.Revision == "" {
			if r, err := weights.ParseRecord(get("md", "{.metadata.annotations.apps\\.mydeployment\\.io/route-weight}")()); err == nil &&
				r.Revision == canary && r.Effective == 0 {
				zero = r
			}
		}
		if gone {
			Expect(zero.Revision).To(Equal(canary), "a canary pod was deleted at %v before the route's record said 0", deleted)
			Expect(deleted).To(BeTemporally(">=", zero.At.Add(5*time.Second)),
				"the first canary pod was deleted at %v, within the drain delay of the route's 0 at %v", deleted, zero.At)
		}
		return gone
	}, 2*time.Minute, 250*time.Millisecond).Should(BeTrue())
	Expect(get("md", "{.metadata.annotations.apps\\.mydeployment\\.io/aborted-revision}")()).To(Equal(canary))
	Eventually(backends, 2*time.Minute, 250*time.Millisecond).Should(Equal(app + "=1,"))

	versions := watch.result()
	By("the route's versions: " + strings.Join(versions, " "))
	Expect(versions).To(ContainElement(HavePrefix(app + "-stable=100," + app + "-canary=0,")))
	Expect(slices.Max(canaryWeights(app, versions))).To(And(BeNumerically(">", 0), BeNumerically("<=", 30)))
	utils.MustKubectl("-n", ns, "delete", "mdapp", app, "--wait=true")
}

// applyRoutedApp applies an Application of 10 nginx pods with a Service
// and a route (hostname <app>.example.com, through the Gateway "gateway")
// in ns, its MyDeployment annotated with annotations, and waits until the
// route points at the Service and every pod is available.
func applyRoutedApp(ns, app string, annotations map[string]string) {
	GinkgoHelper()
	a, err := json.Marshal(annotations) // JSON is YAML
	Expect(err).NotTo(HaveOccurred())
	utils.MustApply(fmt.Sprintf(`apiVersion: apps.mydeployment.io/v1beta1
kind: Application
metadata:
  name: %[1]s
  namespace: %[2]s
spec:
  deployment:
    image: "nginx:1.27"
    replicas: 10
    port: 80
    metadata:
      annotations: %[3]s
  service: {}
  route:
    parentRefs: [{name: gateway}]
    hostnames: [%[1]s.example.com]
`, app, ns, a))
	Eventually(utils.JSONPath(`{range .spec.rules[0].backendRefs[*]}{.name}={.weight},{end}`, "-n", ns, "httproute", app),
		time.Minute, 250*time.Millisecond).Should(Equal(app + "=1,"))
	Eventually(utils.JSONPath("{.status.availableReplicas}", "-n", ns, "md", app), 2*time.Minute, 250*time.Millisecond).Should(Equal("10"))
}

// abortedTrafficOnRoute drives an Application with a route, canary steps
// (10%, 50%, 100%) and canary analysis against a real Prometheus engine
// (bin/e2e-prometheus scraping an exporter the spec controls), in ns, on a
// cluster with the Gateway API CRDs: while the canary is healthy its
// weight follows its steps (10 at step 1); when its success rate falls
// below the threshold at step 2 the rollout aborts to stable within one
// interval, and the route ends pointing at the one Service again, every
// pod on the stable revision, the stable and canary Services gone, the
// canary's weight never above step 2's 50, and the filter added by hand
// kept in every version of the route.
func abortedTrafficOnRoute(ns string) {
	const (
		app      = "aborted"
		interval = 2 * time.Second
	)
	health := &revisionHealth{ratio: map[string]float64{}, latency: map[string]float64{}}
	exporter := httptest.NewServer(health)
	defer exporter.Close()
	port, err := utils.FreePort()
	Expect(err).NotTo(HaveOccurred())
	prom := &e2ePrometheus{addr: fmt.Sprintf("127.0.0.1:%d", port), target: exporter.URL + "/metrics",
		data: filepath.Join(GinkgoT().TempDir(), "data"), log: filepath.Join(projectDir, "bin", "e2e-prometheus-route.log")}
	prom.start()
	defer prom.proc.Stop()
	get := func(kind, jsonpath string) func() string { return utils.JSONPath(jsonpath, "-n", ns, kind, app) }
	backends := get("httproute", `{range .spec.rules[0].backendRefs[*]}{.name}={.weight},{end}`)

	analysis := fmt.Sprintf(`{"prometheus":"http://%s","interval":"%s","count":2,"failureLimit":0,"queries":[`+
		`{"name":"success-rate","query":"e2e_success_ratio{revision=\"{{revision}}\"}","threshold":">= 0.99"}]}`, prom.addr, interval)
	applyRoutedApp(ns, app, map[string]string{appsv1beta1.CanaryStepsAnnotation: "10%, 50%, 100%", appsv1beta1.AnalysisAnnotation: analysis})
	stable := get("md", "{.status.currentRevision}")()
	health.set(stable, 1, 0.1)
	addFilterByHand(ns, app)
	watch := watchRoute(ns, app)
	Eventually(watch.seen, 10*time.Second, 100*time.Millisecond).Should(BeNumerically(">", 0))

	By("a new image, healthy: step 1 sends 10% to the canary")
	utils.MustKubectl("-n", ns, "patch", "mdapp", app, "--type=merge", "-p", `{"spec":{"deployment":{"image":"nginx:1.28"}}}`)
	Eventually(get("md", "{.status.updateRevision}"), 30*time.Second, 100*time.Millisecond).ShouldNot(Equal(stable))
	canary := get("md", "{.status.updateRevision}")()
	health.set(canary, 0.999, 0.1)
	Eventually(backends, time.Minute, 100*time.Millisecond).Should(Equal(app + "-stable=90," + app + "-canary=10,"))

	By("at step 2 the canary's success rate falls below the threshold: aborted within one interval")
	Eventually(get("md", `{.metadata.annotations.apps\.mydeployment\.io/canary-step}`), time.Minute, 100*time.Millisecond).
		Should(ContainSubstring(`"step":2`))
	health.set(canary, 0.9, 0.1)
	crossed := time.Now()
	Eventually(get("md", `{.metadata.annotations.apps\.mydeployment\.io/aborted-revision}`), time.Minute, 50*time.Millisecond).
		Should(Equal(canary))
	Expect(time.Since(crossed)).To(BeNumerically("<=", interval+2*time.Second), "the next measurement aborts")

	By("the route points at the one Service again, every pod on the stable revision, the revision Services gone")
	Eventually(backends, 2*time.Minute, 250*time.Millisecond).Should(Equal(app + "=1,"))
	Eventually(func(g Gomega) {
		g.Expect(readyPodsOf(ns, stable)).To(HaveLen(10))
		g.Expect(readyPodsOf(ns, canary)).To(BeEmpty())
		g.Expect(serviceEndpoints(ns, app)).To(Equal(readyPodsOf(ns, stable)))
		g.Expect(utils.MustKubectl("-n", ns, "get", "svc", "-o", "name")).
			NotTo(Or(ContainSubstring(app+"-stable"), ContainSubstring(app+"-canary")))
	}, 2*time.Minute, 250*time.Millisecond).Should(Succeed())
	Expect(get("md", "{.status.currentRevision}")()).To(Equal(stable))
	Expect(get("md", `{.status.conditions[?(@.type=="Progressing")].reason}`)()).To(Equal("RolloutAborted"))

	versions := watch.result()
	By("every version of the route kept the filter; the canary's weights: " + strings.Join(versions, " "))
	for _, v := range versions {
		Expect(v).To(HaveSuffix("|X-Added-By,"), "a version of the route without the filter added by hand")
	}
	weights := canaryWeights(app, versions)
	Expect(weights).To(ContainElement(10))
	Expect(slices.Max(weights)).To(BeNumerically("<=", 50), "never past step 2's share: %v", weights)
	Expect(versions[len(versions)-1]).To(Equal(app + "=1,|X-Added-By,"))
	utils.MustKubectl("-n", ns, "delete", "mdapp", app, "--wait=true")
}
