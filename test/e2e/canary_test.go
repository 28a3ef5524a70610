package e2e

import (
	"bufio"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mydeployment-io/mydeployment-operator/test/utils"
)

// boundsWatch watches an app's pods (kubectl get -w, every event as the
// API server orders them) and, once floor of them are Ready, keeps every
// event after which more than podLimit pods are active or fewer than
// floor Ready (kwok's pods are available once Ready: no minReadySeconds here).
type boundsWatch struct {
	mu              sync.Mutex
	cmd             *exec.Cmd
	done            chan struct{}
	pods            map[string]string // name -> Ready status, of pods not terminating
	events, maxPods int
	minReady        int
	armed           bool
	violations      []string
	podLimit, floor int
}

func watchBounds(ns, app string, podLimit, floor int) *boundsWatch {
	GinkgoHelper()
	b := &boundsWatch{pods: map[string]string{}, minReady: 1 << 30, podLimit: podLimit, floor: floor, done: make(chan struct{})}
	b.cmd = exec.Command("kubectl", "-n", ns, "get", "pods", "-l", "app="+app, "-w", "--output-watch-events", "-o",
		`jsonpath={.type}|{.object.metadata.name}|{.object.metadata.deletionTimestamp}|{.object.status.conditions[?(@.type=="Ready")].status}{"\n"}`)
	out, err := b.cmd.StdoutPipe()
	Expect(err).NotTo(HaveOccurred())
	Expect(b.cmd.Start()).To(Succeed())
	go func() {
		defer close(b.done)
		lines := bufio.NewScanner(out)
		for lines.Scan() {
			b.observe(strings.Split(lines.Text(), "|"))
		}
	}()
	return b
}

func (b *boundsWatch) observe(f []string) {
	if len(f) != 4 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if f[0] == "DELETED" || f[2] != "" {
		delete(b.pods, f[1])
	} else {
		b.pods[f[1]] = f[3]
	}
	ready := 0
	for _, st := range b.pods {
		if st == "True" {
			ready++
		}
	}
	b.armed = b.armed || ready >= b.floor
	if !b.armed {
		return
	}
	b.events++
	b.maxPods, b.minReady = max(b.maxPods, len(b.pods)), min(b.minReady, ready)
	if len(b.pods) > b.podLimit || ready < b.floor {
		b.violations = append(b.violations, fmt.Sprintf("%d pods, %d ready after %s %s", len(b.pods), ready, f[0], f[1]))
	}
}

// result stops the watch (the kubectl this watch started) and says what it saw.
func (b *boundsWatch) result() (violations []string, summary string) {
	_ = b.cmd.Process.Kill()
	<-b.done
	_ = b.cmd.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.violations, fmt.Sprintf("%d pod events: at most %d pods, at least %d ready", b.events, b.maxPods, b.minReady)
}

// Canary steps (issue 32), as a user drives them: the annotation, a new
// image, and the plugin's status and promote.
var _ = Describe("MyDeployment canary steps on a local cluster", Ordered, func() {
	const ns = "e2e-canary"
	BeforeAll(func() {
		_, err := utils.Kubectl("create", "namespace", ns)
		Expect(err).NotTo(HaveOccurred())
	})
	AfterAll(func() {
		_, _ = utils.Kubectl("delete", "namespace", ns, "--wait=false")
	})
	kubectl := func(args ...string) string {
		GinkgoHelper()
		out, err := utils.Kubectl(append([]string{"-n", ns}, args...)...)
		Expect(err).NotTo(HaveOccurred(), out)
		return out
	}
	plugin := func(args ...string) (string, error) {
		return utils.Run(exec.Command(filepath.Join(projectDir, "bin", "kubectl-mydeployment"),
			append([]string{"-n", ns}, args...)...))
	}
	get := func(jsonpath string) func() string {
		return func() string {
			out, _ := utils.Kubectl("-n", ns, "get", "md", "steps", "-o", "jsonpath="+jsonpath)
			return out
		}
	}
	updated := func() int {
		n := 0
		for _, l := range utils.GetNonEmptyLines(kubectl("get", "pods", "-l", "app=steps", "-o",
			`jsonpath={range .items[*]}{.metadata.deletionTimestamp}|{.spec.containers[0].image}{"\n"}{end}`)) {
			if l == "|nginx:1.28" {
				n++
			}
		}
		return n
	}
	progressing := get(`{.status.conditions[?(@.type=="Progressing")].reason}: {.status.conditions[?(@.type=="Progressing")].message}`)

	It("moves 1 pod, then 5 after a 10s pause, holds at 5 until promoted, then completes, within the bounds", func() {
		// 10 replicas, maxSurge 25% (3) and maxUnavailable 25% (2): at most 13 pods, at least 8 ready.
		_, err := utils.KubectlStdin(`apiVersion: apps.mydeployment.io/v1beta1
kind: MyDeployment
metadata:
  name: steps
  annotations: {"apps.mydeployment.io/canary-steps": "1, pause 10s, 50%, pause, 100%"}
spec:
  replicas: 10
  progressDeadlineSeconds: 20
  selector: {matchLabels: {app: steps}}
  template:
    metadata: {labels: {app: steps}}
    spec:
      containers: [{name: web, image: "nginx:1.27"}]
`, "-n", ns, "apply", "-f", "-")
		Expect(err).NotTo(HaveOccurred())
		Eventually(get("{.status.availableReplicas}"), 2*time.Minute, time.Second).Should(Equal("10"))
		b := watchBounds(ns, "steps", 13, 8)

		kubectl("patch", "md", "steps", "--type=json", "-p",
			`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"nginx:1.28"}]`)
		By("step 1: one pod updated, then the 10s pause")
		Eventually(progressing, time.Minute, 200*time.Millisecond).Should(HavePrefix("CanaryPaused: step 2 of 5: paused 10s"))
		Expect(updated()).To(Equal(1))

		By("without a hand: step 3 moves half, and step 4 holds for a promote")
		Eventually(progressing, time.Minute, 500*time.Millisecond).Should(Equal("CanaryPaused: step 4 of 5: paused until promote"))
		Expect(updated()).To(Equal(5))
		out, err := plugin("rollout", "status", "steps", "--timeout", "1m")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("canary paused at step 4 of 5: paused until promote: 5 of 10 pods updated"))
		Consistently(updated, 25*time.Second, 2*time.Second).Should(Equal(5), "held past the progress deadline (20 s)")
		Expect(get(`{.status.conditions[?(@.type=="Progressing")].status}`)()).To(Equal("True"), "held, not failed")

		By("promoted: the rollout completes")
		out, err = plugin("rollout", "promote", "steps")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("promoted: ended step 4 of 5: paused until promote"))
		out, err = plugin("rollout", "status", "steps", "--timeout", "2m")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("successfully rolled out"))
		Expect(updated()).To(Equal(10))
		violations, summary := b.result()
		GinkgoWriter.Println("bounds:", summary)
		Expect(violations).To(BeEmpty(), summary)
		events := kubectl("get", "events", "--field-selector", "involvedObject.name=steps,involvedObject.kind=MyDeployment",
			"-o", `jsonpath={range .items[*]}{.reason}: {.note}{.message}{"\n"}{end}`)
		Expect(strings.Count(events, "CanaryStep: ")).To(Equal(6), "one event per step, and one when all are done:\n"+events)
	})
})
