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

package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mydeployment-io/mydeployment-operator/test/utils"
)

const namespace = "e2e-sample"

var _ = Describe("MyDeployment on a local cluster", Ordered, func() {
	BeforeAll(func() {
		_, err := utils.Kubectl("create", "namespace", namespace)
		Expect(err).NotTo(HaveOccurred())
	})

	get := func(jsonpath string) func() string {
		return func() string {
			out, _ := utils.Kubectl("-n", namespace, "get", "md", "mydeployment-sample", "-o", "jsonpath="+jsonpath)
			return out
		}
	}

	It("runs the sample: pods scheduled on kwok nodes become Ready and status says so", func() {
		_, err := utils.Kubectl("-n", namespace, "apply", "-f",
			filepath.Join(projectDir, "config", "samples", "apps_v1beta1_mydeployment.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Eventually(get("{.status.availableReplicas}"), 2*time.Minute, time.Second).Should(Equal("3"))
		out, err := utils.Kubectl("-n", namespace, "get", "pods", "-l", "app=web",
			"-o", "jsonpath={range .items[*]}{.spec.nodeName} {.status.phase}{\"\\n\"}{end}")
		Expect(err).NotTo(HaveOccurred())
		lines := utils.GetNonEmptyLines(out)
		Expect(lines).To(HaveLen(3))
		for _, l := range lines {
			Expect(l).To(MatchRegexp(`^\S+ Running$`), "scheduled on a fake node and running")
		}
		Expect(get(`{.status.conditions[?(@.type=="Available")].status}`)()).To(Equal("True"))
		Eventually(get(`{.status.conditions[?(@.type=="Progressing")].reason}`), time.Minute, time.Second).
			Should(Equal("NewRevisionAvailable"))
	})

	It("rolls the sample to a new image with kubectl, with revisions and no ReplicaSet", func() {
		first := get("{.status.updateRevision}")()
		_, err := utils.Kubectl("-n", namespace, "patch", "md", "mydeployment-sample", "--type=json",
			"-p", `[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"nginx:1.28"}]`)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() string {
			return get("{.status.updatedReplicas}/{.status.availableReplicas}/{.status.replicas}/{.metadata.annotations.apps\\.mydeployment\\.io/revision}")()
		}, 2*time.Minute, time.Second).Should(Equal("3/3/3/2"))
		Eventually(get(`{.status.conditions[?(@.type=="Progressing")].reason}`), time.Minute, time.Second).
			Should(Equal("NewRevisionAvailable"))
		second := get("{.status.updateRevision}")()
		Expect(second).NotTo(Equal(first))
		Expect(get("{.status.currentRevision}")()).To(Equal(second))

		images, err := utils.Kubectl("-n", namespace, "get", "pods", "-l", "app=web",
			"-o", "jsonpath={range .items[*]}{.spec.containers[0].image}{\"\\n\"}{end}")
		Expect(err).NotTo(HaveOccurred())
		Expect(utils.GetNonEmptyLines(images)).To(ConsistOf("nginx:1.28", "nginx:1.28", "nginx:1.28"))

		revs, err := utils.Kubectl("-n", namespace, "get", "controllerrevisions", "-o", "name")
		Expect(err).NotTo(HaveOccurred())
		Expect(utils.GetNonEmptyLines(revs)).To(ConsistOf("controllerrevision.apps/"+first, "controllerrevision.apps/"+second))
		// In the sample's namespace only: other suites' Deployments (the drain
		// comparison) may run first, and their namespaces go away without waiting.
		rs, err := utils.Kubectl("-n", namespace, "get", "replicasets", "-o", "name")
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.TrimSpace(rs)).To(BeEmpty(), "MyDeployment creates no ReplicaSet")
	})

	It("lets kubectl run the plugin and complete it, and apply back what its get -o yaml prints", func() {
		By("kubectl mydeployment <TAB>: kubectl runs kubectl_complete-mydeployment from PATH (make plugin puts it in bin/)")
		out, err := utils.Kubectl("__complete", "mydeployment", "")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(And(MatchRegexp(`(?m)^get\t`), MatchRegexp(`(?m)^rollout\t`)))
		out, err = utils.Kubectl("__complete", "mydeployment", "-n", namespace, "rollout", "status", "mydeployment-s")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(MatchRegexp(`(?m)^mydeployment-sample$`))

		By("kubectl mydeployment get -o yaml | kubectl apply --dry-run=server -f -")
		yaml, err := utils.Kubectl("mydeployment", "-n", namespace, "get", "mydeployment-sample", "-o", "yaml")
		Expect(err).NotTo(HaveOccurred(), yaml)
		out, err = utils.KubectlStdin(yaml, "-n", namespace, "apply", "--dry-run=server", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("mydeployment.apps.mydeployment.io/mydeployment-sample"))
		Expect(out).To(ContainSubstring("(server dry run)"))
	})

	It("lets the kubectl plugin follow a rollout, show history and undo it", func() {
		plugin := func(args ...string) (string, error) {
			return utils.Run(exec.Command(filepath.Join(projectDir, "bin", "kubectl-mydeployment"),
				append([]string{"-n", namespace}, args...)...))
		}
		out, err := plugin("rollout", "history", "mydeployment-sample")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(And(ContainSubstring("REVISION"), MatchRegexp(`(?m)^1\s`), MatchRegexp(`(?m)^2\s`)))

		By("undoing to revision 1: the template goes back to nginx:1.27 and that revision is re-numbered")
		out, err = plugin("rollout", "undo", "mydeployment-sample")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(ContainSubstring("rolled back"))
		out, err = plugin("rollout", "status", "mydeployment-sample", "--timeout", "2m")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring(`mydeployment "mydeployment-sample" successfully rolled out`))
		Eventually(get("{.metadata.annotations.apps\\.mydeployment\\.io/revision}"), time.Minute, time.Second).Should(Equal("3"))
		images, err := utils.Kubectl("-n", namespace, "get", "pods", "-l", "app=web",
			"-o", "jsonpath={range .items[*]}{.spec.containers[0].image}{\"\\n\"}{end}")
		Expect(err).NotTo(HaveOccurred())
		Expect(utils.GetNonEmptyLines(images)).To(ConsistOf("nginx:1.27", "nginx:1.27", "nginx:1.27"))
		out, err = plugin("get", "mydeployment-sample")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(ContainSubstring("3/3"))

		By("restarting: a new revision rolls out every pod again")
		before, err := utils.Kubectl("-n", namespace, "get", "pods", "-l", "app=web", "-o", "name")
		Expect(err).NotTo(HaveOccurred())
		out, err = plugin("rollout", "restart", "mydeployment-sample")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(ContainSubstring("restarted"))
		Eventually(get("{.metadata.annotations.apps\\.mydeployment\\.io/revision}"), time.Minute, time.Second).Should(Equal("4"))
		out, err = plugin("rollout", "status", "mydeployment-sample", "--timeout", "2m")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("successfully rolled out"))
		// Old pods may still be terminating when status reports success.
		old := utils.GetNonEmptyLines(before)
		Eventually(func(g Gomega) {
			out, _ := utils.Kubectl("-n", namespace, "get", "pods", "-l", "app=web", "-o", "name")
			after := utils.GetNonEmptyLines(out)
			g.Expect(after).To(HaveLen(3))
			for _, p := range after {
				g.Expect(old).NotTo(ContainElement(p), "every pod was replaced")
			}
		}, time.Minute, time.Second).Should(Succeed())
	})

	It("scales with kubectl scale through the scale subresource", func() {
		_, err := utils.Kubectl("-n", namespace, "scale", "md", "mydeployment-sample", "--replicas=5")
		Expect(err).NotTo(HaveOccurred())
		Eventually(get("{.status.availableReplicas}"), 2*time.Minute, time.Second).Should(Equal("5"))
	})

	It("deletes its pods and revisions with it (garbage collection)", func() {
		_, err := utils.Kubectl("-n", namespace, "delete", "md", "mydeployment-sample", "--wait=true")
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() []string {
			out, _ := utils.Kubectl("-n", namespace, "get", "pods,controllerrevisions", "-o", "name")
			return utils.GetNonEmptyLines(out)
		}, 2*time.Minute, time.Second).Should(BeEmpty())
	})
})
