package e2e

import (
	"fmt"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mydeployment-io/mydeployment-operator/test/utils"
)

// In-place updates (issue 18) on the local cluster, whose kwok stages play
// the kubelet's part: a readiness gate holds Ready, a changed image
// restarts the container, a resize is applied (hack/kwok).
var _ = Describe("MyDeployment in-place updates on a local cluster", Ordered, func() {
	const (
		ns       = "e2e-inplace"
		name     = "inplace"
		replicas = 10
	)
	BeforeAll(func() {
		_, err := utils.Kubectl("create", "namespace", ns)
		Expect(err).NotTo(HaveOccurred())
		_, err = utils.KubectlStdin(fmt.Sprintf(`apiVersion: apps.mydeployment.io/v1beta1
kind: MyDeployment
metadata:
  name: %[1]s
  annotations: {apps.mydeployment.io/update-mode: InPlaceIfPossible}
spec:
  replicas: %[2]d
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      containers:
      - name: web
        image: "nginx:1.27"
        resources:
          requests: {cpu: 100m, memory: 64Mi}
          limits: {cpu: 200m, memory: 128Mi}
`, name, replicas), "-n", ns, "apply", "-f", "-")
		Expect(err).NotTo(HaveOccurred())
		Eventually(status, 2*time.Minute, time.Second).Should(Equal(fmt.Sprintf("%d/%d/NewRevisionAvailable", replicas, replicas)))
	})
	AfterAll(func() {
		_, _ = utils.Kubectl("delete", "namespace", ns, "--wait=false")
	})

	// pods lists one line per pod that is not terminating: "uid ip field".
	pods := func(field string) []string {
		out, err := utils.Kubectl("-n", ns, "get", "pods", "-l", "app="+name, "-o",
			`jsonpath={range .items[*]}{.metadata.deletionTimestamp}|{.metadata.uid} {.status.podIP} `+field+`{"\n"}{end}`)
		Expect(err).NotTo(HaveOccurred(), out)
		var live []string
		for _, l := range utils.GetNonEmptyLines(out) {
			if deleting, rest, _ := strings.Cut(l, "|"); deleting == "" {
				live = append(live, rest)
			}
		}
		slices.Sort(live)
		return live
	}
	identities := func() []string {
		var out []string
		for _, l := range pods("") {
			out = append(out, strings.TrimSpace(l))
		}
		return out
	}
	patch := func(p string) {
		GinkgoHelper()
		out, err := utils.Kubectl("-n", ns, "patch", "md", name, "--type=json", "-p", p)
		Expect(err).NotTo(HaveOccurred(), out)
	}
	// rollOut waits until every pod shows want (one field per pod) and the
	// status is complete, checking at every look that there are never more
	// than replicas pods and never fewer than replicas-maxUnavailable (2)
	// Ready ones.
	rollOut := func(field, want string) {
		GinkgoHelper()
		most, fewestReady := 0, replicas
		Eventually(func(g Gomega) {
			all := pods(field + ` {.status.conditions[?(@.type=="Ready")].status}`)
			ready := 0
			for _, l := range all {
				if strings.HasSuffix(l, " True") {
					ready++
				}
			}
			most, fewestReady = max(most, len(all)), min(fewestReady, ready)
			for _, l := range all {
				g.Expect(strings.Fields(l)[2]).To(Equal(want))
			}
			g.Expect(status()).To(Equal(fmt.Sprintf("%d/%d/NewRevisionAvailable", replicas, replicas)))
		}, 3*time.Minute, 200*time.Millisecond).Should(Succeed())
		Expect(most).To(Equal(replicas), "never more pods than replicas")
		Expect(fewestReady).To(BeNumerically(">=", replicas-2), "never fewer than replicas-maxUnavailable Ready")
	}

	It("changes the image in place: the same 10 pods (UIDs and IPs), each container restarted once", func() {
		before := identities()
		Expect(before).To(HaveLen(replicas))
		patch(`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"nginx:1.28"}]`)
		rollOut("{.spec.containers[0].image}", "nginx:1.28")
		Expect(identities()).To(Equal(before), "same pod UIDs and IPs")
		for _, l := range pods(`{.status.containerStatuses[0].image}/{.status.containerStatuses[0].restartCount}`) {
			Expect(strings.Fields(l)[2]).To(Equal("nginx:1.28/1"), "the kubelet (kwok) restarted the container on the new image")
		}
		events, err := utils.Kubectl("-n", ns, "get", "events", "--field-selector", "involvedObject.name="+name+",involvedObject.kind=MyDeployment",
			"-o", `jsonpath={range .items[*]}{.reason}: {.note}{.message}{"\n"}{end}`)
		Expect(err).NotTo(HaveOccurred())
		Expect(events).To(ContainSubstring("InPlaceUpdate: Updating"))
	})

	It("resizes in place through pods/resize: the same pods, the new limits applied", func() {
		before := identities()
		patch(`[{"op":"replace","path":"/spec/template/spec/containers/0/resources/limits/cpu","value":"300m"}]`)
		rollOut("{.spec.containers[0].resources.limits.cpu}", "300m")
		Expect(identities()).To(Equal(before), "same pod UIDs and IPs")
		for _, l := range pods("{.status.containerStatuses[0].resources.limits.cpu}") {
			Expect(strings.Fields(l)[2]).To(Equal("300m"), "the kubelet (kwok) applied the resize")
		}
	})

	It("recreates the pods for a change that is not in-place-able (a command)", func() {
		before := identities()
		patch(`[{"op":"add","path":"/spec/template/spec/containers/0/command","value":["nginx","-g","daemon off;"]}]`)
		Eventually(func(g Gomega) {
			now := identities()
			g.Expect(now).To(HaveLen(replicas))
			for _, id := range now {
				g.Expect(before).NotTo(ContainElement(id))
			}
			g.Expect(status()).To(Equal(fmt.Sprintf("%d/%d/NewRevisionAvailable", replicas, replicas)))
		}, 3*time.Minute, time.Second).Should(Succeed())
	})
})

// status is the in-place MyDeployment's "updated/available/Progressing
// reason", or "stale" while its status is of an older generation.
func status() string {
	out, _ := utils.Kubectl("-n", "e2e-inplace", "get", "md", "inplace", "-o",
		`jsonpath={.metadata.generation}/{.status.observedGeneration} {.status.updatedReplicas}/{.status.availableReplicas}/{.status.conditions[?(@.type=="Progressing")].reason}`)
	gen, st, _ := strings.Cut(out, " ")
	if g, o, _ := strings.Cut(gen, "/"); g != o {
		return "stale"
	}
	return st
}
