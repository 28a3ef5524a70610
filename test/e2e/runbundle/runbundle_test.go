package runbundle

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mydeployment-io/mydeployment-operator/test/e2e/inflight"
	"github.com/mydeployment-io/mydeployment-operator/test/utils"
)

// patience is the one flag the suite adds to README's commands: run bundle
// waits 2 minutes by default, and a loaded 2-core machine can take longer.
var patience = []string{"--timeout", "5m"}

// operatorSDK runs bin/operator-sdk with args as a user's host runs it
// (hack/registry-host.sh: the registry's names and CA) and prints its output.
func operatorSDK(args ...string) {
	GinkgoHelper()
	cmd := exec.Command(filepath.Join(projectDir, "hack", "registry-host.sh"),
		append([]string{filepath.Join(projectDir, "bin", "operator-sdk")}, args...)...)
	start := time.Now()
	out, err := utils.Run(cmd)
	_, _ = fmt.Fprintf(GinkgoWriter, "%s", out)
	Expect(err).NotTo(HaveOccurred())
	By(fmt.Sprintf("operator-sdk %s: done in %s", strings.Join(args, " "), time.Since(start).Round(time.Second)))
}

func kubectl(args ...string) string {
	GinkgoHelper()
	out, err := utils.Kubectl(args...)
	Expect(err).NotTo(HaveOccurred(), out)
	return out
}

// expectInstalled checks that CSV release's is Succeeded and that every
// manager pod runs on real-0, Ready, from image, whose digest (the one
// make images pushed) real-0's containerd pulled.
func expectInstalled(release, image string) {
	GinkgoHelper()
	csv := "mydeployment-operator.v" + release
	Eventually(utils.JSONPath("{.status.phase}", "-n", namespace, "csv", csv), 5*time.Minute, time.Second).
		Should(Equal("Succeeded"), csv)
	want := digests[strings.SplitN(image, "@", 2)[0]]
	if i := strings.Index(image, "@"); i >= 0 {
		want = image[i+1:]
	}
	Expect(want).NotTo(BeEmpty(), "make images pushed %s (bin/local/images.txt)", image)
	pods := func() string {
		return kubectl("-n", namespace, "get", "pods", "-l", "control-plane=controller-manager", "-o",
			`jsonpath={range .items[*]}{.metadata.name} {.spec.nodeName} {.spec.containers[0].image} {.status.containerStatuses[0].imageID} {.status.containerStatuses[0].ready} {.metadata.deletionTimestamp}{"\n"}{end}`)
	}
	Eventually(func(g Gomega) {
		lines := utils.GetNonEmptyLines(pods())
		g.Expect(lines).NotTo(BeEmpty())
		for _, l := range lines {
			f := strings.Fields(l)
			g.Expect(f).To(HaveLen(5), "a pod being deleted, or not started: %s", l)
			g.Expect(f[1]).To(Equal(node), l)
			g.Expect(f[2]).To(Equal(image), l)
			g.Expect(f[3]).To(HaveSuffix("@"+want), l)
			g.Expect(f[4]).To(Equal("true"), l)
		}
	}, 5*time.Minute, time.Second).Should(Succeed())
	By(fmt.Sprintf("CSV %s Succeeded; its manager pods on %s, Ready, from %s (%s):\n%s", csv, node, image, want, pods()))
}

// expectWebhook checks the manager's admission webhook, served by its pods
// with OLM's certificate, refuses an annotation that can never work.
func expectWebhook() {
	GinkgoHelper()
	out, err := utils.KubectlStdin(`apiVersion: apps.mydeployment.io/v1beta1
kind: MyDeployment
metadata:
  name: refused
  annotations: {apps.mydeployment.io/update-mode: Sideways}
spec:
  selector: {matchLabels: {app: refused}}
  template:
    metadata: {labels: {app: refused}}
    spec: {containers: [{name: web, image: web}]}
`, "-n", "default", "apply", "--dry-run=server", "-f", "-")
	Expect(err).To(HaveOccurred(), out)
	Expect(out).To(ContainSubstring("apps.mydeployment.io/update-mode"), "the webhook names the annotation")
	By("the webhook refuses update-mode: Sideways, naming the annotation")
}

