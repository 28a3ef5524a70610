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

// Package olmv1 installs and upgrades the operator through OLM v1
// (operator-framework/operator-controller: catalogd and operator-controller,
// run as host processes) on the local cluster `make test-olmv1` starts, with
// cert-manager as OLM v1's webhook certificate provider, from a catalog
// image and bundle images built here and served by an OCI registry in this
// test process.
package olmv1

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mydeployment-io/mydeployment-operator/test/olm/releases"
	"github.com/mydeployment-io/mydeployment-operator/test/utils"
)

const (
	pkg = "mydeployment-operator"
	// noAllNamespacesPkg is this version's bundle with AllNamespaces not
	// supported: OLM v1 must refuse it.
	noAllNamespacesPkg = pkg + "-no-allnamespaces"
	// systemNamespace is OLM v1's, as its Helm chart names it.
	systemNamespace = "olmv1-system"
	catalogName     = "mydeployment-catalog"
)

var (
	projectDir string
	workDir    string
	version    string // the version bundle/ holds
	prev       string // the last release in catalog/releases before it
	reg        *ociRegistry
	procs      []*utils.Process
)

func TestOLMv1(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "OLM v1 install and upgrade suite")
}

var _ = BeforeSuite(func() {
	projectDir, version, workDir = utils.OLMSuiteSetup("test-olmv1", "olmv1-e2e")
	prev = utils.PreviousRelease(projectDir, version)

	By("installing the CRDs of catalogd, operator-controller and cert-manager from their modules")
	_, err := utils.Kubectl("create", "-f", filepath.Join(projectDir, "bin", "olmv1-crds")+"/")
	Expect(err).NotTo(HaveOccurred())
	for _, crd := range []string{"clustercatalogs.olm.operatorframework.io", "clusterextensions.olm.operatorframework.io",
		"certificates.cert-manager.io", "certificaterequests.cert-manager.io", "issuers.cert-manager.io", "clusterissuers.cert-manager.io"} {
		Eventually(jsonpath(`{.status.conditions[?(@.type=="Established")].status}`, "crd", crd),
			time.Minute, 200*time.Millisecond).Should(Equal("True"), crd)
	}
	for _, ns := range []string{systemNamespace, "cert-manager"} {
		kubectl("create", "namespace", ns)
	}

	By("serving an OCI registry on 127.0.0.1 with the catalog and bundle images")
	cas := filepath.Join(workDir, "cas") // CAs catalogd and operator-controller trust
	reg = startRegistry(cas, filepath.Join(workDir, "registry.log"))
	pushImages()
	catalogdCert, catalogdKey := serveCert(filepath.Join(workDir, "catalogd"), cas)

	By("starting cert-manager, catalogd and operator-controller as host processes")
	start("cert-manager", "", "--cluster-resource-namespace=cert-manager")
	catalogdAddr, catalogdWebhook := freeAddr(), freePort()
	start("catalogd", asPod(systemNamespace, "catalogd-controller-manager"),
		"--system-namespace="+systemNamespace, "--cache-dir="+filepath.Join(workDir, "catalogd", "cache"),
		"--tls-cert="+catalogdCert, "--tls-key="+catalogdKey, "--pull-cas-dir="+cas,
		"--catalogs-server-addr="+catalogdAddr, "--external-address="+catalogdAddr,
		"--metrics-bind-address="+freeAddr(), "--health-probe-bind-address=0",
		// Off :9443, where the host manager serves ours.
		fmt.Sprintf("--webhook-server-port=%d", catalogdWebhook))
	registerCatalogdWebhook(catalogdWebhook, catalogdCert)
	start("operator-controller", asPod(systemNamespace, "operator-controller-controller-manager"),
		"--system-namespace="+systemNamespace, "--cache-path="+filepath.Join(workDir, "operator-controller", "cache"),
		"--catalogd-cas-dir="+cas, "--pull-cas-dir="+cas, "--health-probe-bind-address=0",
		// Webhooks need a certificate provider; cert-manager is the one a
		// cluster without OpenShift has.
		"--feature-gates=WebhookProviderCertManager=true")
})

var _ = AfterSuite(func() {
	operator.StopManager()
	operator.RemoveAddresses()
	for i := len(procs) - 1; i >= 0; i-- {
		procs[i].Stop()
	}
	reg.stop()
})

