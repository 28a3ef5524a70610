/*
Copyright 2026.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package olmv1

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mydeployment-io/mydeployment-operator/test/e2e/configroll"
	"github.com/mydeployment-io/mydeployment-operator/test/e2e/inflight"
	"github.com/mydeployment-io/mydeployment-operator/test/olm/crdsafety"
	"github.com/mydeployment-io/mydeployment-operator/test/utils"
)

const (
	operatorNamespace = "md-system"
	// installer is the ServiceAccount operator-controller v1.5.1 installs
	// the bundle as (spec.serviceAccount).
	installer = "mydeployment-installer"
	workloads = "md-a"
	// inFlight holds the workloads in flight when the upgrade lands.
	inFlight = "md-inflight"
)

// operator is the Deployment OLM v1 makes from the CSV; the suite runs the
// manager on the host as its pod.
var operator = &utils.OLMOperator{Namespace: operatorNamespace,
	Deployment: "mydeployment-operator-controller-manager", ServiceAccount: "mydeployment-operator-controller-manager"}

// clusterExtension is a ClusterExtension installing package at version in
// AllNamespaces mode (all OLM v1 supports) from our catalog, with crdUpgradeSafety
// enforcement (Strict, the default, or None).
func clusterExtension(name, pkg, version, enforcement string) string {
	return fmt.Sprintf(`apiVersion: olm.operatorframework.io/v1
kind: ClusterExtension
metadata: {name: %s}
spec:
  namespace: %s
  serviceAccount: {name: %s}
  source:
    sourceType: Catalog
    catalog:
      packageName: %s
      version: "%s"
      selector: {matchLabels: {olm.operatorframework.io/metadata.name: %s}}
  install:
    preflight:
      crdUpgradeSafety: {enforcement: %s}
`, name, operatorNamespace, installer, pkg, version, catalogName, enforcement)
}

func extension(path string) func() string { return jsonpath(path, "clusterextension", pkg) }

// conditionOf is "status reason: message" of a ClusterExtension's condition.
func conditionOf(name, condition string) func() string {
	return jsonpath(fmt.Sprintf(`{.status.conditions[?(@.type=="%s")].status} {.status.conditions[?(@.type=="%[1]s")].reason}: {.status.conditions[?(@.type=="%[1]s")].message}`, condition),
		"clusterextension", name)
}

// podUIDs lists the MyDeployment pods as namespace/name=uid.
func podUIDs() []string {
	out := kubectl("-n", workloads, "get", "pods", "-l", "app=web", "-o",
		`jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}={.metadata.uid}{"\n"}{end}`)
	all := utils.GetNonEmptyLines(out)
	sort.Strings(all)
	return all
}

const invalid = utils.InvalidMyDeployment

func expectWebhookRefuses() {
	out, err := utils.KubectlStdin(fmt.Sprintf(invalid, workloads), "apply", "-f", "-")
	ExpectWithOffset(1, err).To(HaveOccurred(), "the webhook refuses a pod template the API server would refuse")
	ExpectWithOffset(1, out).To(ContainSubstring("spec.template.spec.containers[0].resources.requests[cpu]"))
}

var _ = Describe("the operator through OLM v1", Ordered, func() {
	BeforeAll(func() {
		By("a ClusterCatalog of the catalog image")
		apply(fmt.Sprintf(`apiVersion: olm.operatorframework.io/v1
kind: ClusterCatalog
metadata: {name: %s}
spec:
  source:
    type: Image
    image: {ref: "%s"}
`, catalogName, catalogRef()))
		Eventually(jsonpath(`{.status.conditions[?(@.type=="Serving")].status}`, "clustercatalog", catalogName),
			3*time.Minute, time.Second).Should(Equal("True"), "catalogd unpacked and serves the catalog")
		Expect(jsonpath("{.status.urls.base}", "clustercatalog", catalogName)()).To(HavePrefix("https://127.0.0.1:"))
		Expect(jsonpath(`{.metadata.labels.olm\.operatorframework\.io/metadata\.name}`, "clustercatalog", catalogName)()).
			To(Equal(catalogName), "catalogd's webhook labelled it: ClusterExtensions select it by that label")

		By("the namespace and the ServiceAccount ClusterExtensions install as")
		for _, ns := range []string{operatorNamespace, workloads} {
			kubectl("create", "namespace", ns)
		}
		// operator-controller v1.5.1 applies the bundle with this account's
		// token: it needs every permission the bundle's objects need and
		// grant (cluster-admin keeps the test about OLM, not about RBAC).
		kubectl("-n", operatorNamespace, "create", "serviceaccount", installer)
		kubectl("create", "clusterrolebinding", installer, "--clusterrole=cluster-admin",
			"--serviceaccount="+operatorNamespace+":"+installer)
	})

	It("refuses a bundle whose CSV does not support AllNamespaces", func() {
		apply(clusterExtension(noAllNamespacesPkg, noAllNamespacesPkg, version, "Strict"))
		Eventually(conditionOf(noAllNamespacesPkg, "Progressing"), 2*time.Minute, time.Second).Should(
			ContainSubstring("do not support targeting all namespaces"), "what `kubectl get clusterextension -o yaml` shows")
		Consistently(conditionOf(noAllNamespacesPkg, "Installed"), 5*time.Second, time.Second).ShouldNot(HavePrefix("True"))
		Expect(jsonpath("{.items[*].metadata.name}", "-n", operatorNamespace, "deployments")()).To(BeEmpty(), "nothing installed")
		kubectl("delete", "clusterextension", noAllNamespacesPkg)
	})

	It("installs the previous release in AllNamespaces mode", func() {
		apply(clusterExtension(pkg, pkg, prev, "Strict"))
		Eventually(conditionOf(pkg, "Installed"), 4*time.Minute, time.Second).Should(HavePrefix("True Succeeded"))
		Expect(extension("{.status.install.bundle.name}")()).To(Equal(pkg + ".v" + prev))
		Expect(jsonpath(`{.status.conditions[?(@.type=="Established")].status}`, "crd",
			"mydeployments.apps.mydeployment.io")()).To(Equal("True"))
		operator.Pod() // the Deployment is available on kwok

		By("cert-manager issued the webhook's certificate and injected its CA")
		Eventually(jsonpath(`{.items[*].status.conditions[?(@.type=="Ready")].status}`, "-n", operatorNamespace, "certificates"),
			time.Minute, time.Second).Should(Equal("True"))
		Eventually(jsonpath("{.items[*].webhooks[*].clientConfig.caBundle}", "validatingwebhookconfigurations"),
			time.Minute, time.Second).ShouldNot(BeEmpty())
	})

	It("runs as OLM v1 set it up, with no OperatorCondition: reconciles and serves the webhook", func() {
		operator.WorkDir = workDir
		// Until the upgrade, the operator pod runs the previous release's
		// own manager, built from the commit it was released from.
		operator.Binary = utils.ReleaseManager(projectDir, prev)
		pod, _ := operator.Pod()
		env := operator.PodEnv(pod)
		Expect(strings.Join(env, " ")).NotTo(ContainSubstring("OPERATOR_CONDITION_NAME"), "OLM v1 has no OperatorCondition")
		Expect(env).To(ContainElement("WATCH_NAMESPACE="), "AllNamespaces: every namespace")
		operator.StartManager(projectDir)
		Eventually(func() string {
			out, _ := os.ReadFile(operator.Manager().Log)
			return string(out)
		}, 30*time.Second, time.Second).Should(ContainSubstring("upgrade gating is off"), "said once, at start")

		kubectl("-n", workloads, "apply", "-f", filepath.Join(projectDir, "config", "samples", "apps_v1beta1_mydeployment.yaml"))
		Eventually(jsonpath("{.status.availableReplicas}", "-n", workloads, "md", "mydeployment-sample"),
			2*time.Minute, time.Second).Should(Equal("3"))
		expectWebhookRefuses()
	})

	// flight is in flight when the upgrade lands (test/e2e/inflight).
	var flight *inflight.Workloads

	It("leaves workloads in every state with the previous release's manager: a canary held at a pause, an Application", func() {
		kubectl("create", "namespace", inFlight)
		flight = inflight.Create(inFlight, filepath.Join(projectDir, "bin", "kubectl-mydeployment"))
		flight.WaitSettled()
	})

	var before []string
	var generation string

	It("upgrades to this version in the middle of an in-place update, leaving MyDeployments and their pods alone", func() {
		before = podUIDs()
		Expect(before).To(HaveLen(3))
		generation = jsonpath("{.metadata.generation}", "-n", workloads, "md", "mydeployment-sample")()
		// OLM v1 holds no upgrade for a rollout (no OperatorCondition): it
		// lands in the middle of this one.
		flight.StartInPlace()
		flight.Snapshot()

		kubectl("patch", "clusterextension", pkg, "--type=merge", "-p", fmt.Sprintf(`{"spec":{"source":{"catalog":{"version":%q}}}}`, version))
		if breaks := acceptedBreaks(version); len(breaks) > 0 {
			By(fmt.Sprintf("CRD upgrade safety (Strict) blocks the upgrade: this version breaks %d rule(s) on purpose (catalog/crd-upgrade-breaks.yaml)", len(breaks)))
			Eventually(conditionOf(pkg, "Progressing"), 2*time.Minute, time.Second).Should(
				ContainSubstring(`validating upgrade for CRD "` + breaks[0].CRD + `"`))
			Expect(extension("{.status.install.bundle.name}")()).To(Equal(pkg+".v"+prev), "still the previous release")
			// Listed and tested in test/olm: this one upgrade turns the
			// preflight off; later ones need not.
			kubectl("patch", "clusterextension", pkg, "--type=merge", "-p",
				`{"spec":{"install":{"preflight":{"crdUpgradeSafety":{"enforcement":"None"}}}}}`)
		} else {
			By("CRD upgrade safety stays Strict: this version breaks no rule (catalog/crd-upgrade-breaks.yaml lists none for it)")
		}
		Eventually(extension("{.status.install.bundle.name}"), 4*time.Minute, time.Second).Should(Equal(pkg + ".v" + version))
		Eventually(conditionOf(pkg, "Installed"), time.Minute, time.Second).Should(HavePrefix("True Succeeded"))
		Eventually(jsonpath(`{.status.conditions[?(@.type=="Established")].status}`, "crd",
			"applications.apps.mydeployment.io"), time.Minute, time.Second).Should(Equal("True"))
		Eventually(jsonpath("{.spec.template.spec.containers[0].image}", "-n", operatorNamespace, "deployment", operator.Deployment),
			time.Minute, time.Second).Should(Equal(utils.BundleManagerImage(projectDir)), "the manager image bundle/'s CSV names (by digest)")

		By("the old operator pod is gone: its manager stops mid-way through the in-place update")
		operator.StopManager()
		flight.ExpectUnderWay()
	})

	It("runs this version's manager, which finishes what the old one left and changes nothing else", func() {
		operator.Binary = "" // bin/manager
		operator.StartManager(projectDir)
		flight.ExpectKept()
		Expect(podUIDs()).To(Equal(before))
		Expect(jsonpath("{.metadata.generation}", "-n", workloads, "md", "mydeployment-sample")()).To(Equal(generation))
		flight.ExpectGoesOn()
		configroll.Check(inFlight)

		By("scaling works and the webhook still guards admission")
		kubectl("-n", workloads, "scale", "md", "mydeployment-sample", "--replicas=4")
		Eventually(jsonpath("{.status.availableReplicas}", "-n", workloads, "md", "mydeployment-sample"),
			2*time.Minute, time.Second).Should(Equal("4"))
		Expect(podUIDs()).To(ContainElements(before), "scaling up kept every pod")
		expectWebhookRefuses()
	})
})

// acceptedBreaks lists the CRD changes catalog/crd-upgrade-breaks.yaml
// accepts for version v: what OLM v1's CRD upgrade safety refuses.
func acceptedBreaks(v string) []crdsafety.AcceptedBreak {
	all, err := crdsafety.LoadAccepted(filepath.Join(projectDir, "catalog", "crd-upgrade-breaks.yaml"))
	Expect(err).NotTo(HaveOccurred())
	var out []crdsafety.AcceptedBreak
	for _, a := range all {
		if a.Version == v {
			out = append(out, a)
		}
	}
	return out
}
