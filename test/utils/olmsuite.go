package utils

import (
	"os"
	"path/filepath"

	"github.com/blang/semver/v4"
	. "github.com/onsi/gomega" //nolint:revive,staticcheck

	"github.com/mydeployment-io/mydeployment-operator/test/olm/releases"
)

// OLMSuiteSetup is the start of an OLM e2e suite's BeforeSuite (make
// target names the Make target that sets the environment): the project
// directory, the bundle's VERSION, and an emptied bin/dir for the suite's
// logs and files.
func OLMSuiteSetup(target, dir string) (projectDir, version, workDir string) {
	projectDir, err := GetProjectDir()
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	ExpectWithOffset(1, os.Getenv("KUBECONFIG")).NotTo(BeEmpty(), "KUBECONFIG must point at the local cluster (make %s sets it)", target)
	version = os.Getenv("VERSION")
	ExpectWithOffset(1, version).NotTo(BeEmpty(), "VERSION must name the bundle's version (make %s sets it)", target)
	workDir = filepath.Join(projectDir, "bin", dir)
	ExpectWithOffset(1, os.RemoveAll(workDir)).To(Succeed())
	ExpectWithOffset(1, os.MkdirAll(workDir, 0o755)).To(Succeed())
	return projectDir, version, workDir
}

// PreviousRelease is the newest release recorded in catalog/releases
// older than version: the one an upgrade test starts from.
func PreviousRelease(projectDir, version string) string {
	all, err := releases.Load(filepath.Join(projectDir, "catalog", "releases"))
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	cur, err := semver.Parse(version)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	b, ok := releases.Latest(all, cur)
	ExpectWithOffset(1, ok).To(BeTrue(), "catalog/releases must hold a release older than %s to upgrade from", version)
	return b.Version.String()
}
