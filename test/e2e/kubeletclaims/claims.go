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

// Package kubeletclaims holds what MyDeployment's in-place update relies on
// a kubelet to do (readiness gates, a patched image restarting its container
// in the same pod, pods/resize applied), as specs that run on any node: the
// e2e suite runs them on kwok's nodes, whose stages (hack/kwok/stages.yaml)
// play the kubelet, and the real-node suite runs the very same specs on
// real-0's kubelet, so a stage that claims something a kubelet does not do
// fails there.
package kubeletclaims

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/mydeployment-io/mydeployment-operator/test/utils"
)

// Images are what the claims' pods run. On kwok's nodes any name will do
// (nothing runs); on a real node each must be pullable and keep serving.
type Images struct {
	// Web is the main container's image, WebNext the one it is patched to.
	Web, WebNext string
	// Sidecar is a sidecar init container's image, SidecarNext its patch.
	Sidecar, SidecarNext string
	// Log is a second container's image, never patched.
	Log string
	// PortFlag, when set, is the argument that gives a container its port
	// (a fmt format, e.g. "-addr=:%d"): a pod's containers share one network,
	// so on a real node each must listen on a port of its own.
	PortFlag string
	// Node, when set, is the node every pod must land on.
	Node string
}

// args is the flow-style YAML field that gives a container its port, if any.
func (img Images) args(port int) string {
	if img.PortFlag == "" {
		return ""
	}
	return fmt.Sprintf(", args: [%q]", fmt.Sprintf(img.PortFlag, port))
}

// argsLine is args as a block-style YAML line of a container at four spaces.
func (img Images) argsLine(port int) string {
	if img.PortFlag == "" {
		return ""
	}
	return fmt.Sprintf("\n    args: [%q]", fmt.Sprintf(img.PortFlag, port))
}

