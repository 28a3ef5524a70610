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

package real

import (
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mydeployment-io/mydeployment-operator/test/utils"
)

// webMyDeployment is a MyDeployment of the test web app: an httpGet readiness
// probe that passes only 3 s after the container starts, a drain of 3 s after
// SIGTERM, cpu limited (so that a resize shows in the container's cgroup).
const webMyDeployment = `apiVersion: apps.mydeployment.io/v1beta1
kind: MyDeployment
metadata:
  name: %[1]s
  annotations: {%[2]s}
spec:
  replicas: %[3]d
  selector: {matchLabels: {app: %[1]s}}
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      terminationGracePeriodSeconds: 30
      containers:
      - name: web
        image: %[4]q
        args: ["-drain=3s"]
        ports: [{name: http, containerPort: 8080}]
        readinessProbe:
          httpGet: {path: /healthz, port: 8080}
          initialDelaySeconds: 3
          periodSeconds: 1
        resources:
          requests: {cpu: 50m, memory: 32Mi}
          limits: {cpu: 100m, memory: 64Mi}
`

// answers is what every pod of the list answers on its IP.
func answers(ps []corev1.Pod) []string {
	var got []string
	for _, p := range ps {
		a, err := answer(net.JoinHostPort(p.Status.PodIP, "8080"))
		if err != nil {
			a = err.Error()
		}
		got = append(got, a)
	}
	return got
}

// rolledOut waits until the MyDeployment's status says every one of its
// replicas is updated and available, and no other pod is left.
func rolledOut(ns, name string, replicas int) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		out, err := utils.Kubectl("-n", ns, "get", "md", name, "-o",
			"jsonpath={.metadata.generation} {.status.observedGeneration} {.status.replicas} {.status.updatedReplicas} {.status.availableReplicas}")
		g.Expect(err).NotTo(HaveOccurred())
		f := strings.Fields(out)
		g.Expect(f).To(HaveLen(5), out)
		g.Expect(f[1]).To(Equal(f[0]), "observed")
		g.Expect(f[2:]).To(Equal([]string{fmt.Sprint(replicas), fmt.Sprint(replicas), fmt.Sprint(replicas)}), "replicas updated available")
		g.Expect(pods(ns, "app="+name)).To(HaveLen(replicas))
	}, 3*time.Minute, 250*time.Millisecond).Should(Succeed())
}

// cgroupFile reads a file of a container's cgroup in the cpu hierarchy
// (cgroup v1; kubelet's cgroupfs driver names the container's cgroup by
// its ID under the pod's).
func cgroupFile(containerID, file string) string {
	GinkgoHelper()
	id := containerID[strings.Index(containerID, "://")+3:]
	var found string
	_ = filepath.WalkDir("/sys/fs/cgroup/cpu", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if d.Name() == id {
			found = path
			return filepath.SkipAll
		}
		return nil
	})
	Expect(found).NotTo(BeEmpty(), "no cgroup of container %s", id)
	b, err := os.ReadFile(filepath.Join(found, file))
	Expect(err).NotTo(HaveOccurred())
	return strings.TrimSpace(string(b))
}

var _ = Describe("a MyDeployment of real pods", Ordered, func() {
	const ns = "real-web"
	namespace(ns)

	It("makes its pods Ready only once their readiness probe passes, each answering v1 on its IP", func() {
		apply(fmt.Sprintf(webMyDeployment, "web", "", 3, testweb("v1")), "-n", ns)
		rolledOut(ns, "web", 3)
		ps := pods(ns, "app=web")
		for _, p := range ps {
			Expect(p.Spec.NodeName).To(Equal(node))
			Expect(p.Spec.ReadinessGates).To(BeEmpty(), "Ready is the kubelet's probe alone")
			Expect(p.Status.ContainerStatuses).To(HaveLen(1))
			started := p.Status.ContainerStatuses[0].State.Running.StartedAt.Time
			readyAt := condition(&p, corev1.PodReady).LastTransitionTime.Time
			// The probe's first try is 3 s after the start; times have whole seconds.
			Expect(readyAt.Sub(started)).To(BeNumerically(">=", 2*time.Second), "%s: started %s, Ready %s", p.Name, started, readyAt)
		}
		Expect(answers(ps)).To(Equal([]string{"v1", "v1", "v1"}))
	})

	It("rolls out v2 with real readiness, never below 3 Ready pods nor above 4 (maxSurge 1, maxUnavailable 0)", func() {
		minReady, maxAll := 3, 3
		samples := sampled(func() {
			kubectl("-n", ns, "patch", "md", "web", "--type=json", "-p",
				fmt.Sprintf(`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":%q}]`, testweb("v2")))
			rolledOut(ns, "web", 3)
		}, func() {
			ps := pods(ns, "app=web")
			n := 0
			for i := range ps {
				if ready(&ps[i]) {
					n++
				}
			}
			minReady, maxAll = min(minReady, n), max(maxAll, len(ps))
		})
		GinkgoWriter.Printf("rollout sampled %d times: min Ready %d, max pods %d\n", samples, minReady, maxAll)
		Expect(samples).To(BeNumerically(">", 20))
		Expect(minReady).To(BeNumerically(">=", 3))
		Expect(maxAll).To(BeNumerically("<=", 4))
		Expect(answers(pods(ns, "app=web"))).To(Equal([]string{"v2", "v2", "v2"}))
	})

	It("scales in with SIGTERM: the app drains and stops within its grace period", func() {
		ps := pods(ns, "app=web")
		logs := map[string]func() []string{}
		for _, p := range ps {
			logs[p.Name] = follow(ns, p.Name)
		}
		kubectl("-n", ns, "scale", "md", "web", "--replicas=2")
		rolledOut(ns, "web", 2)
		left := map[string]bool{}
		for _, p := range pods(ns, "app=web") {
			left[p.Name] = true
		}
		var gone string
		for _, p := range ps {
			if !left[p.Name] {
				gone = p.Name
			}
		}
		Expect(gone).NotTo(BeEmpty())
		// The log stream ends when the container does.
		Eventually(func() []string { return logs[gone]() }, time.Minute, 200*time.Millisecond).Should(ContainElements(
			ContainSubstring("got SIGTERM, serving 3s more before stopping"),
			ContainSubstring("stopped"),
		), "the app logged the signal and its own clean stop: it was not killed before its drain ended")
		for name := range left {
			Expect(logs[name]()).NotTo(ContainElement(ContainSubstring("SIGTERM")), name)
		}
	})
})

