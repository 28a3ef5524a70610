package utils

import (
	"os"
	"path/filepath"

	"github.com/blang/semver/v4"
	. "github.com/onsi/gomega" //nolint:revive,staticcheck
	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"

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

// BundleManagerImage is the image bundle/'s CSV runs the manager as: by
// digest (make bundle), so it has no version to look for.
func BundleManagerImage(projectDir string) string {
	b, err := manifests.GetBundleFromDir(filepath.Join(projectDir, "bundle"))
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return managerImage(1, b.CSV)
}

// ReleaseManagerImage is the image the CSV of release version, as
// catalog/releases records it, runs the manager as: by tag up to 0.2.0,
// by digest after.
func ReleaseManagerImage(projectDir, version string) string {
	all, err := releases.Load(filepath.Join(projectDir, "catalog", "releases"))
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	var csv *v1alpha1.ClusterServiceVersion
	for _, b := range all {
		if b.Version.String() == version {
			csv, err = b.CSV()
			ExpectWithOffset(1, err).NotTo(HaveOccurred())
		}
	}
	ExpectWithOffset(1, csv).NotTo(BeNil(), "catalog/releases holds no release %s", version)
	return managerImage(1, csv)
}

// managerImage is the image of the CSV's container named manager.
func managerImage(offset int, csv *v1alpha1.ClusterServiceVersion) string {
	ExpectWithOffset(offset+1, csv).NotTo(BeNil(), "no ClusterServiceVersion")
	image := ""
	for _, d := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.Name == "manager" && image == "" {
				image = c.Image
			}
		}
	}
	ExpectWithOffset(offset+1, image).NotTo(BeEmpty(), "%s runs no container named manager", csv.Name)
	return image
}
