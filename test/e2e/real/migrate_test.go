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
	"net"
	"os/exec"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mydeployment-io/mydeployment-operator/test/utils"
)

// A Deployment of the test web app behind a Service, as a user has it
// before migrating.
const webDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: %q
        ports: [{name: http, containerPort: 8080}]
        readinessProbe:
          httpGet: {path: /healthz, port: 8080}
          periodSeconds: 1
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http}]
`

var _ = Describe("migrate and eject with real pods behind a Service", Ordered, func() {
	const ns = "real-migrate"
	namespace(ns)

	plugin := func(args ...string) {
		GinkgoHelper()
		out, err := utils.Run(exec.Command(filepath.Join(projectDir, "bin", "kubectl-mydeployment"), append([]string{"-n", ns}, args...)...))
		Expect(err).NotTo(HaveOccurred(), out)
		GinkgoWriter.Print(out)
	}
	// containers is each pod's container as the kubelet reports it: a
	// restarted or recreated one shows another start time, restart count
	// or container ID.
	containers := func() map[string]string {
		GinkgoHelper()
		m := map[string]string{}
		for _, p := range pods(ns, "app=web") {
			Expect(p.Status.ContainerStatuses).To(HaveLen(1))
			s := p.Status.ContainerStatuses[0]
			Expect(s.State.Running).NotTo(BeNil(), p.Name)
			m[string(p.UID)] = fmt.Sprintf("%s started %s restarts %d %s", p.Name,
				s.State.Running.StartedAt.UTC().Format(time.RFC3339), s.RestartCount, s.ContainerID)
		}
		return m
	}
	// whileWatchingEndpoints runs fn and returns the fewest ready endpoints
	// the Service's EndpointSlices had meanwhile (sampled every 50 ms).
	whileWatchingEndpoints := func(fn func()) (fewest, samples int) {
		fewest = 1 << 30
		samples = sampled(fn, func() {
			slices, err := clientset.DiscoveryV1().EndpointSlices(ns).List(context.Background(),
				metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=web"})
			if err != nil {
				return
			}
			n := 0
			for _, s := range slices.Items {
				for _, e := range s.Endpoints {
					if e.Conditions.Ready != nil && *e.Conditions.Ready {
						n++
					}
				}
			}
			fewest = min(fewest, n)
		})
		return fewest, samples
	}
	// throughService is what the Service answers at its ClusterIP, from this host.
	throughService := func() (string, error) {
		svc, err := clientset.CoreV1().Services(ns).Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		return answer(net.JoinHostPort(svc.Spec.ClusterIP, "80"))
	}
	var before map[string]string

	It("runs a Deployment of three real pods behind a Service", func() {
		apply(fmt.Sprintf(webDeployment, testweb("v1")), "-n", ns)
		kubectl("-n", ns, "rollout", "status", "deployment/web", "--timeout=3m")
		Eventually(func(g Gomega) {
			ps := pods(ns, "app=web")
			g.Expect(ps).To(HaveLen(3))
			for i := range ps {
				g.Expect(ready(&ps[i])).To(BeTrue())
				g.Expect(ps[i].Spec.NodeName).To(Equal(node))
			}
		}, time.Minute, 250*time.Millisecond).Should(Succeed())
		before = containers()
		Eventually(throughService, 30*time.Second, 250*time.Millisecond).Should(Equal("v1"))
	})

	It("migrates it to a MyDeployment: every container kept, never fewer than 3 ready endpoints", func() {
		fewest, samples := whileWatchingEndpoints(func() { plugin("migrate", "deployment/web", "--timeout", "3m") })
		GinkgoWriter.Printf("migrate: fewest ready endpoints %d over %d samples\n", fewest, samples)
		Expect(samples).To(BeNumerically(">", 0))
		Expect(fewest).To(BeNumerically(">=", 3))
		_, err := clientset.AppsV1().Deployments(ns).Get(context.Background(), "web", metav1.GetOptions{})
		Expect(err).To(HaveOccurred(), "the Deployment is gone")
		rolledOut(ns, "web", 3)
		Expect(containers()).To(Equal(before), "the same pods, containers not restarted")
		for _, p := range pods(ns, "app=web") {
			Expect(metav1.GetControllerOf(&p)).To(HaveField("Kind", "MyDeployment"), p.Name)
		}
		Expect(throughService()).To(Equal("v1"))
	})

	It("ejects it back to a Deployment: every container kept, never fewer than 3 ready endpoints", func() {
		fewest, samples := whileWatchingEndpoints(func() { plugin("eject", "md/web", "--timeout", "3m") })
		GinkgoWriter.Printf("eject: fewest ready endpoints %d over %d samples\n", fewest, samples)
		Expect(samples).To(BeNumerically(">", 0))
		Expect(fewest).To(BeNumerically(">=", 3))
		kubectl("-n", ns, "rollout", "status", "deployment/web", "--timeout=3m")
		Expect(containers()).To(Equal(before), "the same pods, containers not restarted")
		for _, p := range pods(ns, "app=web") {
			Expect(metav1.GetControllerOf(&p)).To(HaveField("Kind", "ReplicaSet"), p.Name)
		}
		Expect(throughService()).To(Equal("v1"))
	})
})
