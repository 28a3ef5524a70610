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

// Package install installs dist/install.yaml (what `make build-installer`
// writes and `make deploy` applies) on the local cluster `make test-install`
// starts, as a user would on a real cluster with no cert-manager, runs the
// manager as that Deployment's pod would run, checks that it makes and
// trusts its own webhook certificate and serves, that `make undeploy` keeps
// the CRDs, the MyDeployments and Applications and their pods, that the
// manager deployed again takes them back with no pod created or deleted,
// and that `make uninstall` refuses while they exist and, told FORCE=true,
// leaves nothing behind.
package install

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/mydeployment-io/mydeployment-operator/test/utils"
)

var (
	projectDir string
	workDir    string
	podRange   *net.IPNet // the cluster's nodes' pod CIDRs
	clientset  *kubernetes.Clientset
	dyn        dynamic.Interface // for MyDeployments, without a kubectl process in a timed write
)

func TestInstall(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "install suite (dist/install.yaml, self-managed webhook certificate)")
}

var _ = BeforeSuite(func() {
	var err error
	projectDir, err = utils.GetProjectDir()
	Expect(err).NotTo(HaveOccurred())
	kubeconfig := os.Getenv("KUBECONFIG")
	Expect(kubeconfig).NotTo(BeEmpty(), "KUBECONFIG must point at the local cluster (make test-install sets it)")
	// The first node's pod CIDR; the others follow it (10.213.1.0/24, ...).
	first, _, err := net.ParseCIDR(os.Getenv("INSTALL_POD_CIDR"))
	Expect(err).NotTo(HaveOccurred(), "INSTALL_POD_CIDR must be the pod CIDR of the cluster's first node (make test-install sets it)")
	_, podRange, err = net.ParseCIDR(first.String() + "/16")
	Expect(err).NotTo(HaveOccurred())
	Expect(filepath.Join(projectDir, "dist", "install.yaml")).To(BeARegularFile(), "make build-installer writes it")
	workDir = filepath.Join(projectDir, "bin", "install-e2e")
	Expect(os.RemoveAll(workDir)).To(Succeed())
	Expect(os.MkdirAll(workDir, 0o755)).To(Succeed())
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	clientset, err = kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	dyn, err = dynamic.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	stopPods()
})

// dumpOnFailure prints the manager's log and the cluster's objects, so a red run says why.
var _ = ReportAfterEach(func(report SpecReport) {
	if !report.Failed() {
		return
	}
	for _, p := range pods {
		if p.manager == nil {
			continue
		}
		out, _ := os.ReadFile(p.manager.Log)
		if len(out) > 20000 {
			out = out[len(out)-20000:]
		}
		_, _ = fmt.Fprintf(GinkgoWriter, "---- manager log of pod %s (tail):\n%s\n", p.name, out)
	}
	for _, args := range [][]string{
		{"get", "all,secrets,roles,rolebindings,leases,endpointslices,poddisruptionbudgets", "-n", operatorNamespace, "-o", "wide"},
		{"get", "validatingwebhookconfigurations", "-o", "yaml"},
		{"get", "mydeployments,applications,pods,endpointslices", "-A", "-o", "wide"},
		{"get", "events", "-A", "--sort-by=.lastTimestamp"},
	} {
		out, _ := utils.Kubectl(args...)
		_, _ = fmt.Fprintf(GinkgoWriter, "kubectl %v:\n%s\n", args, out)
	}
})
