package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/mydeployment-io/mydeployment-operator/test/utils"
)

// zoneKey is the node label the waves specs roll by, as a cloud provider sets it.
const zoneKey = "topology.kubernetes.io/zone"

// wavePodAnnotation is what the controller writes on a pod it creates in a
// wave: the domain it pinned it to (required node affinity).
const wavePodAnnotation = "apps.mydeployment.io/wave"

// podEvent is one event of a pod watch, stamped with when the test saw it.
type podEvent struct {
	seen time.Time
	typ  watch.EventType
	pod  *corev1.Pod
}

// eventLog keeps every event of an app's pods from the API server's watch.
type eventLog struct {
	mu     sync.Mutex
	events []podEvent
	stop   func()
}

func logPodEvents(cs *kubernetes.Clientset, ns, app string) *eventLog {
	GinkgoHelper()
	l := &eventLog{}
	_, l.stop = streamPods(cs, ns, app, func(t watch.EventType, pod *corev1.Pod) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.events = append(l.events, podEvent{seen: time.Now(), typ: t, pod: pod})
	})
	return l
}

// result stops the watch and returns what it saw.
func (l *eventLog) result() []podEvent {
	l.stop()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.events
}

// Zone waves (issue 53), as a user sees them: the local cluster's three fake
// nodes labelled as three zones (topology.kubernetes.io/zone, as a cloud
// provider labels its nodes), a MyDeployment of 6 pods spread 2 per zone
// that opts into waves, and updates. Which zone a pod is in is its node's
// label; when the controller created it, its creationTimestamp.
var _ = Describe("MyDeployment zone waves on a local cluster", Ordered, func() {
	const (
		ns       = "e2e-waves"
		replicas = 6
	)
	zones := []string{"zone-a", "zone-b", "zone-c"}
	var (
		cs     *kubernetes.Clientset
		zoneOf map[string]string // node name -> zone
	)
	BeforeAll(func() {
		cs = clientset()
		utils.MustKubectl("create", "namespace", ns)
		DeferCleanup(func() { _, _ = utils.Kubectl("delete", "namespace", ns, "--wait=false") })

		By("labelling the fake nodes as three zones (put back as they were afterwards)")
		nodes, err := cs.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(len(nodes.Items)).To(BeNumerically(">=", len(zones)), "one node per zone at least")
		slices.SortFunc(nodes.Items, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
		zoneOf = map[string]string{}
		for i, n := range nodes.Items {
			node, zone := n.Name, zones[i%len(zones)]
			if was, ok := n.Labels[zoneKey]; ok {
				DeferCleanup(utils.Kubectl, "label", "node", node, zoneKey+"="+was, "--overwrite")
			} else {
				DeferCleanup(utils.Kubectl, "label", "node", node, zoneKey+"-")
			}
			utils.MustKubectl("label", "node", node, zoneKey+"="+zone, "--overwrite")
			zoneOf[node] = zone
		}
	})

	// createWith makes a MyDeployment of replicas nginx pods that opts
	// into waves (annotation value waves, and the annotations more, a YAML
	// flow map's entries), spread evenly over the zones by a topology
	// spread constraint (a user's usual way), and waits until every pod is
	// available; it returns the zones' pods. minReady is its
	// minReadySeconds.
	createWith := func(name, waves, more string, deadline, minReady int) map[string][]corev1.Pod {
		GinkgoHelper()
		utils.MustApply(fmt.Sprintf(`apiVersion: apps.mydeployment.io/v1beta1
kind: MyDeployment
metadata:
  name: %[1]s
  namespace: %[2]s
  annotations: {apps.mydeployment.io/waves: '%[3]s'%[8]s}
spec:
  replicas: %[4]d
  progressDeadlineSeconds: %[5]d
  minReadySeconds: %[7]d
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      topologySpreadConstraints:
      - {maxSkew: 1, topologyKey: %[6]s, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: %[1]s}}}
      containers: [{name: web, image: "nginx:1.27"}]
`, name, ns, waves, replicas, deadline, zoneKey, minReady, more))
		Eventually(utils.JSONPath("{.status.availableReplicas}", "-n", ns, "md", name), 2*time.Minute, time.Second).
			Should(Equal(fmt.Sprint(replicas)))
		byZone := map[string][]corev1.Pod{}
		Eventually(func(g Gomega) {
			byZone = map[string][]corev1.Pod{}
			for _, p := range livePodsOf(cs, ns, name) {
				byZone[zoneOf[p.Spec.NodeName]] = append(byZone[zoneOf[p.Spec.NodeName]], p)
			}
			for _, z := range zones {
				g.Expect(byZone[z]).To(HaveLen(replicas/len(zones)), "the pods of zone %s", z)
			}
		}, 30*time.Second, time.Second).Should(Succeed())
		return byZone
	}
	create := func(name, waves string, deadline, minReady int) map[string][]corev1.Pod {
		GinkgoHelper()
		return createWith(name, waves, "", deadline, minReady)
	}
	get := func(name, jsonpath string) func() string {
		return utils.JSONPath(jsonpath, "-n", ns, "md", name)
	}
	progressing := func(name string) func() string {
		return get(name, `{.status.conditions[?(@.type=="Progressing")].status} {.status.conditions[?(@.type=="Progressing")].reason}: {.status.conditions[?(@.type=="Progressing")].message}`)
	}
	// zoneOfPod is the zone of a pod: its node's, or before it is
	// scheduled the one the controller pinned it to.
	zoneOfPod := func(p *corev1.Pod) string {
		if z, ok := zoneOf[p.Spec.NodeName]; ok {
			return z
		}
		return p.Annotations[wavePodAnnotation]
	}

	It("rolls three zones one at a time, each only after the zone before is available and has baked", func() {
		const bake = 15 * time.Second
		// minReadySeconds 2: a wave lasts longer than the status batch
		// period (1 s), as on a cluster whose pods take a moment, so that
		// Progressing is written while each wave moves, not only when it
		// bakes.
		before := create("roll", fmt.Sprintf(`{"key": "%s", "bake": "%s"}`, zoneKey, bake), 600, 2)
		old := get("roll", "{.status.currentRevision}")()
		Expect(old).NotTo(BeEmpty())
		log := logPodEvents(cs, ns, "roll")

		conds := watchProgressing(ns, "roll")

		By("an update: zone-a, its bake, zone-b, its bake, zone-c, as Progressing says")
		utils.MustKubectl("-n", ns, "patch", "md", "roll", "--type=json", "-p",
			`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"nginx:1.28"}]`)
		out, err := utils.Run(exec.Command(filepath.Join(projectDir, "bin", "kubectl-mydeployment"),
			"-n", ns, "rollout", "status", "roll", "--timeout", "3m"))
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("successfully rolled out"))
		said := conds.result()
		GinkgoWriter.Printf("Progressing, as it changed:\n%s\n", strings.Join(said, "\n"))
		Expect(linesInOrder(said,
			`^True RevisionUpdated: wave 1 of 3: zone-a$`,
			`^True WaveBaking: wave 1 of 3: zone-a, baking until `,
			`^True RevisionUpdated: wave 2 of 3: zone-b$`,
			`^True WaveBaking: wave 2 of 3: zone-b, baking until `,
			`^True RevisionUpdated: wave 3 of 3: zone-c$`,
			`^True NewRevisionAvailable: `)).To(Succeed())
		events := log.result()
		update := get("roll", "{.status.currentRevision}")()
		Expect(update).NotTo(Equal(old))

		By("the new pods' creation times, zone by zone: each zone's all before the next's, at least the bake after the zone before was ready")
		type zoneTimes struct{ firstCreated, lastCreated, lastReady time.Time }
		times := map[string]*zoneTimes{}
		for _, p := range livePodsOf(cs, ns, "roll") {
			Expect(p.Labels["controller-revision-hash"]).To(Equal(update), p.Name)
			z := zoneOf[p.Spec.NodeName]
			Expect(p.Annotations).To(HaveKeyWithValue(wavePodAnnotation, z), "%s was created pinned to its zone", p.Name)
			created, ready := p.CreationTimestamp.Time, readySince(&p)
			t := times[z]
			if t == nil {
				t = &zoneTimes{firstCreated: created, lastCreated: created, lastReady: ready}
				times[z] = t
			}
			t.firstCreated, t.lastCreated = minTime(t.firstCreated, created), maxTime(t.lastCreated, created)
			t.lastReady = maxTime(t.lastReady, ready)
		}
		Expect(times).To(HaveLen(3))
		for i, z := range zones[1:] {
			prev := times[zones[i]]
			GinkgoWriter.Printf("%s: last new pod ready %s; %s: first new pod created %s (%s later)\n", zones[i],
				prev.lastReady.Format(time.TimeOnly), z, times[z].firstCreated.Format(time.TimeOnly), times[z].firstCreated.Sub(prev.lastReady))
			// The API server's times are whole seconds, cut down: a bake that
			// began at the true ready time (or later) still shows in full.
			Expect(times[z].firstCreated.Sub(prev.lastCreated)).To(BeNumerically(">", 0))
			Expect(times[z].firstCreated.Sub(prev.lastReady)).To(BeNumerically(">=", bake), "%s waited for %s's bake", z, zones[i])
			Expect(times[z].firstCreated.Sub(prev.lastReady)).To(BeNumerically("<", bake+30*time.Second), "and not much more")
		}

		By("the old pods: none of a zone deleted before the zone before it had baked")
		for _, e := range events {
			p := e.pod
			if p.Labels["controller-revision-hash"] != old || p.DeletionTimestamp == nil {
				continue
			}
			i := slices.Index(zones, zoneOfPod(p))
			Expect(i).To(BeNumerically(">=", 0), "old pod %s in a zone", p.Name)
			if i > 0 {
				prev := times[zones[i-1]]
				Expect(e.seen.Sub(prev.lastReady)).To(BeNumerically(">=", bake),
					"old pod %s of %s deleted only after %s's bake", p.Name, zones[i], zones[i-1])
			}
		}
		for _, z := range zones {
			for _, p := range before[z] {
				Expect(slices.ContainsFunc(events, func(e podEvent) bool { return e.pod.UID == p.UID && e.typ == watch.Deleted })).
					To(BeTrue(), "old pod %s of %s replaced", p.Name, z)
			}
		}
		utils.MustKubectl("-n", ns, "delete", "md", "roll")
	})

	It("beside canary steps, puts the first pod in the first zone, holds it there until promoted, then rolls zone by zone", func() {
		// minReadySeconds 2, as above: each wave outlasts the status batch
		// period, so Progressing names it while it moves.
		createWith("steps", zoneKey, `, apps.mydeployment.io/canary-steps: "1, pause, 100%"`, 600, 2)
		old := get("steps", "{.status.currentRevision}")()
		conds := watchProgressing(ns, "steps")

		By("an update: the step's one pod, in zone-a, the first wave; then the pause until promote")
		utils.MustKubectl("-n", ns, "patch", "md", "steps", "--type=json", "-p",
			`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"nginx:1.28"}]`)
		Eventually(progressing("steps"), time.Minute, 200*time.Millisecond).
			Should(Equal("True CanaryPaused: step 2 of 3: paused until promote"))
		update := get("steps", "{.status.updateRevision}")()
		Expect(update).NotTo(Equal(old))
		held := func(g Gomega) {
			var updated []string
			for _, p := range livePodsOf(cs, ns, "steps") {
				if p.Labels["controller-revision-hash"] == update {
					updated = append(updated, zoneOfPod(&p))
				}
			}
			g.Expect(updated).To(Equal([]string{"zone-a"}), "one pod of the new revision, in the first wave's zone")
		}
		Eventually(held, 10*time.Second, time.Second).Should(Succeed())
		Consistently(held, 5*time.Second, time.Second).Should(Succeed(), "held at the pause")
		Expect(get("steps", "{.metadata.annotations.apps\\.mydeployment\\.io/wave-state}")()).
			To(ContainSubstring(`"wave":1,"of":3,"domain":"zone-a"`))

		By("rollout promote: zone-a's other pod, then zone-b, then zone-c, as Progressing says")
		out, err := utils.Run(exec.Command(filepath.Join(projectDir, "bin", "kubectl-mydeployment"), "-n", ns, "rollout", "promote", "steps"))
		Expect(err).NotTo(HaveOccurred(), out)
		out, err = utils.Run(exec.Command(filepath.Join(projectDir, "bin", "kubectl-mydeployment"),
			"-n", ns, "rollout", "status", "steps", "--timeout", "3m"))
		Expect(err).NotTo(HaveOccurred(), out)
		said := conds.result()
		GinkgoWriter.Printf("Progressing, as it changed:\n%s\n", strings.Join(said, "\n"))
		Expect(linesInOrder(said,
			`^True CanaryPaused: step 2 of 3: paused until promote$`,
			`^True RevisionUpdated: wave 2 of 3: zone-b$`,
			`^True RevisionUpdated: wave 3 of 3: zone-c$`,
			`^True NewRevisionAvailable: `)).To(Succeed())

		By("the new pods' creation times: each zone's all before the next zone's first")
		first, last := map[string]time.Time{}, map[string]time.Time{}
		for _, p := range livePodsOf(cs, ns, "steps") {
			Expect(p.Labels["controller-revision-hash"]).To(Equal(update), p.Name)
			z, created := zoneOf[p.Spec.NodeName], p.CreationTimestamp.Time
			if f, ok := first[z]; !ok || created.Before(f) {
				first[z] = created
			}
			last[z] = maxTime(last[z], created)
		}
		Expect(first).To(HaveLen(3))
		for i, z := range zones[1:] {
			Expect(first[z].Before(last[zones[i]])).To(BeFalse(), "%s's first new pod (%s) after %s's last (%s)", z,
				first[z].Format(time.TimeOnly), zones[i], last[zones[i]].Format(time.TimeOnly))
		}
		utils.MustKubectl("-n", ns, "delete", "md", "steps")
	})

	It("holds the third zone untouched while the second zone's new pods do not become ready", func() {
		// The order puts zone-c first: zone-b is the second wave, zone-a the third.
		byZone := create("hold", fmt.Sprintf(`{"key": "%s", "order": ["zone-c", "zone-b", "zone-a"]}`, zoneKey), 20, 0)
		third := byZone["zone-a"]
		old := get("hold", "{.status.currentRevision}")()

		By("an update whose pods need a readiness gate that a zone's load balancer sets, and zone-b's load balancer is broken")
		// The test plays the controller that sets the gate (as a cloud's
		// load-balancer controller sets its target-health gate) in zone-c
		// and zone-a, never in zone-b.
		stopGates := setZoneGates(cs, ns, "hold", "e2e.mydeployment.io/zone-lb", func(p *corev1.Pod) bool {
			return zoneOfPod(p) != "zone-b"
		})
		defer stopGates()
		log := logPodEvents(cs, ns, "hold")
		utils.MustKubectl("-n", ns, "patch", "md", "hold", "--type=merge", "-p",
			`{"spec":{"template":{"spec":{"readinessGates":[{"conditionType":"e2e.mydeployment.io/zone-lb"}],"containers":[{"name":"web","image":"nginx:1.28"}]}}}}`)
		Eventually(progressing("hold"), time.Minute, 200*time.Millisecond).Should(HavePrefix("True RevisionUpdated: wave 2 of 3: zone-b"))
		update := get("hold", "{.status.updateRevision}")()
		Expect(update).NotTo(Equal(old))

		By("the second wave runs into the progress deadline (20 s): zone-c updated, zone-b's new pod not ready, zone-a as it was")
		Eventually(progressing("hold"), 2*time.Minute, time.Second).Should(HavePrefix("False ProgressDeadlineExceeded: "))
		uidsOf := func(ps []corev1.Pod) []types.UID {
			var out []types.UID
			for _, p := range ps {
				out = append(out, p.UID)
			}
			slices.Sort(out)
			return out
		}
		check := func(g Gomega) {
			now := map[string][]corev1.Pod{}
			for _, p := range livePodsOf(cs, ns, "hold") {
				now[zoneOfPod(&p)] = append(now[zoneOfPod(&p)], p)
			}
			for _, p := range now["zone-c"] {
				g.Expect(p.Labels["controller-revision-hash"]).To(Equal(update), "zone-c, the first wave, is updated: %s", p.Name)
				g.Expect(available(&p)).To(BeTrue(), p.Name)
			}
			g.Expect(now["zone-c"]).To(HaveLen(2))
			var newB []string
			for _, p := range now["zone-b"] {
				if p.Labels["controller-revision-hash"] == update {
					newB = append(newB, p.Name)
					g.Expect(available(&p)).To(BeFalse(), "zone-b's new pod %s is not ready", p.Name)
				}
			}
			g.Expect(newB).NotTo(BeEmpty(), "zone-b's wave started")
			g.Expect(uidsOf(now["zone-a"])).To(Equal(uidsOf(third)), "zone-a's pods are the ones it had")
			for _, p := range now["zone-a"] {
				g.Expect(p.Labels["controller-revision-hash"]).To(Equal(old), p.Name)
				g.Expect(available(&p)).To(BeTrue(), p.Name)
			}
		}
		Eventually(check, 30*time.Second, time.Second).Should(Succeed())
		Consistently(check, 20*time.Second, time.Second).Should(Succeed(), "held past the deadline")

		By("at no event was a pod of zone-a deleted, or one of the new revision there")
		for _, e := range log.result() {
			p := e.pod
			if zoneOfPod(p) != "zone-a" {
				continue
			}
			Expect(p.Labels["controller-revision-hash"]).To(Equal(old), "%s %s in zone-a", e.typ, p.Name)
			Expect(p.DeletionTimestamp).To(BeNil(), "%s %s in zone-a", e.typ, p.Name)
			Expect(e.typ).NotTo(Equal(watch.Deleted), p.Name)
		}
		out, err := utils.Run(exec.Command(filepath.Join(projectDir, "bin", "kubectl-mydeployment"),
			"-n", ns, "rollout", "status", "hold", "--timeout", "10s"))
		Expect(err).To(HaveOccurred(), out)
		Expect(out).To(ContainSubstring(`mydeployment "hold" exceeded its progress deadline`))
	})
})

