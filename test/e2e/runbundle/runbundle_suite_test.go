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

// Package runbundle runs `operator-sdk run bundle` and `run bundle-upgrade`
// as README writes them, on real pods: `make test-runbundle` starts a local
// cluster with the real node real-0, OLM v0 as real pods on it (make
// olm-local) and every image in the local registry (make images), which
// serves them over HTTPS too under the names they carry (quay.io,
// mydeployment.io). operator-sdk runs on the host through
// hack/registry-host.sh, which gives it those names and the registry's CA,
// as a user's host has their registry's; real-0's containerd pulls the same
// images through its mirrors. Then docs/install.md's OperatorHub-style
// install (a CatalogSource of the serving catalog image, an OperatorGroup,
// a Subscription) in every install mode, upgraded by publishing the
// catalog image again (operatorhub_test.go).
package runbundle

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mydeployment-io/mydeployment-operator/test/utils"
)

const node = "real-0"

var (
	projectDir string
	// version is bundle/'s; previous the release it upgrades from.
	version, previous string
	// imageTagBase names the images (IMAGE_TAG_BASE); testwebBase the
	// workloads' web app.
	imageTagBase, testwebBase string
	// namespace is where README's run bundle installs the operator.
	namespace string
	// digests are the images make images pushed (bin/local/images.txt).
	digests map[string]string
)

func TestRunBundle(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "operator-sdk run bundle and run bundle-upgrade on real pods")
}

var _ = BeforeSuite(func() {
	projectDir, version, _ = utils.OLMSuiteSetup("test-runbundle", "runbundle-e2e")
	previous = utils.PreviousRelease(projectDir, version)
	for _, v := range []struct {
		to   *string
		name string
	}{{&imageTagBase, "IMAGE_TAG_BASE"}, {&testwebBase, "TESTWEB_IMG_BASE"}} {
		*v.to = os.Getenv(v.name)
		Expect(*v.to).NotTo(BeEmpty(), "%s must be set (make test-runbundle sets it)", v.name)
	}
	digests = utils.LocalImageDigests(projectDir)
})

var _ = ReportAfterEach(func(report SpecReport) {
	if !report.Failed() {
		return
	}
	for _, args := range [][]string{
		{"get", "pods", "-A", "-o", "wide"},
		{"get", "csv,subscription,installplan,catalogsource,operatorgroup", "-A", "-o", "wide"},
		{"get", "events", "-A", "--sort-by=.lastTimestamp"},
		{"-n", namespace, "logs", "-l", "control-plane=controller-manager", "--tail=50", "--prefix"},
		{"-n", "olm", "logs", "deployment/catalog-operator", "--tail=50"},
	} {
		out, _ := utils.Kubectl(args...)
		AddReportEntry("kubectl "+strings.Join(args, " "), out)
	}
})

// readme is what README's run bundle steps say: the namespace it creates
// and the arguments of its `operator-sdk run bundle` and `run bundle-upgrade`
// lines, `<registry>/mydeployment-operator` made IMAGE_TAG_BASE. The suite
// runs these, so README shows what is tested.
type readme struct {
	namespace        string
	install, upgrade []string
}

func readReadme() readme {
	GinkgoHelper()
	data, err := os.ReadFile(filepath.Join(projectDir, "README.md"))
	Expect(err).NotTo(HaveOccurred())
	var r readme
	for _, line := range strings.Split(string(data), "\n") {
		line, _, _ = strings.Cut(strings.TrimSpace(line), "#")
		f := strings.Fields(strings.ReplaceAll(line, "<registry>/mydeployment-operator", imageTagBase))
		switch {
		case len(f) == 4 && f[0] == "kubectl" && f[1] == "create" && f[2] == "namespace":
			r.namespace = f[3]
		case len(f) > 3 && f[0] == "operator-sdk" && f[1] == "run" && f[2] == "bundle":
			r.install = f[1:]
		case len(f) > 3 && f[0] == "operator-sdk" && f[1] == "run" && f[2] == "bundle-upgrade":
			r.upgrade = f[1:]
		}
	}
	Expect(r.namespace).NotTo(BeEmpty(), "README creates a namespace for run bundle")
	want := fmt.Sprintf("%s-bundle:v%s", imageTagBase, version)
	for _, args := range [][]string{r.install, r.upgrade} {
		Expect(args).To(ContainElement(want), "README's run bundle lines name this version's bundle (VERSION %s)", version)
		Expect(strings.Join(args, " ")).To(HaveSuffix("-n "+r.namespace), "README's run bundle lines install into the namespace it creates")
	}
	return r
}