var _ = Describe("an in-place update of real pods", Ordered, func() {
	const ns = "real-inplace"
	namespace(ns)

	type seen struct {
		uid         types.UID
		ip          string
		restarts    int32
		containerID string
	}
	look := func() map[string]seen {
		GinkgoHelper()
		m := map[string]seen{}
		for _, p := range pods(ns, "app=inplace") {
			Expect(p.Status.ContainerStatuses).To(HaveLen(1))
			s := p.Status.ContainerStatuses[0]
			m[p.Name] = seen{p.UID, p.Status.PodIP, s.RestartCount, s.ContainerID}
		}
		return m
	}
	var before map[string]seen

	It("starts two pods of v1", func() {
		// maxUnavailable 1: with 0 no pod may leave Ready even to restart, so
		// the controller surges one pod and removes the last old one
		// (docs/beyond-deployment.md); here every pod moves in place.
		manifest := strings.Replace(fmt.Sprintf(webMyDeployment, "inplace", "apps.mydeployment.io/update-mode: InPlaceIfPossible", 2, testweb("v1")),
			"{maxSurge: 1, maxUnavailable: 0}", "{maxSurge: 0, maxUnavailable: 1}", 1)
		Expect(manifest).To(ContainSubstring("maxUnavailable: 1"))
		apply(manifest, "-n", ns)
		rolledOut(ns, "inplace", 2)
		before = look()
		Expect(before).To(HaveLen(2))
		Expect(answers(pods(ns, "app=inplace"))).To(Equal([]string{"v1", "v1"}))
	})

	It("moves them to v2 in place: each container restarted once by the kubelet, same pod and IP, answering v2", func() {
		kubectl("-n", ns, "patch", "md", "inplace", "--type=json", "-p",
			fmt.Sprintf(`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":%q}]`, testweb("v2")))
		rolledOut(ns, "inplace", 2)
		Eventually(func(g Gomega) {
			g.Expect(answers(pods(ns, "app=inplace"))).To(Equal([]string{"v2", "v2"}))
		}, 30*time.Second, 250*time.Millisecond).Should(Succeed())
		after := look()
		Expect(after).To(HaveLen(2))
		for name, b := range before {
			Expect(after).To(HaveKey(name), "the same pods")
			a := after[name]
			Expect(a.uid).To(Equal(b.uid), name)
			Expect(a.ip).To(Equal(b.ip), name)
			Expect(a.restarts).To(Equal(b.restarts+1), "%s: its container restarted once, with the new image", name)
			Expect(a.containerID).NotTo(Equal(b.containerID), name)
		}
		for _, p := range pods(ns, "app=inplace") {
			Expect(p.Status.ContainerStatuses[0].ImageID).To(HaveSuffix("@"+digests[testweb("v2")]), p.Name)
		}
		before = after
	})

	It("resizes cpu in place: the kubelet sets the container's cgroup quota, no restart", func() {
		for _, s := range before {
			Expect(cgroupFile(s.containerID, "cpu.cfs_quota_us")).To(Equal("10000"), "100m of a 100 ms period")
		}
		kubectl("-n", ns, "patch", "md", "inplace", "--type=json", "-p",
			`[{"op":"replace","path":"/spec/template/spec/containers/0/resources/limits/cpu","value":"200m"}]`)
		rolledOut(ns, "inplace", 2)
		Eventually(func(g Gomega) {
			for _, p := range pods(ns, "app=inplace") {
				r := p.Status.ContainerStatuses[0].Resources
				g.Expect(r).NotTo(BeNil())
				g.Expect(r.Limits.Cpu().String()).To(Equal("200m"), p.Name)
			}
		}, time.Minute, 250*time.Millisecond).Should(Succeed())
		after := look()
		for name, b := range before {
			Expect(after).To(HaveKeyWithValue(name, b), "%s: same pod, IP and container, not restarted", name)
			Expect(cgroupFile(b.containerID, "cpu.cfs_quota_us")).To(Equal("20000"), "%s: 200m of a 100 ms period", name)
		}
		Expect(answers(pods(ns, "app=inplace"))).To(Equal([]string{"v2", "v2"}))
	})
})
