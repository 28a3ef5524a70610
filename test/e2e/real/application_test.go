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
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var _ = Describe("the Application sample on real pods", Ordered, func() {
	const ns = "real-app"
	namespace(ns)

	It("routes its Service to its pods: a request to the ClusterIP from this host answers", func() {
		// The sample as shipped, but for its image (nginx: nothing here
		// serves it) and that image's port.
		sample, err := os.ReadFile(filepath.Join(projectDir, "config", "samples", "apps_v1beta1_application.yaml"))
		Expect(err).NotTo(HaveOccurred())
		manifest := string(sample)
		for old, new := range map[string]string{"image: nginx:1.27": "image: " + testweb("v1"), "port: 80\n": "port: 8080\n"} {
			Expect(manifest).To(ContainSubstring(old), "the sample changed: change this spec with it")
			manifest = strings.Replace(manifest, old, new, 1)
		}
		apply(manifest, "-n", ns)
		Eventually(func(g Gomega) {
			ps := pods(ns, "")
			g.Expect(ps).To(HaveLen(1))
			g.Expect(ps[0].Spec.NodeName).To(Equal(node))
			g.Expect(ready(&ps[0])).To(BeTrue())
		}, 2*time.Minute, 250*time.Millisecond).Should(Succeed())
		svc, err := clientset.CoreV1().Services(ns).Get(context.Background(), "application-sample", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(svc.Spec.ClusterIP).NotTo(BeEmpty())
		Expect(svc.Spec.Ports).NotTo(BeEmpty())
		addr := net.JoinHostPort(svc.Spec.ClusterIP, fmt.Sprint(svc.Spec.Ports[0].Port))
		Eventually(func() (string, error) { return answer(addr) }, 30*time.Second, 250*time.Millisecond).Should(Equal("v1"))
		_, err = clientset.NetworkingV1().Ingresses(ns).Get(context.Background(), "application-sample", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred(), "its Ingress (no ingress controller here: nothing serves it)")
	})
})