// What the local cluster's kwok stages (hack/kwok/stages.yaml) show of a
// kubelet, on plain pods with no controller, driven with kubectl: the in-place
// update of MyDeployment (readiness gate, image patch, pods/resize) relies on
// exactly this. Each spec has a pod of its own: one failing says nothing about
// the next, so they all run.
// Claims declares the specs, in namespace ns (made and deleted by them).
func Claims(title, ns string, img Images) bool {
	const gate = "apps.mydeployment.io/InPlaceUpdateReady"
	return ginkgo.Describe(title, ginkgo.Ordered, ginkgo.ContinueOnFailure, func() {
		ginkgo.BeforeAll(func() {
			_, err := utils.Kubectl("create", "namespace", ns)
			Expect(err).NotTo(HaveOccurred())
		})
		ginkgo.AfterAll(func() {
			// Its pods have no controller: until they are gone, kubectl drain
			// refuses their node, and the drain specs (in any order) share the
			// nodes. Wait for them, then let the namespace go.
			out, err := utils.Kubectl("-n", ns, "delete", "pods", "--all", "--wait=true", "--timeout=60s")
			Expect(err).NotTo(HaveOccurred(), out)
			_, _ = utils.Kubectl("delete", "namespace", ns, "--wait=false")
		})

		kubectl := func(args ...string) string {
			ginkgo.GinkgoHelper()
			out, err := utils.Kubectl(append([]string{"-n", ns}, args...)...)
			Expect(err).NotTo(HaveOccurred(), out)
			return out
		}
		create := func(manifest string) {
			ginkgo.GinkgoHelper()
			out, err := utils.KubectlStdin(manifest, "-n", ns, "create", "-f", "-")
			Expect(err).NotTo(HaveOccurred(), out)
		}
		getPod := func(name string) *corev1.Pod {
			ginkgo.GinkgoHelper()
			var pod corev1.Pod
			Expect(json.Unmarshal([]byte(kubectl("get", "pod", name, "-o", "json")), &pod)).To(Succeed())
			return &pod
		}
		condition := func(pod *corev1.Pod, t corev1.PodConditionType) corev1.PodCondition {
			for _, c := range pod.Status.Conditions {
				if c.Type == t {
					return c
				}
			}
			return corev1.PodCondition{}
		}
		// conditionOf polls what `kubectl get pod -o yaml` would show of one condition.
		conditionOf := func(name string, t corev1.PodConditionType) func() corev1.PodCondition {
			return func() corev1.PodCondition { return condition(getPod(name), t) }
		}
		status := func(statuses []corev1.ContainerStatus, name string) corev1.ContainerStatus {
			for _, s := range statuses {
				if s.Name == name {
					return s
				}
			}
			return corev1.ContainerStatus{}
		}
		// setGate writes the gate's condition through pods/status, as the
		// MyDeployment controller does.
		setGate := func(name string, s corev1.ConditionStatus) {
			ginkgo.GinkgoHelper()
			kubectl("patch", "pod", name, "--subresource=status", "--type=strategic", "-p",
				fmt.Sprintf(`{"status":{"conditions":[{"type":%q,"status":%q,"lastTransitionTime":%q}]}}`,
					gate, s, time.Now().UTC().Format(time.RFC3339)))
		}
		// running waits for the pod to run with every container started.
		running := func(name string) *corev1.Pod {
			ginkgo.GinkgoHelper()
			Eventually(func(g Gomega) {
				pod := getPod(name)
				g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))
				g.Expect(condition(pod, corev1.ContainersReady).Status).To(Equal(corev1.ConditionTrue))
			}, time.Minute, 200*time.Millisecond).Should(Succeed())
			return getPod(name)
		}

		ginkgo.It("makes a pod without readiness gates Running and Ready, as before", func() {
			create(`apiVersion: v1
kind: Pod
metadata: {name: plain}
spec:
  containers: [{name: web, image: "` + img.Web + `"` + img.args(8080) + `}]
`)
			Eventually(conditionOf("plain", corev1.PodReady), time.Minute, 200*time.Millisecond).
				Should(HaveField("Status", corev1.ConditionTrue))
			pod := getPod("plain")
			Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))
			Expect(pod.Spec.NodeName).NotTo(BeEmpty())
			if img.Node != "" {
				Expect(pod.Spec.NodeName).To(Equal(img.Node))
			}
			Expect(pod.Status.PodIP).NotTo(BeEmpty())
			Expect(condition(pod, corev1.ContainersReady).Status).To(Equal(corev1.ConditionTrue))
			web := status(pod.Status.ContainerStatuses, "web")
			Expect(web.Image).To(Equal(img.Web))
			Expect(web.Ready).To(BeTrue())
			Expect(web.RestartCount).To(BeZero())
			Expect(web.State.Running).NotTo(BeNil())
			Expect(pod.Status.ObservedGeneration).To(Equal(pod.Generation))

			ginkgo.By("changing the spec where no container is touched: the change is observed, nothing restarts")
			kubectl("patch", "pod", "plain", "--type=json", "-p",
				`[{"op":"add","path":"/spec/tolerations/-","value":{"key":"example.com/maintenance","operator":"Exists"}}]`)
			Eventually(func(g Gomega) {
				after := getPod("plain")
				g.Expect(after.Generation).To(BeNumerically(">", pod.Generation))
				g.Expect(after.Status.ObservedGeneration).To(Equal(after.Generation))
				g.Expect(status(after.Status.ContainerStatuses, "web")).To(Equal(web))
				g.Expect(condition(after, corev1.PodReady).Status).To(Equal(corev1.ConditionTrue))
			}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
		})

		ginkgo.It("keeps Ready=False until the readiness gate's condition is True, then follows the gate", func() {
			create(`apiVersion: v1
kind: Pod
metadata: {name: gated}
spec:
  readinessGates: [{conditionType: "` + gate + `"}]
  containers: [{name: web, image: "` + img.Web + `"` + img.args(8080) + `}]
`)
			pod := running("gated")
			ready := condition(pod, corev1.PodReady)
			Expect(ready.Status).To(Equal(corev1.ConditionFalse), "no gate condition yet: missing counts as False")
			Expect(ready.Reason).To(Equal("ReadinessGatesNotReady"))
			Expect(ready.Message).To(ContainSubstring("does not exist"))
			// lastTransitionTime has whole seconds: stay a while, so that a
			// transition afterwards shows as a new time.
			Consistently(conditionOf("gated", corev1.PodReady), 2*time.Second, 250*time.Millisecond).
				Should(HaveField("Status", corev1.ConditionFalse))
			containersReady := condition(pod, corev1.ContainersReady)

			ginkgo.By("setting the gate's condition True through pods/status")
			setGate("gated", corev1.ConditionTrue)
			Eventually(conditionOf("gated", corev1.PodReady), 30*time.Second, 200*time.Millisecond).
				Should(HaveField("Status", corev1.ConditionTrue))
			pod = getPod("gated")
			becameReady := condition(pod, corev1.PodReady)
			Expect(becameReady.LastTransitionTime.After(ready.LastTransitionTime.Time)).To(BeTrue(),
				"Ready moved from %s to %s", ready.LastTransitionTime, becameReady.LastTransitionTime)
			Expect(becameReady.Reason).To(BeEmpty())
			Expect(condition(pod, corev1.ContainersReady)).To(Equal(containersReady), "ContainersReady did not change")
			Consistently(conditionOf("gated", corev1.PodReady), 2*time.Second, 250*time.Millisecond).
				Should(Equal(becameReady))

			ginkgo.By("flipping the gate's condition back to False")
			setGate("gated", corev1.ConditionFalse)
			Eventually(conditionOf("gated", corev1.PodReady), 30*time.Second, 200*time.Millisecond).
				Should(HaveField("Status", corev1.ConditionFalse))
			pod = getPod("gated")
			notReady := condition(pod, corev1.PodReady)
			Expect(notReady.Reason).To(Equal("ReadinessGatesNotReady"))
			Expect(notReady.Message).To(ContainSubstring(`is not "True", but False`))
			Expect(notReady.LastTransitionTime.After(becameReady.LastTransitionTime.Time)).To(BeTrue())
			Expect(condition(pod, corev1.ContainersReady)).To(Equal(containersReady), "ContainersReady did not change")
			Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))
		})

		ginkgo.It("restarts a container, and a sidecar, whose image was patched, in the same pod", func() {
			create(`apiVersion: v1
kind: Pod
metadata: {name: image}
spec:
  initContainers: [{name: proxy, image: "` + img.Sidecar + `", restartPolicy: Always` + img.args(8081) + `}]
  containers: [{name: web, image: "` + img.Web + `"` + img.args(8080) + `}, {name: log, image: "` + img.Log + `"` + img.args(8082) + `}]
`)
			before := running("image")
			Expect(condition(before, corev1.PodReady).Status).To(Equal(corev1.ConditionTrue))
			webBefore := status(before.Status.ContainerStatuses, "web")

			kubectl("patch", "pod", "image", "--type=json", "-p",
				`[{"op":"replace","path":"/spec/containers/0/image","value":"`+img.WebNext+`"},`+
					`{"op":"replace","path":"/spec/initContainers/0/image","value":"`+img.SidecarNext+`"}]`)
			Eventually(func(g Gomega) {
				pod := getPod("image")
				g.Expect(pod.Generation).To(BeNumerically(">", before.Generation))
				g.Expect(pod.Status.ObservedGeneration).To(Equal(pod.Generation))
				web := status(pod.Status.ContainerStatuses, "web")
				g.Expect(web.Image).To(Equal(img.WebNext))
				g.Expect(web.ImageID).NotTo(Equal(webBefore.ImageID))
				g.Expect(web.RestartCount).To(Equal(int32(1)))
				g.Expect(web.Ready).To(BeTrue())
				g.Expect(web.State.Running).NotTo(BeNil())
				g.Expect(web.State.Running.StartedAt.Time).NotTo(BeTemporally("<", webBefore.State.Running.StartedAt.Time))
				g.Expect(web.LastTerminationState.Terminated).NotTo(BeNil())
				proxy := status(pod.Status.InitContainerStatuses, "proxy")
				g.Expect(proxy.Image).To(Equal(img.SidecarNext))
				g.Expect(proxy.RestartCount).To(Equal(int32(1)))
				g.Expect(condition(pod, corev1.PodReady).Status).To(Equal(corev1.ConditionTrue))
			}, 30*time.Second, 200*time.Millisecond).Should(Succeed())

			after := getPod("image")
			Expect(after.UID).To(Equal(before.UID), "the same pod, not a new one")
			log := status(after.Status.ContainerStatuses, "log")
			Expect(log.Image).To(Equal(img.Log))
			Expect(log.RestartCount).To(BeZero(), "a container whose image did not change keeps running")
		})

		ginkgo.It("applies a pods/resize of cpu to the container's status, and restarts where the resize policy says so", func() {
			create(`apiVersion: v1
kind: Pod
metadata: {name: resize}
spec:
  containers:
  - name: web
    image: "` + img.Web + `"` + img.argsLine(8080) + `
    resources:
      requests: {cpu: 100m, memory: 64Mi}
      limits: {cpu: 200m, memory: 128Mi}
    resizePolicy: [{resourceName: memory, restartPolicy: RestartContainer}]
`)
			before := running("resize")
			web := status(before.Status.ContainerStatuses, "web")
			Expect(web.Resources).NotTo(BeNil(), "status reports resources, or kube-apiserver refuses a resize")
			Expect(web.Resources.Requests.Cpu().String()).To(Equal("100m"))

			kubectl("patch", "pod", "resize", "--subresource=resize", "--type=strategic", "-p",
				`{"spec":{"containers":[{"name":"web","resources":{"requests":{"cpu":"150m"},"limits":{"cpu":"300m"}}}]}}`)
			Eventually(func(g Gomega) {
				pod := getPod("resize")
				g.Expect(pod.Generation).To(BeNumerically(">", before.Generation))
				g.Expect(pod.Status.ObservedGeneration).To(Equal(pod.Generation))
				web := status(pod.Status.ContainerStatuses, "web")
				g.Expect(web.Resources).NotTo(BeNil())
				g.Expect(web.Resources.Requests.Cpu().String()).To(Equal("150m"))
				g.Expect(web.Resources.Limits.Cpu().String()).To(Equal("300m"))
				g.Expect(web.Resources.Requests.Memory().String()).To(Equal("64Mi"))
				g.Expect(web.AllocatedResources.Cpu().String()).To(Equal("150m"))
				g.Expect(web.RestartCount).To(BeZero(), "cpu resizes without a restart")
				g.Expect(condition(pod, corev1.PodResizePending).Type).To(BeEmpty())
				g.Expect(condition(pod, corev1.PodResizeInProgress).Type).To(BeEmpty())
				g.Expect(condition(pod, corev1.PodReady).Status).To(Equal(corev1.ConditionTrue))
			}, 30*time.Second, 200*time.Millisecond).Should(Succeed())

			ginkgo.By("resizing memory, whose resize policy is RestartContainer")
			kubectl("patch", "pod", "resize", "--subresource=resize", "--type=strategic", "-p",
				`{"spec":{"containers":[{"name":"web","resources":{"requests":{"memory":"96Mi"},"limits":{"memory":"256Mi"}}}]}}`)
			Eventually(func(g Gomega) {
				pod := getPod("resize")
				g.Expect(pod.Status.ObservedGeneration).To(Equal(pod.Generation))
				web := status(pod.Status.ContainerStatuses, "web")
				g.Expect(web.Resources.Limits.Memory().String()).To(Equal("256Mi"))
				g.Expect(web.AllocatedResources.Memory().String()).To(Equal("96Mi"))
				g.Expect(web.RestartCount).To(Equal(int32(1)))
			}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
			Expect(getPod("resize").UID).To(Equal(before.UID))
		})
	})
}
