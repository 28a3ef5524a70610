package runbundle

import (
	"encoding/json"
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

// untarImage is what operator-sdk scorecard's test pods untar the bundle
// with: ubi9's name, which the real node's mirror serves as a stand-in with
// a tar (hack/realnode/sh/Dockerfile).
const untarImage = "registry.access.redhat.com/ubi9/ubi:9.8"

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
	Expect(err).NotTo(HaveOccurred(), "operator-sdk %s failed after %s; its last lines:\n%s",
		strings.Join(args, " "), time.Since(start).Round(time.Second), lastLines(out, 6))
	By(fmt.Sprintf("operator-sdk %s: done in %s", strings.Join(args, " "), time.Since(start).Round(time.Second)))
}

// lastLines is the last n lines of out: what a failed command said last.
func lastLines(out string, n int) string {
	lines := utils.GetNonEmptyLines(out)
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func kubectl(args ...string) string {
	GinkgoHelper()
	out, err := utils.Kubectl(args...)
	Expect(err).NotTo(HaveOccurred(), out)
	return out
}

// expectInstalled checks that CSV release's is Succeeded in the operator's
// namespace and that every manager pod runs on real-0, Ready, from image,
// whose digest (the one make images pushed) real-0's containerd pulled.
func expectInstalled(release, image string) {
	GinkgoHelper()
	expectInstalledIn(namespace, release, image)
}

// expectInstalledIn is expectInstalled for an operator installed in ns.
func expectInstalledIn(namespace, release, image string) {
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
// with OLM's certificate, refuses in namespace ns (one the install
// watches) an annotation that can never work. Right
// after an upgrade a call can fail for some seconds (seen: a pod answering
// with a certificate the API server's caBundle did not trust, "tls: bad
// certificate", while OLM's rotation settled), so it is asked until it
// answers, and how long that took is printed.
func expectWebhook(ns string) {
	GinkgoHelper()
	start := time.Now()
	var failures []string
	Eventually(func(g Gomega) {
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
`, "-n", ns, "apply", "--dry-run=server", "-f", "-")
		g.Expect(err).To(HaveOccurred(), out)
		if strings.Contains(out, "failed calling webhook") {
			failures = append(failures, out)
		}
		g.Expect(out).To(ContainSubstring("apps.mydeployment.io/update-mode"), "the webhook names the annotation")
	}, time.Minute, time.Second).Should(Succeed())
	By(fmt.Sprintf("the webhook refuses update-mode: Sideways, naming the annotation (answered after %s; %d calls failed before)",
		time.Since(start).Round(time.Second), len(failures)))
	if len(failures) > 0 {
		_, _ = fmt.Fprintf(GinkgoWriter, "the first failed call: %s\n", failures[0])
	}
}

// Both installs share OLM, the registry and real-0: the OperatorHub-style
// install (operatorhub_test.go) begins by removing what run bundle left, so
// the two run in this order, in one ordered container.
var _ = Describe("OLM v0 on real pods", Ordered, func() {
	Describe("operator-sdk run bundle, then run bundle-upgrade", runBundle)
	Describe("OperatorHub-style: a CatalogSource of the catalog image and a Subscription, in every install mode", operatorHub)
})

// runBundle: README's run bundle and run bundle-upgrade, work in flight.
func runBundle() {
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
		expectWebhook("default")
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
		expectWebhook("default")
	})

	It("carries on what the previous release left", func() {
		w.ExpectGoesOn()
	})

	It("lets a user bound only to the built-in edit role create an Application, which runs on real pods", func() {
		expectEditorCreatesApplication("edit-user", "e2e-editor")
	})

	It("passes operator-sdk scorecard against the cluster: the built-in basic and OLM tests and ours, in pods", func() {
		// The one flag beyond a user's CI command: upstream's untar image
		// is pinned by a digest nothing here can rebuild; ubi9 (its base,
		// with tar) stands in, as for run bundle.
		cmd := exec.Command(filepath.Join(projectDir, "bin", "operator-sdk"), "scorecard", "bundle", "-w", "5m",
			"--untar-image", untarImage, "-n", "default", "-o", "json")
		start := time.Now()
		out, err := utils.Run(cmd)
		Expect(err).NotTo(HaveOccurred(), out)
		var list struct {
			Items []struct {
				Spec struct {
					Image      string   `json:"image"`
					Entrypoint []string `json:"entrypoint"`
				} `json:"spec"`
				Status struct {
					Results []struct {
						Name   string   `json:"name"`
						State  string   `json:"state"`
						Errors []string `json:"errors"`
					} `json:"results"`
				} `json:"status"`
			} `json:"items"`
		}
		Expect(json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &list)).To(Succeed(), out)
		var lines []string
		images := map[string]bool{}
		for _, it := range list.Items {
			images[it.Spec.Image] = true
			Expect(it.Status.Results).NotTo(BeEmpty(), "%v ran no test", it.Spec.Entrypoint)
			for _, r := range it.Status.Results {
				lines = append(lines, fmt.Sprintf("%s: %s %v", r.Name, r.State, r.Errors))
				Expect(r.State).To(Equal("pass"), "%s: %v", r.Name, r.Errors)
			}
		}
		Expect(images).To(HaveLen(2), "the built-in tests' image and ours")
		By(fmt.Sprintf("operator-sdk scorecard bundle: %d tests passed in %s, their pods on %s (the only node that runs pods):\n%s",
			len(lines), time.Since(start).Round(time.Second), node, strings.Join(lines, "\n")))
	})
}

// expectEditorCreatesApplication checks that a user bound in a new
// namespace ns only to the built-in edit role may create, patch and delete
// Applications, and creates one that becomes Ready on real pods.
func expectEditorCreatesApplication(ns, editor string) {
	GinkgoHelper()
	// The bundle's editor ClusterRoles, installed by OLM, aggregate
	// into edit (kube-controller-manager): nothing else grants them.
	kubectl("create", "namespace", ns)
	kubectl("-n", ns, "create", "rolebinding", "editor", "--clusterrole=edit", "--user="+editor)
	for _, verb := range []string{"create", "patch", "delete"} {
		Eventually(func() string {
			out, _ := utils.Kubectl("-n", ns, "--as", editor, "auth", "can-i", verb, "applications.apps.mydeployment.io")
			return strings.TrimSpace(out)
		}, time.Minute, time.Second).Should(Equal("yes"), "edit may %s Applications once OLM installed the bundle's roles", verb)
	}
	app := fmt.Sprintf(`{"apiVersion":"apps.mydeployment.io/v1beta1","kind":"Application","metadata":{"name":"shop"},`+
		`"spec":{"deployment":{"image":"%s:v1","replicas":2,"port":8080},"service":{}}}`, testwebBase)
	// Right after an upgrade the webhook can refuse a call for a while
	// (expectWebhook): asked until it answers, and how long said.
	start, failed := time.Now(), 0
	Eventually(func(g Gomega) {
		out, err := utils.KubectlStdin(app, "-n", ns, "--as", editor, "create", "-f", "-")
		if err != nil && strings.Contains(out, "failed calling webhook") {
			failed++
		}
		g.Expect(err).NotTo(HaveOccurred(), out)
	}, 3*time.Minute, 2*time.Second).Should(Succeed())
	By(fmt.Sprintf("created as %s after %s (%d calls the webhook failed before)", editor, time.Since(start).Round(time.Second), failed))
	Eventually(utils.JSONPath(`{.status.conditions[?(@.type=="Ready")].status}`, "-n", ns, "mdapp", "shop"),
		3*time.Minute, time.Second).Should(Equal("True"), "the Application is Ready")
	Eventually(utils.JSONPath(`{range .items[?(@.status.phase=="Running")]}{.spec.nodeName} {end}`, "-n", ns, "pods"),
		time.Minute, time.Second).Should(Equal(node+" "+node+" "), "its 2 pods run on %s", node)
	By(fmt.Sprintf("%s (bound to edit in %s) created the Application shop: Ready, its 2 pods Running on %s", editor, ns, node))
}
