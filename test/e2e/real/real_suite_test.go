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

// Package real checks the operator on real pods: `make test-real` starts a
// local cluster with the real node real-0 (a real kubelet, containerd and
// runc, kube-proxy; hack/real-node.sh), builds the images without Docker and
// deploys dist/install.yaml with them (`make deploy-local`), then these
// specs check what a user would check on a cluster: the manager's pods and
// their webhook, a leader killed, rollouts and in-place updates of a real web
// app read from its containers, their cgroups and their logs, migrate and
// eject with real pods behind a Service, an Application reached through its
// ClusterIP, and the kubelet behaviour kwok's stages claim.
package real

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/mydeployment-io/mydeployment-operator/test/utils"
)

const node = "real-0"

var (
	projectDir string
	clientset  *kubernetes.Clientset
	// operatorNamespace and img are what make test-real deployed: the
	// operator's namespace and the manager image.
	operatorNamespace, img string
	// testwebBase is the test web app's image name without its tag (read
	// here, not in BeforeSuite: the kubelet specs name it as they are declared).
	testwebBase = os.Getenv("TESTWEB_IMG_BASE")
	// testsh is the shell image the hooks' Jobs run (TESTSH_IMG).
	testsh string
	// digests are the images make images pushed (bin/local/images.txt).
	digests map[string]string
)

func TestReal(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "real node suite (the operator and its workloads on real-0's kubelet)")
}

var _ = BeforeSuite(func() {
	var err error
	projectDir, err = utils.GetProjectDir()
	Expect(err).NotTo(HaveOccurred())
	kubeconfig := os.Getenv("KUBECONFIG")
	Expect(kubeconfig).NotTo(BeEmpty(), "KUBECONFIG must point at a cluster with a real node (make test-real sets it)")
	for _, v := range []struct {
		to   *string
		name string
	}{{&operatorNamespace, "OPERATOR_NAMESPACE"}, {&img, "IMG"}, {&testwebBase, "TESTWEB_IMG_BASE"}, {&testsh, "TESTSH_IMG"}} {
		*v.to = os.Getenv(v.name)
		Expect(*v.to).NotTo(BeEmpty(), "%s must be set (make test-real sets it)", v.name)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	clientset, err = kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	digests = utils.LocalImageDigests(projectDir)
	Expect(digests).To(HaveKey(img))
	Expect(digests).To(HaveKey(testweb("v1")))
	Expect(digests).To(HaveKey(testweb("v2")))
	Expect(digests).To(HaveKey(testsh))
})

// testweb is the test web app's image at a version (v1 or v2).
func testweb(version string) string { return testwebBase + ":" + version }

// kubectl runs the project's kubectl and fails the spec (at the caller) if it fails.
func kubectl(args ...string) string {
	GinkgoHelper()
	out, err := utils.Kubectl(args...)
	Expect(err).NotTo(HaveOccurred(), out)
	return out
}

// apply applies a manifest and fails the spec if it fails.
func apply(manifest string, args ...string) {
	GinkgoHelper()
	out, err := utils.KubectlStdin(manifest, append([]string{"apply", "-f", "-"}, args...)...)
	Expect(err).NotTo(HaveOccurred(), out)
}

// namespace makes a namespace for one container of specs and deletes it after them.
func namespace(ns string) {
	BeforeAll(func() { kubectl("create", "namespace", ns) })
	AfterAll(func() { _, _ = utils.Kubectl("delete", "namespace", ns, "--wait=false") })
}

// pods lists the pods of a namespace that match a selector, those being
// deleted left out.
func pods(ns, selector string) []corev1.Pod {
	GinkgoHelper()
	list, err := clientset.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	Expect(err).NotTo(HaveOccurred())
	var live []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			live = append(live, p)
		}
	}
	return live
}

// condition is a pod's condition of a type (zero if it has none).
func condition(pod *corev1.Pod, t corev1.PodConditionType) corev1.PodCondition {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return corev1.PodCondition{}
}

func ready(pod *corev1.Pod) bool {
	return condition(pod, corev1.PodReady).Status == corev1.ConditionTrue
}

var web = &http.Client{Timeout: 2 * time.Second}

// answer is what GET http://ADDR/ answers (the test web app: its version).
func answer(addr string) (string, error) {
	resp, err := web.Get("http://" + addr + "/")
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET http://%s/: %s", addr, resp.Status)
	}
	return strings.TrimSpace(string(b)), nil
}

// follow streams a container's log into lines until the container stops;
// the returned function gives what was read so far.
func follow(ns, pod string) func() []string {
	GinkgoHelper()
	stream, err := clientset.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Follow: true}).Stream(context.Background())
	Expect(err).NotTo(HaveOccurred())
	lines := make(chan string, 100)
	go func() {
		defer GinkgoRecover()
		defer func() { _ = stream.Close() }()
		s := bufio.NewScanner(stream)
		for s.Scan() {
			lines <- s.Text()
		}
		close(lines)
	}()
	var got []string
	return func() []string {
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					return got
				}
				got = append(got, l)
			default:
				return got
			}
		}
	}
}

// sampled runs fn while probe runs every 50 ms beside it, and returns how
// many times probe ran. Once it returns probe has stopped, so what probe
// recorded can be read without a lock.
func sampled(fn, probe func()) int {
	stop, done := make(chan struct{}), make(chan struct{})
	n := 0
	go func() {
		defer GinkgoRecover()
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			probe()
			n++
		}
	}()
	fn()
	close(stop)
	<-done
	return n
}