// pushImages builds and pushes the bundle images (the last release, this
// version, and this version without AllNamespaces) and the catalog image
// holding all three, as `make bundle-build` and `make catalog-build` would.
func pushImages() {
	bundleLabels := dockerfileLabels(filepath.Join(projectDir, "bundle.Dockerfile"))
	bundleRef := func(p, v string) string { return reg.host() + "/" + p + "-bundle:v" + v }

	// This version: bundle/ as bundle.Dockerfile copies it.
	bundle := filepath.Join(projectDir, "bundle")
	files := filesUnder(filepath.Join(bundle, "manifests"), "manifests", nil)
	filesUnder(filepath.Join(bundle, "metadata"), "metadata", files)
	filesUnder(filepath.Join(bundle, "tests", "scorecard"), "tests/scorecard", files)
	reg.push(bundleRef(pkg, version), files, bundleLabels)

	// The last release: its manifests as catalog/releases records them.
	all, err := releases.Load(filepath.Join(projectDir, "catalog", "releases"))
	Expect(err).NotTo(HaveOccurred())
	old := map[string][]byte{}
	for _, b := range all {
		if b.Version.String() != prev {
			continue
		}
		for i, obj := range b.Objects {
			old[fmt.Sprintf("manifests/object-%02d.json", i)] = obj
		}
	}
	Expect(old).NotTo(BeEmpty())
	old["metadata/annotations.yaml"] = files["metadata/annotations.yaml"]
	reg.push(bundleRef(pkg, prev), old, bundleLabels)

	// This version without AllNamespaces, as a package of its own.
	noAll := filepath.Join(workDir, "bundle-no-allnamespaces")
	Expect(os.CopyFS(noAll, os.DirFS(bundle))).To(Succeed())
	csvPath := filepath.Join(noAll, "manifests", pkg+".clusterserviceversion.yaml")
	edit(csvPath, func(s string) string {
		s = strings.Replace(s, "name: "+pkg+".v"+version, "name: "+noAllNamespacesPkg+".v"+version, 1)
		return strings.Replace(s, "  - supported: true\n    type: AllNamespaces", "  - supported: false\n    type: AllNamespaces", 1)
	})
	Expect(os.ReadFile(csvPath)).To(ContainSubstring("supported: false\n    type: AllNamespaces"))
	edit(filepath.Join(noAll, "metadata", "annotations.yaml"), func(s string) string {
		return strings.Replace(s, "package.v1: "+pkg+"\n", "package.v1: "+noAllNamespacesPkg+"\n", 1)
	})
	noAllLabels := map[string]string{}
	for k, v := range bundleLabels {
		noAllLabels[k] = v
	}
	noAllLabels["operators.operatorframework.io.bundle.package.v1"] = noAllNamespacesPkg
	noAllFiles := filesUnder(filepath.Join(noAll, "manifests"), "manifests", nil)
	filesUnder(filepath.Join(noAll, "metadata"), "metadata", noAllFiles)
	reg.push(bundleRef(noAllNamespacesPkg, version), noAllFiles, noAllLabels)

	// The catalog: hack/catalog.sh's (catalog/releases plus bundle/, each
	// bundle naming its image in this registry), plus the refused package.
	configs := filepath.Join(workDir, "catalog")
	cmd := exec.Command(filepath.Join(projectDir, "hack", "catalog.sh"))
	cmd.Env = append(os.Environ(), "VERSION="+version, "CATALOG_DIR="+configs,
		"CATALOG_BUNDLE_IMAGE="+bundleRef(pkg, version))
	out, err := utils.Run(cmd)
	Expect(err).NotTo(HaveOccurred(), out)
	// Released bundles name the image they were published as; here they are in this registry.
	edit(filepath.Join(configs, pkg, "bundles.yaml"), func(s string) string {
		return strings.ReplaceAll(s, `image: "mydeployment.io/`+pkg+`-bundle:`, `image: "`+reg.host()+"/"+pkg+"-bundle:")
	})
	Expect(os.ReadFile(filepath.Join(configs, pkg, "bundles.yaml"))).To(ContainSubstring(bundleRef(pkg, prev)))
	out, err = utils.Run(exec.Command(filepath.Join(projectDir, "bin", "opm"), "render", noAll, "--output", "yaml"))
	Expect(err).NotTo(HaveOccurred(), out)
	out = strings.Replace(out, `image: ""`, `image: "`+bundleRef(noAllNamespacesPkg, version)+`"`, 1)
	Expect(os.MkdirAll(filepath.Join(configs, noAllNamespacesPkg), 0o755)).To(Succeed())
	Expect(os.WriteFile(filepath.Join(configs, noAllNamespacesPkg, "index.yaml"), []byte(fmt.Sprintf(`---
schema: olm.package
name: %[1]s
defaultChannel: stable
---
schema: olm.channel
package: %[1]s
name: stable
entries:
- name: %[1]s.v%[2]s
%[3]s`, noAllNamespacesPkg, version, out)), 0o644)).To(Succeed())
	out, err = utils.Run(exec.Command(filepath.Join(projectDir, "bin", "opm"), "validate", configs))
	Expect(err).NotTo(HaveOccurred(), out)

	reg.push(catalogRef(), filesUnder(configs, "configs", nil), dockerfileLabels(filepath.Join(projectDir, "catalog.Dockerfile")))
}

// registerCatalogdWebhook configures kube-apiserver to call catalogd's
// mutating webhook (it labels each ClusterCatalog with its name, which
// ClusterExtensions select catalogs by), as OLM v1's Helm chart does, at
// the host address catalogd serves it on, once it listens.
func registerCatalogdWebhook(port int, certFile string) {
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	Eventually(func() error {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
		}
		return err
	}, time.Minute, 200*time.Millisecond).Should(Succeed(), "catalogd's webhook server listens")
	ca, err := os.ReadFile(certFile)
	Expect(err).NotTo(HaveOccurred())
	apply(fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: catalogd-mutating-webhook-configuration}
