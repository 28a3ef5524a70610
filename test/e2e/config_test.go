package e2e

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mydeployment-io/mydeployment-operator/test/utils"
)

// A rollout on a config change (issue 33), as a user drives it: a
// MyDeployment of 5 pods reading a ConfigMap through envFrom and a Secret
// through a volume, with rollout-on-config-change, and kubectl edits of them.
var _ = Describe("MyDeployment rollout on config change on a local cluster", Ordered, func() {
	const ns, name = "e2e-config", "reader"
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
	plugin := func(args ...string) string {
		GinkgoHelper()
		out, err := utils.Run(exec.Command(filepath.Join(projectDir, "bin", "kubectl-mydeployment"),
			append([]string{"-n", ns}, args...)...))
		Expect(err).NotTo(HaveOccurred(), out)
		return out
	}
	get := func(jsonpath string) func() string {
		return func() string {
			out, _ := utils.Kubectl("-n", ns, "get", "md", name, "-o", "jsonpath="+jsonpath)
			return out
		}
	}
	// pods lists "name|config-hash|ready" of the pods that are not terminating.
	pods := func() []string {
		out, _ := utils.Kubectl("-n", ns, "get", "pods", "-l", "app="+name, "-o",
			`jsonpath={range .items[*]}{.metadata.deletionTimestamp}|{.metadata.name}|{.metadata.annotations.apps\.mydeployment\.io/config-hash}|{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`)
		var live []string
		for _, l := range utils.GetNonEmptyLines(out) {
			if deleting, rest, _ := strings.Cut(l, "|"); deleting == "" {
				live = append(live, rest)
			}
		}
		return live
	}
	field := func(i int) []string {
		var out []string
		for _, p := range pods() {
			out = append(out, strings.Split(p, "|")[i])
		}
		slices.Sort(out)
		return out
	}
	names := func() []string { return field(0) }
	revisions := func() int {
		return len(utils.GetNonEmptyLines(kubectl("get", "controllerrevisions", "-l", "app="+name, "-o", "name")))
	}
	// bounds samples the pods while a rollout runs: 25%/25% of 5 allows 7
	// pods and needs 4 ready; it returns what it saw beyond that.
	bounds := func() (stop func() []string) {
		var (
			mu  sync.Mutex
			bad []string
		)
		done, finished := make(chan struct{}), make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(finished)
			for {
				select {
				case <-done:
					return
				case <-time.After(300 * time.Millisecond):
				}
				live, ready := pods(), 0
				for _, p := range live {
					if strings.HasSuffix(p, "|True") {
						ready++
					}
				}
				if len(live) > 7 || ready < 4 {
					mu.Lock()
					bad = append(bad, fmt.Sprintf("%d pods, %d ready", len(live), ready))
					mu.Unlock()
				}
			}
		}()
		return func() []string { close(done); <-finished; mu.Lock(); defer mu.Unlock(); return bad }
	}
	rollsAll := func(change func()) {
		GinkgoHelper()
		before, revs, update := names(), revisions(), get("{.status.updateRevision}")()
		check := bounds()
		change()
		Eventually(revisions, time.Minute, time.Second).Should(Equal(revs + 1))
		// A config change leaves the generation alone: rollout status
		// reports on the new revision once the status names it.
		Eventually(get("{.status.updateRevision}"), time.Minute, 200*time.Millisecond).ShouldNot(Equal(update))
		Expect(plugin("rollout", "status", name, "--timeout", "2m")).To(ContainSubstring("successfully rolled out"))
		Expect(check()).To(BeEmpty(), "pods beyond maxSurge/maxUnavailable")
		after := names()
		Expect(after).To(HaveLen(5))
		for _, n := range after {
			Expect(before).NotTo(ContainElement(n), "every pod is replaced")
		}
		Expect(slices.Compact(field(1))).To(HaveLen(1), "all pods carry one config hash")
	}
	historyLast := func() string {
		lines := utils.GetNonEmptyLines(plugin("rollout", "history", name))
		return lines[len(lines)-1]
	}

	It("runs 5 pods reading a ConfigMap through envFrom and a Secret through a volume", func() {
		kubectl("create", "configmap", "app", "--from-literal=LEVEL=info")
		kubectl("create", "secret", "generic", "db", "--from-literal=password=one")
		_, err := utils.KubectlStdin(fmt.Sprintf(`apiVersion: apps.mydeployment.io/v1beta1
kind: MyDeployment
metadata:
  name: %[1]s
  annotations: {apps.mydeployment.io/rollout-on-config-change: "true"}
spec:
  replicas: 5
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      containers:
      - name: web
        image: "nginx:1.27"
        envFrom: [{configMapRef: {name: app}}]
        volumeMounts: [{name: db, mountPath: /etc/db}]
      volumes: [{name: db, secret: {secretName: db}}]
`, name), "-n", ns, "apply", "-f", "-")
		Expect(err).NotTo(HaveOccurred())
		Eventually(get("{.status.availableReplicas}"), 2*time.Minute, time.Second).Should(Equal("5"))
		Expect(slices.Compact(field(1))).To(ConsistOf(MatchRegexp(`^configmap/app=[0-9a-f]{16},secret/db=[0-9a-f]{16}$`)))
		Expect(get("{.spec.template.metadata.annotations}")()).To(BeEmpty(), "the spec is not written")
	})

	It("rolls all 5 pods when the ConfigMap's data changes, and history names it", func() {
		rollsAll(func() { kubectl("patch", "configmap", "app", "-p", `{"data":{"LEVEL":"debug"}}`) })
		Expect(historyLast()).To(MatchRegexp(`^2\s+configmap/app\s`))
	})

	It("rolls nothing when only the ConfigMap's labels change", func() {
		before := names()
		kubectl("label", "configmap", "app", "team=a")
		Consistently(revisions, 10*time.Second, time.Second).Should(Equal(2))
		Expect(names()).To(Equal(before))
	})

	It("rolls again when the Secret changes", func() {
		rollsAll(func() { kubectl("patch", "secret", "db", "-p", `{"stringData":{"password":"two"}}`) })
		Expect(historyLast()).To(MatchRegexp(`^3\s+secret/db\s`))
	})

	It("reports a deleted ConfigMap and rolls nothing", func() {
		before := names()
		kubectl("delete", "configmap", "app")
		Eventually(get(`{.status.conditions[?(@.type=="ReplicaFailure")].reason}`), time.Minute, time.Second).
			Should(Equal("ConfigMissing"))
		Expect(get(`{.status.conditions[?(@.type=="ReplicaFailure")].message}`)()).To(ContainSubstring("configmap/app"))
		Consistently(names, 10*time.Second, time.Second).Should(Equal(before))
		Expect(revisions()).To(Equal(3))
		events := kubectl("get", "events.events.k8s.io", "--field-selector", "reason=ConfigMissing", "-o", "name")
		Expect(utils.GetNonEmptyLines(events)).To(HaveLen(1))
	})
})
