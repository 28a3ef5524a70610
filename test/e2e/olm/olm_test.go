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

package olm

import (
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mydeployment-io/mydeployment-operator/test/e2e/configroll"
	"github.com/mydeployment-io/mydeployment-operator/test/e2e/inflight"
	"github.com/mydeployment-io/mydeployment-operator/test/utils"
)

const pkg = "mydeployment-operator"

// The operator is installed for two target namespaces (an OperatorGroup with
// targetNamespaces: MultiNamespace); a third namespace is outside its reach.
var targets = []string{"md-a", "md-b"}

const outside = "md-c"

var kubectl = utils.MustKubectl

var jsonpath = utils.JSONPath

var apply = utils.MustApply

// podUIDs lists the MyDeployment pods of the target namespaces as namespace/name=uid.
func podUIDs() []string {
	var all []string
	for _, ns := range targets {
		out := kubectl("-n", ns, "get", "pods", "-l", "app=web", "-o",
			`jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}={.metadata.uid}{"\n"}{end}`)
		all = append(all, utils.GetNonEmptyLines(out)...)
	}
	sort.Strings(all)
	return all
}

const invalid = utils.InvalidMyDeployment

// invalidApp's Service port targets a container port no container has:
// only the Application webhook knows.
const invalidApp = `apiVersion: apps.mydeployment.io/v1beta1
kind: Application
metadata: {name: bad-port, namespace: %s}
spec:
  deployment:
    template:
      spec: {containers: [{name: web, image: nginx, ports: [{name: http, containerPort: 80}]}]}
  service:
    ports: [{name: http, port: 80, targetPort: https}]
`

// mdGenerations lists the MyDeployments of the target namespaces as namespace/name=generation.
func mdGenerations() []string {
	var all []string
	for _, ns := range targets {
		out := kubectl("-n", ns, "get", "md", "-o",
			`jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}={.metadata.generation}{"\n"}{end}`)
		all = append(all, utils.GetNonEmptyLines(out)...)
	}
	sort.Strings(all)
	return all
}