webhooks:
- name: inject-metadata-name.olm.operatorframework.io
  admissionReviewVersions: [v1]
  clientConfig:
    url: https://%s/mutate-olm-operatorframework-io-v1-clustercatalog
    caBundle: %s
  failurePolicy: Fail
  rules: [{apiGroups: [olm.operatorframework.io], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [clustercatalogs]}]
  sideEffects: None
  timeoutSeconds: 10
`, addr, base64.StdEncoding.EncodeToString(ca)))
}

func catalogRef() string { return reg.host() + "/" + pkg + "-catalog:v" + version }

func edit(path string, f func(string) string) {
	data, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	Expect(os.WriteFile(path, []byte(f(string(data))), 0o644)).To(Succeed())
}

// serveCert writes a self-signed serving certificate for 127.0.0.1 into dir
// (as cert-manager makes catalogd's in OLM v1's Helm chart) and its CA into
// caDir, for operator-controller to trust.
func serveCert(dir, caDir string) (certFile, keyFile string) {
	Expect(os.MkdirAll(dir, 0o700)).To(Succeed())
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "catalogd-service." + systemNamespace + ".svc"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	Expect(err).NotTo(HaveOccurred())
	keyDER, err := x509.MarshalECPrivateKey(key)
	Expect(err).NotTo(HaveOccurred())
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	Expect(os.WriteFile(certFile, certPEM, 0o600)).To(Succeed())
	Expect(os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)).To(Succeed())
	Expect(os.WriteFile(filepath.Join(caDir, "catalogd.crt"), certPEM, 0o644)).To(Succeed())
	return certFile, keyFile
}

// asPod is the command line prefix that runs a binary of bin/ as if in a pod
// of service account ns/name: catalogd and operator-controller read their
// service account from the token file a pod has mounted (for pull secrets),
// so the binary runs in a mount namespace of its own (unshare: needs root)
// whose /run/secrets/kubernetes.io/serviceaccount holds a token of that
// service account, from the API server.
func asPod(ns, name string) string {
	kubectl("-n", ns, "create", "serviceaccount", name)
	dir := filepath.Join(workDir, name+"-serviceaccount")
	Expect(os.MkdirAll(dir, 0o700)).To(Succeed())
	token := kubectl("-n", ns, "create", "token", name, "--duration=24h")
	Expect(os.WriteFile(filepath.Join(dir, "token"), []byte(strings.TrimSpace(token)), 0o600)).To(Succeed())
	Expect(os.WriteFile(filepath.Join(dir, "namespace"), []byte(ns), 0o600)).To(Succeed())
	return dir
}

// start runs bin/<name> as a host process logging to workDir/<name>.log; as
// a pod if podDir (from asPod) is not empty.
func start(name, podDir string, args ...string) {
	path := filepath.Join(projectDir, "bin", name)
	cmd, cmdArgs := path, args
	if dir := podDir; dir != "" {
		const sa = "/run/secrets/kubernetes.io/serviceaccount"
		cmd = "unshare"
		cmdArgs = append([]string{"--mount", "sh", "-c",
			`mount -t tmpfs tmpfs /run && mkdir -p ` + sa + ` && cp "$0"/token "$0"/namespace ` + sa + `/ && exec "$@"`,
			dir, path}, args...)
	}
	p, err := utils.Start(name, filepath.Join(workDir, name+".log"), nil, cmd, cmdArgs...)
	Expect(err).NotTo(HaveOccurred())
	procs = append(procs, p)
}

func freePort() int {
	p, err := utils.FreePort()
	Expect(err).NotTo(HaveOccurred())
	return p
}

func freeAddr() string { return fmt.Sprintf("127.0.0.1:%d", freePort()) }

var kubectl = utils.MustKubectl

var jsonpath = utils.JSONPath

var apply = utils.MustApply

// OLM v1's processes must outlive every spec: one that exited explains a
// failure better than the timeout it causes.
var _ = AfterEach(func() {
	for _, p := range procs {
		if exited, err := p.Exited(); exited {
			Fail(fmt.Sprintf("%s exited (%v); its log: %s", p.Name, err, p.Log))
		}
	}
})

// dumpOnFailure prints the processes' logs and OLM v1's objects, so a red run says why.
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
		{"get", "clustercatalogs,clusterextensions", "-o", "yaml"},
		{"get", "certificates,certificaterequests,issuers", "-A", "-o", "wide"},
		{"get", "deployments,pods,mydeployments,applications", "-A", "-o", "wide"},
		{"get", "events", "-A", "--sort-by=.lastTimestamp"},
	} {
		out, _ := utils.Kubectl(args...)
		_, _ = fmt.Fprintf(GinkgoWriter, "kubectl %v:\n%s\n", args, out)
	}
	_, _ = fmt.Fprintf(GinkgoWriter, "logs are in %s\n", workDir)
})