var _ = Describe("operator-sdk run bundle, then run bundle-upgrade, on real pods", Ordered, func() {
	var w *inflight.Workloads
	const inFlight = "inflight"

	var r readme
	BeforeAll(func() {
		r = readReadme()
		namespace = r.namespace
	})

	It("installs the previous release with run bundle as README writes it", func() {
		By("kubectl create namespace " + namespace)
		kubectl("create", "namespace", namespace)
		install := slices.Clone(r.install)
		this := fmt.Sprintf("%s-bundle:v%s", imageTagBase, version)
		install[slices.Index(install, this)] = fmt.Sprintf("%s-bundle:v%s", imageTagBase, previous)
		operatorSDK(append(install, patience...)...)

		By("its registry pod serves the bundle's catalog from real-0; the CatalogSource reads it")
		Eventually(utils.JSONPath(`{.status.connectionState.lastObservedState}`, "-n", namespace, "catalogsource", "mydeployment-operator-catalog"),
			2*time.Minute, time.Second).Should(Equal("READY"))
		address := kubectl("-n", namespace, "get", "catalogsource", "mydeployment-operator-catalog", "-o", "jsonpath={.spec.address}")
		registryPods := kubectl("-n", namespace, "get", "pods", "-o",
			`jsonpath={range .items[?(@.status.phase=="Running")]}{.status.podIP}:50051 {.spec.nodeName} {.spec.containers[0].image}{"\n"}{end}`)
		Expect(registryPods).To(ContainSubstring(fmt.Sprintf("%s %s %s", address, node, "quay.io/operator-framework/opm:latest")),
			"the CatalogSource's address is a registry pod on %s running run bundle's default index image", node)

		expectInstalled(previous, utils.ReleaseManagerImage(projectDir, previous))
		expectWebhook()
	})

	It("leaves workloads in flight under the previous release, on real pods", func() {
		kubectl("create", "namespace", inFlight)
		w = inflight.CreateWith(inFlight, filepath.Join(projectDir, "bin", "kubectl-mydeployment"), inflight.Images{
			Old: testwebBase + ":v1", New: testwebBase + ":v2", Port: 8080,
		})
		w.WaitSettled()
		w.StartInPlace()
		w.Snapshot()
		nodes := strings.Fields(kubectl("-n", inFlight, "get", "pods", "-o", "jsonpath={.items[*].spec.nodeName}"))
		Expect(nodes).To(HaveEach(node), "every workload pod runs on %s", node)
	})

	It("upgrades to this version with run bundle-upgrade once the in-place update settles; nothing in flight is touched", func() {
		// run bundle-upgrade waits for the new CSV; meanwhile OLM holds it
		// Pending while the old manager reports Upgradeable=False.
		done := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(done)
			operatorSDK(append(slices.Clone(r.upgrade), patience...)...)
		}()
		csv := "mydeployment-operator.v" + version
		Eventually(utils.JSONPath("{.status.phase} {.status.reason}", "-n", namespace, "csv", csv), 3*time.Minute, time.Second).
			Should(Equal("Pending OperatorConditionNotUpgradeable"), "OLM holds the upgrade while a rollout runs")
		By("OLM holds " + csv + " Pending (OperatorConditionNotUpgradeable): the previous release reports Upgradeable=False")
		w.ExpectUnderWay()
		Eventually(done, 6*time.Minute, time.Second).Should(BeClosed(), "run bundle-upgrade returns")

		expectInstalled(version, utils.BundleManagerImage(projectDir))
		Eventually(func() string {
			out, err := utils.Kubectl("-n", namespace, "get", "csv", "mydeployment-operator.v"+previous, "-o", "name")
			if err != nil && strings.Contains(out, "NotFound") {
				return ""
			}
			return out
		}, 2*time.Minute, time.Second).Should(BeEmpty(), "OLM removed the previous CSV")
		w.ExpectKept()
		expectWebhook()
	})

	It("carries on what the previous release left", func() {
		w.ExpectGoesOn()
	})
})