var _ = Describe("the operator through OLM", Ordered, func() {
	prev := ""
	csv := func(v string) string { return pkg + ".v" + v }

	// workloads are in flight when the upgrade lands (test/e2e/inflight).
	var workloads *inflight.Workloads

	BeforeAll(func() {
		prev = utils.PreviousRelease(projectDir, version)
		// Until the upgrade, the operator pod runs the previous release's
		// own manager, built from the commit it was released from.
		operator.Binary = utils.ReleaseManager(projectDir, prev)
	})

	It("installs the previous release from the catalog through a Subscription", func() {
		apply(fmt.Sprintf(`apiVersion: operators.coreos.com/v1alpha1
kind: CatalogSource
metadata: {name: mydeployment-catalog, namespace: olm}
spec: {sourceType: grpc, address: "%s", displayName: MyDeployment (local), publisher: e2e}
`, registry.address()))
		for _, ns := range append([]string{operatorNamespace, outside}, targets...) {
			kubectl("create", "namespace", ns)
		}
		apply(fmt.Sprintf(`apiVersion: operators.coreos.com/v1
kind: OperatorGroup
metadata: {name: mydeployment, namespace: %s}
spec: {targetNamespaces: [%s]}
---
apiVersion: operators.coreos.com/v1alpha1
kind: Subscription
metadata: {name: %s, namespace: %s}
spec: {channel: stable, name: %s, source: mydeployment-catalog, sourceNamespace: olm, installPlanApproval: Automatic}
`, operatorNamespace, strings.Join(targets, ", "), pkg, operatorNamespace, pkg))

		By("waiting for the CSV to succeed")
		Eventually(jsonpath("{.status.phase}", "-n", operatorNamespace, "csv", csv(prev)), 4*time.Minute, time.Second).
			Should(Equal("Succeeded"))
		// The catalog operator writes the Subscription's status on its own
		// sync, after the CSV it installed can already be Succeeded.
		Eventually(jsonpath("{.status.installedCSV}", "-n", operatorNamespace, "subscription", pkg), time.Minute, time.Second).
			Should(Equal(csv(prev)))
		plan := jsonpath("{.status.installPlanRef.name}", "-n", operatorNamespace, "subscription", pkg)()
		Expect(plan).NotTo(BeEmpty())
		Eventually(jsonpath("{.status.phase}", "-n", operatorNamespace, "installplan", plan), time.Minute, time.Second).
			Should(Equal("Complete"))
		Expect(jsonpath("{.status.bundleLookups}", "-n", operatorNamespace, "installplan", plan)()).To(BeEmpty(),
			"the bundle came inline from the catalog: no unpack job")
		Expect(jsonpath(`{.status.conditions[?(@.type=="Established")].status}`, "crd",
			"mydeployments.apps.mydeployment.io")()).To(Equal("True"))
		Expect(jsonpath("{.status.availableReplicas}", "-n", operatorNamespace, "deployment", operatorDeployment)()).
			To(Equal("1"))
		Expect(jsonpath("{.items[*].metadata.labels.olm\\.owner}", "validatingwebhookconfigurations")()).
			To(ContainSubstring(csv(prev)), "OLM made the validating webhook's configuration")
	})

	It("runs as OLM set it up: reconciles its target namespaces only, and serves the webhook", func() {
		startManager()
		for _, ns := range append([]string{outside}, targets...) {
			kubectl("-n", ns, "apply", "-f", filepath.Join(projectDir, "config", "samples", "apps_v1beta1_mydeployment.yaml"))
		}
		for _, ns := range targets {
			Eventually(jsonpath("{.status.availableReplicas}", "-n", ns, "md", "mydeployment-sample"),
				2*time.Minute, time.Second).Should(Equal("3"), ns)
		}
		Consistently(func() string {
			return jsonpath("{.status.observedGeneration}", "-n", outside, "md", "mydeployment-sample")() +
				jsonpath("{.items[*].metadata.name}", "-n", outside, "pods")()
		}, 5*time.Second, time.Second).Should(BeEmpty(), "no reconcile outside the OperatorGroup's namespaces")

		By("the webhook refuses a pod template the API server would refuse, where OLM scoped it")
		out, err := utils.KubectlStdin(fmt.Sprintf(invalid, targets[0]), "apply", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring("spec.template.spec.containers[0].resources.requests[cpu]"))
		// The CRD's schema cannot see that; outside the OperatorGroup OLM's
		// webhook configuration does not apply, and the same object gets in.
		_, err = utils.KubectlStdin(fmt.Sprintf(invalid, outside), "apply", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), "only the webhook refuses it")
	})

	It("leaves workloads in every state with the previous release's manager: a canary held at a pause, an Application", func() {
		workloads = inflight.Create(targets[1], filepath.Join(projectDir, "bin", "kubectl-mydeployment"))
		workloads.WaitSettled()
	})

	It("holds the upgrade while a rollout runs: the operator reports Upgradeable=False to OLM", func() {
		upgradeable := jsonpath(`{.spec.conditions[?(@.type=="Upgradeable")].status}`,
			"-n", operatorNamespace, "operatorcondition", csv(prev))
		Eventually(upgradeable, time.Minute, time.Second).Should(Equal("True"),
			"settled before the rollout: a canary waiting for a promote holds nothing")

		By("starting a slow rollout (each new pod counts as available only after 10 s)")
		kubectl("-n", targets[0], "patch", "md", "mydeployment-sample", "--type=merge", "-p",
			`{"spec":{"minReadySeconds":10,"template":{"metadata":{"annotations":{"e2e/rollout":"slow"}}}}}`)
		Eventually(upgradeable, 30*time.Second, 500*time.Millisecond).Should(Equal("False"))

		By("publishing a catalog in which " + csv(version) + " replaces " + csv(prev) + ": OLM must wait")
		registry.publish(filepath.Join(workDir, "catalog-new"))
		// OLM creates the new CSV (the old one shows Replacing) but holds it
		// Pending: the operator's Deployment keeps running the old version.
		image := jsonpath("{.spec.template.spec.containers[0].image}", "-n", operatorNamespace, "deployment", operatorDeployment)
		oldImage := image()
		Expect(oldImage).To(Equal(utils.ReleaseManagerImage(projectDir, prev)), "the manager image the previous release's CSV names")
		Eventually(jsonpath("{.status.reason}", "-n", operatorNamespace, "csv", csv(version)), time.Minute, time.Second).
			Should(Equal("OperatorConditionNotUpgradeable"))
		Consistently(func() string {
			return jsonpath("{.status.phase}", "-n", operatorNamespace, "csv", csv(version))() + " " + image()
		}, 5*time.Second, time.Second).Should(Equal("Pending "+oldImage), "no upgrade while Upgradeable=False")

		By("the old operator starts an in-place update while OLM holds the upgrade (its webhook still answers)")
		workloads.StartInPlace()

		By("the slow rollout completes; the in-place update still holds the upgrade")
		Eventually(jsonpath("{.status.updatedReplicas}/{.status.availableReplicas}", "-n", targets[0], "md", "mydeployment-sample"),
			2*time.Minute, time.Second).Should(Equal("3/3"))
		message := jsonpath(`{.spec.conditions[?(@.type=="Upgradeable")].message}`, "-n", operatorNamespace, "operatorcondition", csv(prev))
		Eventually(message, time.Minute, time.Second).Should(And(ContainSubstring(inflight.InPlace), Not(ContainSubstring("mydeployment-sample"))),
			"the operator names what still rolls")
		Expect(upgradeable()).To(Equal("False"))
	})

	var before, generations []string

	It("upgrades to this version in the middle of the in-place update when an admin overrides the hold, leaving MyDeployments and their pods alone", func() {
		before = podUIDs()
		Expect(before).To(HaveLen(3 * len(targets)))
		workloads.Snapshot()
		generations = mdGenerations()

		By("a cluster admin forces the upgrade: the OperatorCondition's spec.overrides says Upgradeable=True")
		kubectl("-n", operatorNamespace, "patch", "operatorcondition", csv(prev), "--type=merge", "-p",
			`{"spec":{"overrides":[{"type":"Upgradeable","status":"True","reason":"ForcedByAdmin","message":"e2e: upgrade mid-rollout"}]}}`)
		phase := jsonpath("{.status.phase}", "-n", operatorNamespace, "csv", csv(version))
		Eventually(phase, time.Minute, 200*time.Millisecond).Should(BeElementOf("InstallReady", "Installing", "Succeeded"))

		By("OLM replaces the old operator pod: its manager stops mid-way through the in-place update")
		stopManager()
		workloads.ExpectUnderWay()

		Eventually(phase, 4*time.Minute, time.Second).Should(Equal("Succeeded"))
		Expect(jsonpath("{.spec.replaces}", "-n", operatorNamespace, "csv", csv(version))()).To(Equal(csv(prev)))
		Eventually(jsonpath("{.items[*].metadata.name}", "-n", operatorNamespace, "csv"), time.Minute, time.Second).
			Should(Equal(csv(version)), "the old CSV is gone")
		Eventually(jsonpath("{.status.installedCSV}", "-n", operatorNamespace, "subscription", pkg), time.Minute, time.Second).
			Should(Equal(csv(version)))

		By("OLM grants this version's pod writes in the target namespaces only (the previous release's were cluster-wide)")
		sa := serviceAccountUser(operatorNamespace, operatorServiceAccount)
		for _, ns := range targets {
			Eventually(canI(sa, ns, "create", "pods"), time.Minute, time.Second).Should(Equal("yes"), ns)
		}
		Eventually(canI(sa, outside, "create", "pods"), time.Minute, time.Second).Should(Equal("no"), outside)
		waitOperatorSettled(version)
		workloads.ExpectUnderWay()
	})

	It("runs this version's manager, which finishes what the old one left and changes nothing else", func() {
		operator.Binary = "" // bin/manager
		startManager()
		workloads.ExpectKept()
		Expect(podUIDs()).To(Equal(before))
		Expect(mdGenerations()).To(Equal(generations), "no MyDeployment's spec changed")
		workloads.ExpectGoesOn()
		configroll.Check(targets[0])

		By("scaling works and the webhook still guards admission")
		kubectl("-n", targets[0], "scale", "md", "mydeployment-sample", "--replicas=4")
		Eventually(jsonpath("{.status.availableReplicas}", "-n", targets[0], "md", "mydeployment-sample"),
			2*time.Minute, time.Second).Should(Equal("4"))
		Expect(podUIDs()).To(ContainElements(before), "scaling up kept every pod")
		out, err := utils.KubectlStdin(fmt.Sprintf(invalid, targets[1]), "apply", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring("spec.template.spec.containers[0].resources.requests[cpu]"))
	})

	It("serves Applications after the upgrade: the sample becomes Available and Ready, and the webhook guards them", func() {
		ns := targets[1]
		kubectl("-n", ns, "apply", "-f", filepath.Join(projectDir, "config", "samples", "apps_v1beta1_application.yaml"))
		app := func(path string) func() string { return jsonpath(path, "-n", ns, "mdapp", "application-sample") }
		Eventually(app(`{.status.conditions[?(@.type=="Available")].status}`), 2*time.Minute, time.Second).Should(Equal("True"))
		md := func(path string) string { return jsonpath(path, "-n", ns, "md", "application-sample")() }
		Expect(md("{.status.availableReplicas}")).To(Equal("1"))
		Expect(md("{.status.observedGeneration}")).To(Equal(md("{.metadata.generation}")),
			"the upgraded operator reconciled the Application's MyDeployment")
		// Ready: the Service has the pod as its endpoint (kube-controller-manager's EndpointSlice controller).
		Eventually(app(`{.status.conditions[?(@.type=="Ready")].status}/{.status.service.readyEndpoints}`), time.Minute, time.Second).
			Should(Equal("True/1"))

		By("the Application webhook OLM configured refuses what can never work")
		out, err := utils.KubectlStdin(fmt.Sprintf(invalidApp, ns), "apply", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring("spec.service.ports[0].targetPort"))
	})

	It("installs in OwnNamespace and AllNamespaces mode too, watching what each OperatorGroup says", func() {
		stopManager()
		By("uninstalling the MultiNamespace install (CRD and MyDeployments stay, as OLM leaves them)")
		kubectl("-n", operatorNamespace, "delete", "subscription", pkg)
		kubectl("-n", operatorNamespace, "delete", "csv", csv(version))
		kubectl("-n", operatorNamespace, "delete", "operatorgroup", "mydeployment")
		Eventually(jsonpath("{.items[*].metadata.name}", "-n", operatorNamespace, "deployments"), time.Minute, time.Second).
			Should(BeEmpty())

		// elsewhere: may the operator create pods in a namespace it does not watch?
		for _, mode := range []struct{ ns, targets, watch, elsewhere string }{
			{ns: "md-own", targets: "[md-own]", watch: "md-own", elsewhere: "no"}, // OwnNamespace
			{ns: "md-all", targets: "", watch: "", elsewhere: "yes"},              // AllNamespaces
		} {
			By("installing into " + mode.ns + " with targetNamespaces " + mode.targets)
			kubectl("create", "namespace", mode.ns)
			spec := "{}"
			if mode.targets != "" {
				spec = "{targetNamespaces: " + mode.targets + "}"
			}
			apply(fmt.Sprintf(`apiVersion: operators.coreos.com/v1
kind: OperatorGroup
metadata: {name: mydeployment, namespace: %[1]s}
spec: %[2]s
---
apiVersion: operators.coreos.com/v1alpha1
kind: Subscription
metadata: {name: %[3]s, namespace: %[1]s}
spec: {channel: stable, name: %[3]s, source: mydeployment-catalog, sourceNamespace: olm}
`, mode.ns, spec, pkg))
			Eventually(jsonpath("{.status.phase}", "-n", mode.ns, "csv", csv(version)), 4*time.Minute, time.Second).
				Should(Equal("Succeeded"))
			Eventually(jsonpath(`{range .items[*]}[{.metadata.annotations.olm\.targetNamespaces}]{end}`, "-n", mode.ns, "pods",
				"-l", "control-plane=controller-manager"), time.Minute, time.Second).Should(MatchRegexp(`^(\[`+regexp.QuoteMeta(mode.watch)+`\])+$`),
				"every operator pod's WATCH_NAMESPACE (empty: all namespaces)")
			sa := serviceAccountUser(mode.ns, operatorServiceAccount)
			Eventually(canI(sa, mode.ns, "create", "pods"), time.Minute, time.Second).Should(Equal("yes"), mode.ns)
			Eventually(canI(sa, outside, "create", "pods"), time.Minute, time.Second).Should(Equal(mode.elsewhere), outside)

			By("the operator of this install reads config where it may create pods: rollouts on config change work")
			op := &utils.OLMOperator{Namespace: mode.ns, Deployment: operatorDeployment, ServiceAccount: operatorServiceAccount, WorkDir: workDir}
			op.StartManager(projectDir, "OPERATOR_NAMESPACE="+mode.ns)
			configroll.Check(mode.ns)
			op.StopManager()
			op.RemoveAddresses()

			kubectl("-n", mode.ns, "delete", "subscription", pkg)
			kubectl("-n", mode.ns, "delete", "csv", csv(version))
			kubectl("-n", mode.ns, "delete", "operatorgroup", "mydeployment")
		}
	})
})