// livePodsOf lists the pods of app in ns, those being deleted left out.
func livePodsOf(cs *kubernetes.Clientset, ns, app string) []corev1.Pod {
	GinkgoHelper()
	list, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
	Expect(err).NotTo(HaveOccurred())
	return slices.DeleteFunc(list.Items, func(p corev1.Pod) bool { return p.DeletionTimestamp != nil })
}

// readySince is when pod last became Ready (zero if it is not).
func readySince(pod *corev1.Pod) time.Time {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// setZoneGates plays the controller that sets a readiness gate (as a
// cloud's load balancer controller sets its target-health gate): the
// condition True on every pod of app that has the gate and that open
// says yes to, until stopped.
func setZoneGates(cs *kubernetes.Clientset, ns, app, condition string, open func(*corev1.Pod) bool) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	patch := fmt.Appendf(nil, `{"status":{"conditions":[{"type":%q,"status":"True"}]}}`, condition)
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
			if err == nil {
				for i := range list.Items {
					p := &list.Items[i]
					gated := slices.ContainsFunc(p.Spec.ReadinessGates, func(g corev1.PodReadinessGate) bool { return string(g.ConditionType) == condition })
					set := slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool { return string(c.Type) == condition })
					if gated && !set && p.Spec.NodeName != "" && open(p) {
						_, _ = cs.CoreV1().Pods(ns).Patch(ctx, p.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return func() { cancel(); <-done }
}

// watchProgressing follows a MyDeployment's Progressing condition
// (kubectl get -w): each "status reason: message" it took, in order.
func watchProgressing(ns, name string) *lineLog {
	GinkgoHelper()
	return watchLines(nil, "-n", ns, "get", "md", name, "-w", "-o",
		`jsonpath={.status.conditions[?(@.type=="Progressing")].status} {.status.conditions[?(@.type=="Progressing")].reason}: {.status.conditions[?(@.type=="Progressing")].message}{"\n"}`)
}

// linesInOrder says whether lines has a line matching each pattern, in
// the patterns' order.
func linesInOrder(lines []string, patterns ...string) error {
	i := 0
	for _, l := range lines {
		if i < len(patterns) && regexp.MustCompile(patterns[i]).MatchString(l) {
			i++
		}
	}
	if i < len(patterns) {
		return fmt.Errorf("no line matching %q after the one matching %q in:\n%s", patterns[i], patterns[max(i-1, 0)], strings.Join(lines, "\n"))
	}
	return nil
}
