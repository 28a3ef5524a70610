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
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mydeployment-io/mydeployment-operator/test/utils"
)

// The manager's leader election Lease (cmd/main.go's LeaderElectionID).
const leaseName = "d2cb53c1.mydeployment.io"

const managerSelector = "control-plane=controller-manager"

// A MyDeployment of the test web app, for dry-run writes through the webhook.
const probeWrite = `apiVersion: apps.mydeployment.io/v1beta1
kind: MyDeployment
metadata: {name: probe-write, namespace: default}
spec:
  selector: {matchLabels: {app: probe-write}}
  template:
    metadata: {labels: {app: probe-write}}
    spec: {containers: [{name: web, image: %q}]}
`

var _ = Describe("the operator on real pods", Ordered, func() {
	// leader is the pod that holds the manager's Lease.
	leader := func() string {
		GinkgoHelper()
		lease, err := clientset.CoordinationV1().Leases(operatorNamespace).Get(context.Background(), leaseName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(lease.Spec.HolderIdentity).NotTo(BeNil())
		// controller-runtime's identity: the pod's hostname (its name), "_", a UUID.
		name, _, _ := strings.Cut(*lease.Spec.HolderIdentity, "_")
		return name
	}
	// write is a server-side dry-run create: the webhook must admit it.
	write := func() error {
		out, err := utils.KubectlStdin(fmt.Sprintf(probeWrite, testweb("v1")), "create", "--dry-run=server", "--request-timeout=4s", "-f", "-")
		if err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		return nil
	}

	It("runs on a real kubelet: real-0 Ready, the fake nodes tainted away", func() {
		n, err := clientset.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(n.Status.NodeInfo.KubeletVersion).To(HavePrefix("v1.37."))
		Expect(n.Status.NodeInfo.ContainerRuntimeVersion).To(HavePrefix("containerd://"))
		Expect(n.Annotations).NotTo(HaveKey("kwok.x-k8s.io/node"), "kwok does not play this node")
		var readyNode bool
		for _, c := range n.Status.Conditions {
			readyNode = readyNode || (c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue)
		}
		Expect(readyNode).To(BeTrue())
		all, err := clientset.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		for _, other := range all.Items {
			if other.Name != node {
				Expect(other.Spec.Taints).To(ContainElement(HaveField("Key", "kwok.x-k8s.io/node")), other.Name)
			}
		}
	})

	It("runs its two manager pods on real-0 from the registry's image, under restricted Pod Security", func() {
		ns, err := clientset.CoreV1().Namespaces().Get(context.Background(), operatorNamespace, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(ns.Labels).To(HaveKeyWithValue("pod-security.kubernetes.io/enforce", "restricted"))
		managers := pods(operatorNamespace, managerSelector)
		Expect(managers).To(HaveLen(2))
		for _, p := range managers {
			Expect(p.Spec.NodeName).To(Equal(node), p.Name)
			Expect(ready(&p)).To(BeTrue(), "%s Ready: its readiness probe answered", p.Name)
			Expect(p.Status.ContainerStatuses).To(HaveLen(1))
			Expect(p.Status.ContainerStatuses[0].ImageID).To(HaveSuffix("@"+digests[img]),
				"%s runs the image make images pushed", p.Name)
			Expect(p.Status.ContainerStatuses[0].RestartCount).To(BeZero(), p.Name)
		}
	})

	// Only the webhook reads annotations (a CRD's schema cannot), so a refusal
	// naming one is the webhook's, served from the pods behind its Service.
	It("serves the webhook from its pods: a bad opt-in value is refused, naming the annotation", func() {
		slices, err := clientset.DiscoveryV1().EndpointSlices(operatorNamespace).List(context.Background(),
			metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=mydeployment-operator-webhook-service"})
		Expect(err).NotTo(HaveOccurred())
		var addresses []string
		for _, s := range slices.Items {
			for _, e := range s.Endpoints {
				addresses = append(addresses, e.Addresses...)
			}
		}
		var podIPs []string
		for _, p := range pods(operatorNamespace, managerSelector) {
			podIPs = append(podIPs, p.Status.PodIP)
		}
		Expect(addresses).To(ConsistOf(podIPs))

		bad := strings.Replace(fmt.Sprintf(probeWrite, testweb("v1")), "namespace: default}",
			"namespace: default, annotations: {apps.mydeployment.io/update-mode: Sometimes}}", 1)
		out, err := utils.KubectlStdin(bad, "create", "--dry-run=server", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring(`metadata.annotations[apps.mydeployment.io/update-mode]: Unsupported value: "Sometimes"`))
		Expect(write()).To(Succeed())
	})

	It("hands over when the leader pod is killed: writes admitted within 5 s, another live pod leads", func() {
		was := leader()
		var other string
		for _, p := range pods(operatorNamespace, managerSelector) {
			if p.Name != was {
				other = p.Name
			}
		}
		Expect(other).NotTo(BeEmpty())

		killed := time.Now()
		kubectl("-n", operatorNamespace, "delete", "pod", was, "--grace-period=0", "--force", "--wait=false")
		var admitted time.Duration
		Eventually(func() error {
			err := write()
			admitted = time.Since(killed)
			return err
		}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
		GinkgoWriter.Printf("a write was admitted %s after the leader pod was killed\n", admitted.Round(10*time.Millisecond))
		Expect(admitted).To(BeNumerically("<=", 5*time.Second))
		for range 5 {
			Expect(write()).To(Succeed(), "every write after the first is admitted too")
		}

		// Once the killed pod's lease expires, the pod that survived and the
		// one the Deployment made in its place both try to take it: either
		// may win (the survivor did in earlier runs; the replacement won one
		// under load). What must hold is that a live pod other than the killed
		// one leads.
		var now string
		Eventually(func() string { now = leader(); return now }, 60*time.Second, 500*time.Millisecond).
			ShouldNot(Or(BeEmpty(), Equal(was)))
		var live []string
		for _, p := range pods(operatorNamespace, managerSelector) {
			live = append(live, p.Name)
		}
		Expect(live).To(ContainElement(now), "the leader is a running manager pod")
		which := "the pod that survived"
		if now != other {
			which = "the Deployment's replacement pod"
		}
		GinkgoWriter.Printf("%s (%s) leads %s after the kill\n", now, which, time.Since(killed).Round(100*time.Millisecond))

		By("the new leader acting: a MyDeployment gets a Ready pod on real-0")
		apply(strings.Replace(fmt.Sprintf(probeWrite, testweb("v1")), "name: probe-write,", "name: after-kill,", 1))
		DeferCleanup(func() { _, _ = utils.Kubectl("-n", "default", "delete", "mydeployment", "after-kill") })
		Eventually(func(g Gomega) {
			ps := pods("default", "app=probe-write")
			g.Expect(ps).To(HaveLen(1))
			g.Expect(ps[0].Spec.NodeName).To(Equal(node))
			g.Expect(ready(&ps[0])).To(BeTrue())
		}, 60*time.Second, 250*time.Millisecond).Should(Succeed())

		By("the Deployment making its second manager pod again")
		Eventually(func(g Gomega) {
			ps := pods(operatorNamespace, managerSelector)
			g.Expect(ps).To(HaveLen(2))
			for _, p := range ps {
				g.Expect(ready(&p)).To(BeTrue())
			}
		}, 60*time.Second, 250*time.Millisecond).Should(Succeed())
	})
})
