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

// Abort to stable (issue 32), as a user sees it: an update whose pods never
// become Ready (a readiness gate nobody sets; kwok reports the pod not
// Ready, as a kubelet does), with progressDeadlineSeconds 15 and
// on-failure Abort, ends with every pod on the old revision, RolloutAborted,
// and the spec's template unchanged.
var _ = Describe("MyDeployment abort to stable on a local cluster", Ordered, func() {
	const (
		ns       = "e2e-abort"
		replicas = 4
		surge    = 1 // 25% of 4
	)
	BeforeAll(func() {
		_, err := utils.Kubectl("create", "namespace", ns)
		Expect(err).NotTo(HaveOccurred())
	})
	AfterAll(func() {
		_, _ = utils.Kubectl("delete", "namespace", ns, "--wait=false")
	})
	get := func(jsonpath string) func() string {
		return func() string {
			out, _ := utils.Kubectl("-n", ns, "get", "md", "abort", "-o", "jsonpath="+jsonpath)
			return out
		}
	}
	// live lists the revision of each pod that is not terminating.
	live := func() []string {
		out, err := utils.Kubectl("-n", ns, "get", "pods", "-l", "app=abort", "-o",
			`jsonpath={range .items[*]}{.metadata.deletionTimestamp}|{.metadata.labels.controller-revision-hash}{"\n"}{end}`)
		Expect(err).NotTo(HaveOccurred(), out)
		var revs []string
		for _, l := range utils.GetNonEmptyLines(out) {
			if deleting, rev, _ := strings.Cut(l, "|"); deleting == "" {
				revs = append(revs, rev)
			}
		}
		return revs
	}

	It("moves every pod back to the old revision when the rollout misses its deadline, the template unchanged", func() {
		_, err := utils.KubectlStdin(`apiVersion: apps.mydeployment.io/v1beta1
kind: MyDeployment
metadata:
  name: abort
  annotations: {apps.mydeployment.io/on-failure: Abort}
spec:
  replicas: 4
  progressDeadlineSeconds: 15
  selector: {matchLabels: {app: abort}}
  template:
    metadata: {labels: {app: abort}}
    spec:
      containers: [{name: web, image: "nginx:1.27"}]
`, "-n", ns, "apply", "-f", "-")
		Expect(err).NotTo(HaveOccurred())
		Eventually(get("{.status.availableReplicas}"), 2*time.Minute, time.Second).Should(Equal("4"))
		stable := get("{.status.currentRevision}")()
		Expect(stable).NotTo(BeEmpty())

		By("an update whose pods never become Ready")
		_, err = utils.Kubectl("-n", ns, "patch", "md", "abort", "--type=json", "-p",
			`[{"op":"add","path":"/spec/template/spec/readinessGates","value":[{"conditionType":"e2e.mydeployment.io/never"}]}]`)
		Expect(err).NotTo(HaveOccurred())

		By("past the deadline: aborted, every pod back on the old revision, never more than replicas+maxSurge")
		most := 0
		Eventually(func(g Gomega) {
			revs := live()
			most = max(most, len(revs))
			g.Expect(get(`{.status.conditions[?(@.type=="Progressing")].reason}`)()).To(Equal("RolloutAborted"))
			g.Expect(revs).To(HaveLen(replicas))
			g.Expect(revs).To(HaveEach(stable))
			g.Expect(get("{.status.availableReplicas}")()).To(Equal("4"))
		}, 3*time.Minute, time.Second).Should(Succeed())
		Expect(most).To(BeNumerically("<=", replicas+surge))
		Expect(get("{.spec.template.spec.readinessGates[0].conditionType}")()).To(Equal("e2e.mydeployment.io/never"),
			"the spec's template is not rewritten")
		Expect(get("{.status.currentRevision}")()).To(Equal(stable))
		update := get("{.status.updateRevision}")()
		Expect(update).NotTo(Equal(stable))
		Expect(get(`{.metadata.annotations.apps\.mydeployment\.io/aborted-revision}`)()).To(Equal(update))

		By("rollout status says so and exits non-zero; it stays aborted")
		out, err := utils.Run(exec.Command(filepath.Join(projectDir, "bin", "kubectl-mydeployment"),
			"-n", ns, "rollout", "status", "abort", "--timeout", "30s"))
		Expect(err).To(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("rollout aborted"))
		Consistently(live, 20*time.Second, 2*time.Second).Should(HaveEach(stable))
	})
})
