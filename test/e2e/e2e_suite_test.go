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

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mydeployment-io/mydeployment-operator/test/utils"
)

// The e2e suite runs against the local cluster `make test-e2e` starts
// (kube-apiserver, etcd, kube-controller-manager, kube-scheduler, kwok: pods
// are scheduled and become Ready on fake nodes). It installs the CRDs with
// kubectl and runs the built manager binary on the host, as `make run` does.

var (
	projectDir string
	manager    *exec.Cmd
	managerLog string
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	_, _ = fmt.Fprintf(GinkgoWriter, "Starting mydeployment-operator e2e suite\n")
	RunSpecs(t, "e2e suite")
}

// crdsEstablished is when BeforeSuite saw the CRDs Established.
var crdsEstablished time.Time

// kcmMapperRefresh is how often kube-controller-manager rebuilds its
// RESTMapper (controllermanager.go resets it every 30 s). Until it has, its
// disruption and HPA controllers answer "no matches for kind MyDeployment",
// and the disruption controller then retries a PDB with backoff.
const kcmMapperRefresh = 30 * time.Second

// waitForKCMToKnowTheCRDs waits until kube-controller-manager has rebuilt
// its RESTMapper since the CRDs were established (a cluster's CRDs are
// usually older than that; this suite's are seconds old).
func waitForKCMToKnowTheCRDs() {
	if wait := time.Until(crdsEstablished.Add(kcmMapperRefresh + 5*time.Second)); wait > 0 {
		By(fmt.Sprintf("waiting %s: kube-controller-manager's RESTMapper learns the CRDs every %s", wait.Round(time.Second), kcmMapperRefresh))
		time.Sleep(wait)
	}
}

var _ = BeforeSuite(func() {
	var err error
	projectDir, err = utils.GetProjectDir()
	Expect(err).NotTo(HaveOccurred())
	Expect(os.Getenv("KUBECONFIG")).NotTo(BeEmpty(), "KUBECONFIG must point at the local cluster (make test-e2e sets it)")

	By("installing the CRDs")
	utils.MustInstallCRDs(projectDir)
	crdsEstablished = time.Now()

	By("starting the manager binary")
	managerLog = filepath.Join(projectDir, "bin", "e2e-manager.log")
	logFile, err := os.Create(managerLog)
	Expect(err).NotTo(HaveOccurred())
	manager = exec.Command(filepath.Join(projectDir, "bin", "manager"),
		"--metrics-bind-address=0", "--health-probe-bind-address=127.0.0.1:0")
	manager.Stdout, manager.Stderr = logFile, logFile
	// The webhook is proven by its envtest suite; here nothing would call it.
	manager.Env = append(os.Environ(), "ENABLE_WEBHOOKS=false")
	Expect(manager.Start()).To(Succeed())
})

var _ = AfterSuite(func() {
	if manager != nil && manager.Process != nil {
		_ = manager.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- manager.Wait() }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = manager.Process.Kill()
		}
	}
})

// dumpOnFailure prints the manager's log and the namespace's events and
// objects, so a red run says why.
var _ = ReportAfterEach(func(report SpecReport) {
	if !report.Failed() {
		return
	}
	if out, err := os.ReadFile(managerLog); err == nil {
		_, _ = fmt.Fprintf(GinkgoWriter, "manager log:\n%s\n", out)
	}
	for _, args := range [][]string{
		{"get", "applications,mydeployments,pods,controllerrevisions", "-A", "-o", "wide"},
		{"get", "services,ingresses,endpointslices", "-A", "-l", "apps.mydeployment.io/application", "-o", "wide"},
		{"get", "events", "-A", "--sort-by=.lastTimestamp"},
	} {
		out, _ := utils.Kubectl(args...)
		_, _ = fmt.Fprintf(GinkgoWriter, "kubectl %v:\n%s\n", args, out)
	}
})
