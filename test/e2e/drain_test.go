package e2e

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mydeployment-io/mydeployment-operator/test/utils"
)

// Make-before-break drains (issue 32): `kubectl drain` of the node of a
// one-replica app whose PodDisruptionBudget allows no disruption, with a
// MyDeployment that opts into drain SurgeFirst, and with a Deployment.
var _ = Describe("make-before-break drains on a local cluster", Ordered, func() {
	const ns = "e2e-drain"
	BeforeAll(func() {
		utils.MustKubectl("create", "namespace", ns)
	})
	AfterAll(func() {
		_, _ = utils.Kubectl("delete", "namespace", ns, "--wait=false")
	})

	// guard puts a budget of minAvailable 1 over app and waits until the
	// disruption controller counts its one healthy pod.
	guard := func(app string) {
		GinkgoHelper()
		utils.MustApply(fmt.Sprintf(`apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: %[1]s}}
`, app, ns))
		Eventually(utils.JSONPath("{.status.currentHealthy}/{.status.disruptionsAllowed}", "-n", ns, "pdb", app),
			time.Minute, time.Second).Should(Equal("1/0"))
	}
	nodeOf := func(app string) string {
		GinkgoHelper()
		node := utils.MustKubectl("-n", ns, "get", "pods", "-l", "app="+app, "-o", "jsonpath={.items[0].spec.nodeName}")
		Expect(node).NotTo(BeEmpty())
		return node
	}
	drain := func(node, timeout string) (string, time.Duration, error) {
		start := time.Now()
		out, err := utils.Kubectl("drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout="+timeout)
		return out, time.Since(start), err
	}

	It("drains the node of a one-replica MyDeployment with a budget of minAvailable 1 within a minute, never without an available pod", func() {
		utils.MustApply(fmt.Sprintf(`apiVersion: apps.mydeployment.io/v1beta1
kind: MyDeployment
metadata:
  name: single
  namespace: %s
  annotations: {apps.mydeployment.io/drain: SurgeFirst}
spec:
  replicas: 1
  selector: {matchLabels: {app: single}}
  template:
    metadata: {labels: {app: single}}
    spec:
      containers: [{name: web, image: "nginx:1.27"}]
`, ns))
		Eventually(utils.JSONPath("{.status.availableReplicas}", "-n", ns, "md", "single"), 2*time.Minute, time.Second).Should(Equal("1"))
		guard("single")
		node := nodeOf("single")
		DeferCleanup(func() { _, _ = utils.Kubectl("uncordon", node) })

		w := watchPodsOf(clientset(), ns, "single")
		out, took, err := drain(node, "60s")
		r := w.result()
		fewest, events := r.fewestReady, r.events
		_, _ = fmt.Fprintf(GinkgoWriter, "MyDeployment with drain SurgeFirst: kubectl drain %s took %s, err=%v, fewest available %d over %d pod events:\n%s\n",
			node, took.Round(time.Second), err, fewest, events, out)
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(took).To(BeNumerically("<", time.Minute))
		Expect(fewest).To(Equal(1), "at least one available pod at every moment")
		Expect(nodeOf("single")).NotTo(Equal(node))
		Eventually(utils.JSONPath("{.status.availableReplicas}", "-n", ns, "md", "single"), time.Minute, time.Second).Should(Equal("1"))
		Expect(utils.MustKubectl("-n", ns, "get", "events", "--field-selector", "involvedObject.name=single",
			"-o", `jsonpath={range .items[*]}{.reason}{"\n"}{end}`)).To(ContainSubstring("DrainReplaced"))
		utils.MustKubectl("-n", ns, "delete", "md,pdb", "single")
		Eventually(utils.JSONPath("{.items[*].metadata.name}", "-n", ns, "pods", "-l", "app=single"), time.Minute, time.Second).Should(BeEmpty())
	})

	It("times out draining the node of a one-replica Deployment with the same budget (the comparison)", func() {
		utils.MustApply(fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: plain, namespace: %s}
spec:
  replicas: 1
  selector: {matchLabels: {app: plain}}
  template:
    metadata: {labels: {app: plain}}
    spec:
      containers: [{name: web, image: "nginx:1.27"}]
`, ns))
		Eventually(utils.JSONPath("{.status.availableReplicas}", "-n", ns, "deployment", "plain"), 2*time.Minute, time.Second).Should(Equal("1"))
		guard("plain")
		node := nodeOf("plain")
		DeferCleanup(func() { _, _ = utils.Kubectl("uncordon", node) })

		out, took, err := drain(node, "30s")
		_, _ = fmt.Fprintf(GinkgoWriter, "Deployment (no controller help): kubectl drain %s gave up after %s, err=%v:\n%s\n",
			node, took.Round(time.Second), err, out)
		Expect(err).To(HaveOccurred(), "the budget holds the eviction and nothing moves the pod")
		Expect(out).To(ContainSubstring("Cannot evict pod as it would violate the pod's disruption budget"))
	})
})
