package e2e

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mydeployment-io/mydeployment-operator/test/utils"
)

// Behaviour beyond Deployment (issue 17), as a user drives it: kubectl, the
// plugin and a PodDisruptionBudget that kube-controller-manager's
// disruption controller keeps up to date.
var _ = Describe("MyDeployment beyond Deployment on a local cluster", Ordered, func() {
	const ns = "e2e-beyond"
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
	get := func(name, jsonpath string) func() string {
		return func() string {
			out, _ := utils.Kubectl("-n", ns, "get", "md", name, "-o", "jsonpath="+jsonpath)
			return out
		}
	}
	apply := func(name string, replicas int, annotations string) {
		GinkgoHelper()
		_, err := utils.KubectlStdin(fmt.Sprintf(`apiVersion: apps.mydeployment.io/v1beta1
kind: MyDeployment
metadata:
  name: %[1]s
  annotations: {%[3]s}
spec:
  replicas: %[2]d
  progressDeadlineSeconds: 20
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      containers: [{name: web, image: "nginx:1.27"}]
`, name, replicas, annotations), "-n", ns, "apply", "-f", "-")
		Expect(err).NotTo(HaveOccurred())
		Eventually(get(name, "{.status.availableReplicas}"), 2*time.Minute, time.Second).Should(Equal(strconv.Itoa(replicas)))
	}
	// kubectl set image knows only built-in kinds.
	setImage := func(name, image string) {
		GinkgoHelper()
		kubectl("patch", "md", name, "--type=json", "-p",
			`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"`+image+`"}]`)
	}
	// live lists one field per pod that is not terminating (kubectl's
	// jsonpath has no negation, so the deletion timestamp is filtered here).
	live := func(app, field string) []string {
		var out []string
		for _, l := range utils.GetNonEmptyLines(kubectl("get", "pods", "-l", "app="+app, "-o",
			`jsonpath={range .items[*]}{.metadata.deletionTimestamp}|`+field+`{"\n"}{end}`)) {
			if deleting, value, _ := strings.Cut(l, "|"); deleting == "" {
				out = append(out, value)
			}
		}
		return out
	}
	images := func(app string) []string { return live(app, "{.spec.containers[0].image}") }
	count := func(list []string, s string) int {
		n := 0
		for _, x := range list {
			if x == s {
				n++
			}
		}
		return n
	}

	It("holds a canary at its partition, moves pods back when it is raised, and finishes on promote", func() {
		apply("canary", 10, "")
		out, err := plugin("rollout", "partition", "canary", "8")
		Expect(err).NotTo(HaveOccurred(), out)
		setImage("canary", "nginx:1.28")

		out, err = plugin("rollout", "status", "canary", "--timeout", "2m")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("partitioned roll out complete: 2 of 10 pods updated"))
		Expect(get("canary", `{.status.updatedReplicas}/{.status.availableReplicas}/{.status.conditions[?(@.type=="Progressing")].reason}`)()).
			To(Equal("2/10/PartitionAvailable"))
		Consistently(func() int { return count(images("canary"), "nginx:1.28") }, 25*time.Second, 2*time.Second).Should(Equal(2),
			"held past the progress deadline (20 s), and not failed")
		Expect(get("canary", `{.status.conditions[?(@.type=="Progressing")].status}`)()).To(Equal("True"))

		By("raising the partition to 10: the updated pods go back to the current revision")
		_, err = plugin("rollout", "partition", "canary", "10")
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() int { return count(images("canary"), "nginx:1.27") }, 2*time.Minute, time.Second).Should(Equal(10))
		// updatedReplicas 0 is omitted from the status, as a Deployment's is.
		Eventually(get("canary", "{.status.updatedReplicas}/{.status.availableReplicas}"), time.Minute, time.Second).Should(MatchRegexp("^0?/10$"))

		By("promoting: the partition goes and the rollout completes")
		out, err = plugin("rollout", "promote", "canary")
		Expect(err).NotTo(HaveOccurred(), out)
		out, err = plugin("rollout", "status", "canary", "--timeout", "2m")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("successfully rolled out"))
		Expect(images("canary")).To(HaveEach("nginx:1.28"))
		Expect(images("canary")).To(HaveLen(10))
	})

	It("replaces a pod labelled specified-delete, and deletes such a pod first on a scale-down", func() {
		pods := utils.GetNonEmptyLines(kubectl("get", "pods", "-l", "app=canary", "-o", "name"))
		Expect(pods).To(HaveLen(10))
		kubectl("label", pods[3], "apps.mydeployment.io/specified-delete=true")
		Eventually(func() []string {
			return utils.GetNonEmptyLines(kubectl("get", "pods", "-l", "app=canary", "-o", "name"))
		}, time.Minute, time.Second).ShouldNot(ContainElement(pods[3]))
		Eventually(get("canary", "{.status.availableReplicas}/{.status.replicas}"), time.Minute, time.Second).Should(Equal("10/10"))

		// Paused, so that the label alone does not replace the pod before
		// the scale-down: a paused MyDeployment only scales.
		_, err := plugin("rollout", "pause", "canary")
		Expect(err).NotTo(HaveOccurred())
		pods = utils.GetNonEmptyLines(kubectl("get", "pods", "-l", "app=canary", "-o", "name"))
		chosen := pods[6]
		kubectl("label", chosen, "apps.mydeployment.io/specified-delete=true", "--overwrite")
		kubectl("scale", "md/canary", "--replicas=9")
		Eventually(get("canary", "{.status.replicas}"), time.Minute, time.Second).Should(Equal("9"))
		_, err = plugin("rollout", "resume", "canary")
		Expect(err).NotTo(HaveOccurred())
		after := utils.GetNonEmptyLines(kubectl("get", "pods", "-l", "app=canary", "-o", "name"))
		Expect(after).NotTo(ContainElement(chosen))
		for _, p := range pods {
			if p != chosen {
				Expect(after).To(ContainElement(p), "only the labelled pod went")
			}
		}
	})

	It("rolls out through evictions that a PodDisruptionBudget holds back", func() {
		apply("guarded", 4, `"apps.mydeployment.io/respect-pdb": "true"`)
		// maxUnavailable 2 would let two pods go at once; the budget allows one.
		kubectl("patch", "md/guarded", "--type=merge", "-p",
			`{"spec":{"strategy":{"rollingUpdate":{"maxSurge":0,"maxUnavailable":2}}}}`)
		// maxUnavailable: kube-controller-manager reads the MyDeployment's
		// scale; before it can, the budget fails and backs off.
		waitForKCMToKnowTheCRDs()
		_, err := utils.KubectlStdin(`apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: guarded}
spec:
  maxUnavailable: 1
  selector: {matchLabels: {app: guarded}}
`, "-n", ns, "apply", "-f", "-")
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() string {
			out, _ := utils.Kubectl("-n", ns, "get", "pdb", "guarded", "-o", "jsonpath={.status.disruptionsAllowed}")
			return out
		}, time.Minute, time.Second).Should(Equal("1"))

		setImage("guarded", "nginx:1.28")
		minReady := 4
		Eventually(func(g Gomega) {
			ready := strings.Count(strings.Join(live("guarded", `{.status.conditions[?(@.type=="Ready")].status}`), " "), "True")
			minReady = min(minReady, ready)
			// The pods' images too: right after the patch the status still
			// reads 4/4/NewRevisionAvailable for the previous generation.
			g.Expect(images("guarded")).To(And(HaveLen(4), HaveEach("nginx:1.28")))
			g.Expect(get("guarded", `{.status.updatedReplicas}/{.status.availableReplicas}/{.status.conditions[?(@.type=="Progressing")].reason}`)()).
				To(Equal("4/4/NewRevisionAvailable"))
		}, 3*time.Minute, 200*time.Millisecond).Should(Succeed())
		Expect(minReady).To(BeNumerically(">=", 3), "the budget's one disruption at a time held")
		events := kubectl("get", "events", "--field-selector", "involvedObject.name=guarded,involvedObject.kind=MyDeployment",
			"-o", `jsonpath={range .items[*]}{.reason}: {.note}{.message}{"\n"}{end}`)
		Expect(events).To(ContainSubstring("Evicted"))
		// Two evictions asked at once (maxUnavailable 2), one allowed.
		Expect(events).To(MatchRegexp(`EvictionRefused: .*disruption budget guarded`))
	})
})
