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

// Package olm installs and upgrades the operator through a real Operator
// Lifecycle Manager (v0.46.0's olm and catalog operators, run as host
// processes) on the local cluster `make test-olm` starts, from the
// file-based catalog `hack/catalog.sh` renders, served by `opm serve`.
package olm

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mydeployment-io/mydeployment-operator/test/utils"
)

var (
	projectDir string
	workDir    string
	version    string // the version bundle/ holds; the catalog's first is the one it replaces
	olmProc    *utils.Process
	catProc    *utils.Process
	registry   *registryServer
)

func TestOLM(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "OLM install and upgrade suite")
}

var _ = BeforeSuite(func() {
	projectDir, version, workDir = utils.OLMSuiteSetup("test-olm", "olm-e2e")

	By("installing OLM's CRDs from the operator-lifecycle-manager module")
	_, err := utils.Kubectl("create", "-f", filepath.Join(projectDir, "bin", "olm-crds")+"/")
	Expect(err).NotTo(HaveOccurred())
	for _, crd := range []string{"catalogsources", "clusterserviceversions", "installplans", "olmconfigs",
		"operatorconditions", "operatorgroups", "operators", "subscriptions"} {
		Eventually(func() string {
			out, _ := utils.Kubectl("get", "crd", crd+".operators.coreos.com",
				"-o", `jsonpath={.status.conditions[?(@.type=="Established")].status}`)
			return out
		}, time.Minute, 200*time.Millisecond).Should(Equal("True"), crd)
	}
	_, err = utils.Kubectl("create", "namespace", "olm")
	Expect(err).NotTo(HaveOccurred())

	By("starting OLM's olm and catalog operators as host processes")
	kubeconfig := os.Getenv("KUBECONFIG")
	olmProc, err = utils.Start("olm", filepath.Join(workDir, "olm.log"), nil,
		filepath.Join(projectDir, "bin", "olm"), "--namespace", "olm")
	Expect(err).NotTo(HaveOccurred())
	// The image flags only matter for image-based catalog sources and bundle
	// unpacking, neither of which this catalog uses.
	catProc, err = utils.Start("catalog-operator", filepath.Join(workDir, "catalog-operator.log"), nil,
		filepath.Join(projectDir, "bin", "catalog-operator"), "--kubeconfig", kubeconfig, "--namespace", "olm",
		"--configmapServerImage=unused", "--opmImage=unused", "--util-image=unused")
	Expect(err).NotTo(HaveOccurred())

	By("rendering two catalogs: the previous release alone, then with this version replacing it")
	renderCatalog("catalog-old", utils.PreviousRelease(projectDir, version))
	renderCatalog("catalog-new", version)
	registry = startRegistry(filepath.Join(workDir, "catalog-old"))
})

var _ = AfterSuite(func() {
	stopManager()
	registry.stop()
	catProc.Stop()
	olmProc.Stop()
	removeAddresses()
})

// renderCatalog writes an inline (image-less) catalog of every version up to until.
func renderCatalog(name, until string) {
	cmd := exec.Command(filepath.Join(projectDir, "hack", "catalog.sh"))
	cmd.Env = append(os.Environ(), "VERSION="+version, "CATALOG_DIR="+filepath.Join(workDir, name),
		"CATALOG_INLINE=1", "CATALOG_UNTIL="+until)
	out, err := utils.Run(cmd)
	Expect(err).NotTo(HaveOccurred(), out)
}

// registryServer is `opm serve` on a fixed port: OLM dials the CatalogSource's
// address directly and does not poll it, so publishing a new catalog means
// serving it on the same address.
type registryServer struct {
	port int
	proc *utils.Process
	n    int
}

func startRegistry(dir string) *registryServer {
	port, err := utils.FreePort()
	Expect(err).NotTo(HaveOccurred())
	r := &registryServer{port: port}
	r.serve(dir)
	return r
}

func (r *registryServer) address() string { return fmt.Sprintf("127.0.0.1:%d", r.port) }

func (r *registryServer) serve(dir string) {
	r.n++
	var err error
	r.proc, err = utils.Start("opm", filepath.Join(workDir, fmt.Sprintf("opm-%d.log", r.n)), nil,
		filepath.Join(projectDir, "bin", "opm"), "serve", dir, "-p", fmt.Sprint(r.port), "--pprof-addr", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	Eventually(func() error {
		out, err := os.ReadFile(r.proc.Log)
		if err != nil || !strings.Contains(string(out), "serving registry") {
			return fmt.Errorf("opm serve not ready: %s", out)
		}
		return nil
	}, time.Minute, 200*time.Millisecond).Should(Succeed())
}

func (r *registryServer) publish(dir string) {
	r.proc.Stop()
	r.serve(dir)
}

func (r *registryServer) stop() {
	if r != nil {
		r.proc.Stop()
	}
}

// dumpOnFailure prints the processes' logs and OLM's objects, so a red run says why.
var _ = ReportAfterEach(func(report SpecReport) {
	if !report.Failed() {
		return
	}
	logs, _ := filepath.Glob(filepath.Join(workDir, "*.log"))
	for _, l := range logs {
		out, _ := os.ReadFile(l)
		if len(out) > 20000 {
			out = out[len(out)-20000:]
		}
		_, _ = fmt.Fprintf(GinkgoWriter, "---- %s (tail):\n%s\n", filepath.Base(l), out)
	}
	for _, args := range [][]string{
		{"get", "catalogsources,subscriptions,installplans,csv,operatorgroups", "-A", "-o", "wide"},
		{"get", "csv", "-A", "-o", "yaml"},
		{"get", "deployments,pods,mydeployments,applications", "-A", "-o", "wide"},
		{"get", "services,ingresses,endpointslices", "-A", "-l", "apps.mydeployment.io/application", "-o", "wide"},
		{"get", "events", "-A", "--sort-by=.lastTimestamp"},
	} {
		out, _ := utils.Kubectl(args...)
		_, _ = fmt.Fprintf(GinkgoWriter, "kubectl %v:\n%s\n", args, out)
	}
})
