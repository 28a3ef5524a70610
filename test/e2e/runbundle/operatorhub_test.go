package runbundle

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	"github.com/mydeployment-io/mydeployment-operator/test/utils"
)

// catalogTag is the tag docs/install.md's CatalogSource follows: each
// release's catalog is pushed under it, and registryPoll picks it up.
const catalogTag = "stable"

// pollInterval replaces docs/install.md's registryPoll interval (10m).
const pollInterval = "10s"

// installMode is one of OLM v0's install modes: the operator's namespace
// (the Subscription's and the OperatorGroup's) and the OperatorGroup's
// targetNamespaces (none: AllNamespaces).
type installMode struct {
	name      string
	namespace string
	targets   []string
}

// sideBySide are the three install modes that select namespaces, each in
// a namespace of its own with targets no other selects, so that OLM runs
// the three at once (OperatorGroups that provide the same APIs may not
// intersect); AllNamespaces intersects every group and runs after them,
// in docs/install.md's namespace.
var sideBySide = []installMode{
	{"OwnNamespace", "hub-own", []string{"hub-own"}},
	{"SingleNamespace", "hub-single", []string{"hub-a"}},
	{"MultiNamespace", "hub-multi", []string{"hub-b", "hub-c"}},
}

// operatorHub: docs/install.md's OLM v0 objects (a CatalogSource of the
// serving catalog image, the namespace, an OperatorGroup, a Subscription
// on stable) applied as written, in each install mode: the previous
// release installs from the catalog image, then the catalog image is
// published again with this version, registryPoll finds it and OLM
// upgrades; the webhook and the controller work where the mode says, and
// leave other namespaces alone.
func operatorHub() {
	var objects []map[string]any
	BeforeAll(func() {
		objects = readInstallYAML()
		By("operator-sdk cleanup: run bundle's install goes (its CSV, Subscription, CatalogSource, OperatorGroup, CRDs)")
		operatorSDK("cleanup", "mydeployment-operator", "-n", namespace)
		Eventually(func() string {
			return kubectl("-n", namespace, "get", "pods", "-l", "control-plane=controller-manager", "-o", "name")
		}, 3*time.Minute, time.Second).Should(BeEmpty(), "run bundle's manager pods are gone")
	})

	It("OwnNamespace, SingleNamespace and MultiNamespace side by side: each installs the previous release from the catalog image, and upgrades when it is republished", func() {
		installThroughCatalog(withCatalogName(objects, "mydeployment-catalog-modes"), sideBySide, false)
	})

	It("AllNamespaces, as docs/install.md writes it: installs the previous release from the catalog image, and upgrades when it is republished", func() {
		// A catalog of its own: OLM's resolver keeps what it read of a
		// catalog by its name, and the suite publishes the previous
		// release again (no publisher goes back).
		installThroughCatalog(withCatalogName(objects, "mydeployment-catalog"),
			[]installMode{{"AllNamespaces", namespace, nil}}, true)
	})

	It("lets a user bound only to the built-in edit role create an Application, which runs on real pods", func() {
		expectEditorCreatesApplication("hub-edit", "hub-editor")
	})
}

// installThroughCatalog publishes the previous release's catalog, installs
// it in every mode at once (one CatalogSource, a Subscription each),
// publishes this version's, checks each upgraded, and unless keep
// uninstalls them (the Subscriptions, CSVs, OperatorGroups and the
// CatalogSource; OLM leaves the CRDs).
func installThroughCatalog(objects []map[string]any, modes []installMode, keep bool) {
	GinkgoHelper()
	start := time.Now()
	publishCatalog(previous)
	for i, m := range modes {
		for _, ns := range append([]string{m.namespace}, m.targets...) {
			_, _ = utils.Kubectl("create", "namespace", ns)
		}
		applyInstallYAML(objects, m, i == 0)
	}
	expectCatalogServed(objects)
	for _, m := range modes {
		expectInstalledIn(m.namespace, previous, utils.ReleaseManagerImage(projectDir, previous))
		Expect(kubectl("-n", m.namespace, "get", "csv", "mydeployment-operator.v"+previous, "-o", `jsonpath={.metadata.annotations.olm\.targetNamespaces}`)).
			To(Equal(strings.Join(m.targets, ",")), "%s: the OperatorGroup's targets are the CSV's", m.name)
	}
	installed := time.Since(start).Round(time.Second)

	published := time.Now()
	publishCatalog(version)
	for _, m := range modes {
		expectInstalledIn(m.namespace, version, utils.BundleManagerImage(projectDir))
		Eventually(func() string {
			out, err := utils.Kubectl("-n", m.namespace, "get", "csv", "mydeployment-operator.v"+previous, "-o", "name")
			if err != nil && strings.Contains(out, "NotFound") {
				return ""
			}
			return out
		}, 2*time.Minute, time.Second).Should(BeEmpty(), "%s: OLM removed the previous CSV", m.name)
	}
	By(fmt.Sprintf("%s: %s installed in %s; republished as %s, upgraded in %s", names(modes), previous, installed, version,
		time.Since(published).Round(time.Second)))

	selective := false
	for _, m := range modes {
		watched := m.namespace
		if len(m.targets) > 0 {
			watched = m.targets[len(m.targets)-1]
			selective = true
		}
		expectWebhook(watched)
		expectReconciled(watched, true)
	}
	if selective {
		expectReconciled("default", false)
	}
	if !keep {
		uninstall(objects, modes)
	}
}

func names(modes []installMode) string {
	var n []string
	for _, m := range modes {
		n = append(n, m.name)
	}
	return strings.Join(n, ", ")
}

// readInstallYAML is docs/install.md's YAML block of OLM v0 objects (the
// one with the CatalogSource and the Subscription), `<registry>/` made
// IMAGE_TAG_BASE's registry.
func readInstallYAML() []map[string]any {
	GinkgoHelper()
	data, err := os.ReadFile(filepath.Join(projectDir, "docs", "install.md"))
	Expect(err).NotTo(HaveOccurred())
	var block string
	for _, b := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(data), -1) {
		if strings.Contains(b[1], "kind: CatalogSource") && strings.Contains(b[1], "kind: Subscription") {
			block = b[1]
		}
	}
	Expect(block).NotTo(BeEmpty(), "docs/install.md has a YAML block with the CatalogSource and the Subscription")
	block = strings.ReplaceAll(block, "<registry>/mydeployment-operator", imageTagBase)
	var objects []map[string]any
	kinds := map[string]bool{}
	for _, doc := range strings.Split(block, "\n---\n") {
		var o map[string]any
		Expect(yaml.Unmarshal([]byte(doc), &o)).To(Succeed(), doc)
		kinds[fmt.Sprint(o["kind"])] = true
		objects = append(objects, o)
	}
	Expect(kinds).To(HaveKey("OperatorGroup"))
	Expect(kinds).To(HaveKey("Namespace"))
	cs := object(objects, "CatalogSource")
	Expect(spec(cs)["image"]).To(Equal(fmt.Sprintf("%s-catalog:%s", imageTagBase, catalogTag)),
		"docs/install.md's CatalogSource follows the catalog's %s tag", catalogTag)
	Expect(object(objects, "Subscription")["metadata"]).To(HaveKeyWithValue("namespace", namespace))
	return objects
}

func object(objects []map[string]any, kind string) map[string]any {
	GinkgoHelper()
	for _, o := range objects {
		if o["kind"] == kind {
			return o
		}
	}
	Fail("docs/install.md's OLM v0 YAML has no " + kind)
	return nil
}

// withCatalogName is objects with the CatalogSource, and the Subscription's
// source, named name.
func withCatalogName(objects []map[string]any, name string) []map[string]any {
	GinkgoHelper()
	var out []map[string]any
	for _, o := range objects {
		o = deepCopy(o)
		switch o["kind"] {
		case "CatalogSource":
			o["metadata"].(map[string]any)["name"] = name
		case "Subscription":
			spec(o)["source"] = name
		}
		out = append(out, o)
	}
	return out
}

func spec(o map[string]any) map[string]any {
	s, _ := o["spec"].(map[string]any)
	return s
}

// applyInstallYAML applies the objects for mode m: the Namespace, the
// OperatorGroup and the Subscription in m's namespace, the OperatorGroup
// targeting m's targets (none: all namespaces, as docs/install.md's), and,
// with catalog, the CatalogSource, polled every pollInterval.
func applyInstallYAML(objects []map[string]any, m installMode, catalog bool) {
	GinkgoHelper()
	var docs []string
	for _, o := range objects {
		o = deepCopy(o)
		meta := o["metadata"].(map[string]any)
		switch o["kind"] {
		case "CatalogSource":
			if !catalog {
				continue
			}
			spec(o)["updateStrategy"] = map[string]any{"registryPoll": map[string]any{"interval": pollInterval}}
		case "Namespace":
			meta["name"] = m.namespace
		case "OperatorGroup":
			meta["namespace"] = m.namespace
			if len(m.targets) > 0 {
				o["spec"] = map[string]any{"targetNamespaces": m.targets}
			}
		case "Subscription":
			meta["namespace"] = m.namespace
		}
		b, err := yaml.Marshal(o)
		Expect(err).NotTo(HaveOccurred())
		docs = append(docs, string(b))
	}
	By(fmt.Sprintf("kubectl apply: docs/install.md's objects for %s: the operator in %s, targets %v", m.name, m.namespace, m.targets))
	out, err := utils.KubectlStdin(strings.Join(docs, "---\n"), "apply", "-f", "-")
	Expect(err).NotTo(HaveOccurred(), out)
}

func deepCopy(o map[string]any) map[string]any {
	GinkgoHelper()
	b, err := yaml.Marshal(o)
	Expect(err).NotTo(HaveOccurred())
	var c map[string]any
	Expect(yaml.Unmarshal(b, &c)).To(Succeed())
	return c
}

// publishCatalog pushes the catalog as of release (every release up to
// it: hack/catalog.sh's CATALOG_UNTIL) as IMAGE_TAG_BASE-catalog:stable,
// served by opm as make images builds it: what a publisher does at each
// release.
func publishCatalog(release string) {
	GinkgoHelper()
	dir := filepath.Join(projectDir, "bin", "operatorhub", release)
	Expect(os.RemoveAll(dir)).To(Succeed())
	image := fmt.Sprintf("%s-catalog:%s", imageTagBase, catalogTag)
	for _, cmd := range []*exec.Cmd{
		exec.Command(filepath.Join(projectDir, "hack", "catalog.sh")),
		exec.Command("go", "run", "./hack/images", "-registry", os.Getenv("LOCAL_REGISTRY"),
			fmt.Sprintf("%s,file=catalog.Dockerfile,context=%s,opm=bin/opm,grpc-health-probe=bin/grpc_health_probe", image, dir)),
	} {
		cmd.Dir = projectDir
		cmd.Env = append(os.Environ(), "VERSION="+version, "CATALOG_UNTIL="+release,
			"CATALOG_DIR="+filepath.Join(dir, "dist", "catalog"),
			fmt.Sprintf("CATALOG_BUNDLE_IMAGE=%s-bundle:v%s", imageTagBase, version))
		out, err := utils.Run(cmd)
		Expect(err).NotTo(HaveOccurred(), out)
	}
	By(fmt.Sprintf("published the catalog as of %s as %s", release, image))
}

// expectCatalogServed checks that OLM runs the catalog image as a registry
// pod on real-0 behind a Service, and that catalog-operator reads it by
// the Service's DNS name (the cluster's DNS on real-0).
func expectCatalogServed(objects []map[string]any) {
	GinkgoHelper()
	cs := object(objects, "CatalogSource")
	meta := cs["metadata"].(map[string]any)
	name, ns := fmt.Sprint(meta["name"]), fmt.Sprint(meta["namespace"])
	Eventually(utils.JSONPath(`{.status.connectionState.lastObservedState}`, "-n", ns, "catalogsource", name),
		3*time.Minute, time.Second).Should(Equal("READY"))
	address := kubectl("-n", ns, "get", "catalogsource", name, "-o", "jsonpath={.status.connectionState.address}")
	Expect(address).To(HaveSuffix(fmt.Sprintf(".%s.svc:50051", ns)), "catalog-operator dials the registry Service by name")
	pods := kubectl("-n", ns, "get", "pods", "-l", "olm.catalogSource="+name, "-o",
		`jsonpath={range .items[?(@.status.phase=="Running")]}{.spec.nodeName} {.spec.containers[0].image}{"\n"}{end}`)
	Expect(pods).To(ContainSubstring(fmt.Sprintf("%s %s", node, spec(cs)["image"])), "its registry pod runs the catalog image on %s", node)
	By(fmt.Sprintf("CatalogSource %s READY at %s; registry pod on %s", name, address, node))
}

// expectReconciled checks whether the installed manager runs a
// MyDeployment in ns: one pod Ready on real-0 when it watches ns, none for
// 5 s when it does not (a watching manager writes it within a second).
func expectReconciled(ns string, watched bool) {
	GinkgoHelper()
	md := fmt.Sprintf(`{"apiVersion":"apps.mydeployment.io/v1beta1","kind":"MyDeployment","metadata":{"name":"hub"},`+
		`"spec":{"replicas":1,"selector":{"matchLabels":{"app":"hub"}},"template":{"metadata":{"labels":{"app":"hub"}},`+
		`"spec":{"containers":[{"name":"web","image":"%s:v1"}]}}}}`, testwebBase)
	Eventually(func() error { // right after an upgrade the webhook may fail for a while (expectWebhook)
		_, err := utils.KubectlStdin(md, "-n", ns, "apply", "-f", "-")
		return err
	}, 2*time.Minute, 2*time.Second).Should(Succeed())
	pods := utils.JSONPath(`{range .items[?(@.status.phase=="Running")]}{.spec.nodeName} {end}`, "-n", ns, "pods", "-l", "app=hub")
	if watched {
		Eventually(utils.JSONPath(`{.status.readyReplicas}`, "-n", ns, "md", "hub"), 2*time.Minute, time.Second).Should(Equal("1"))
		Expect(pods()).To(Equal(node+" "), "its pod runs on %s", node)
		By(fmt.Sprintf("a MyDeployment in %s (watched): its pod Ready on %s", ns, node))
	} else {
		Consistently(utils.JSONPath(`{.status.observedGeneration}`, "-n", ns, "md", "hub"), 5*time.Second, time.Second).
			Should(BeEmpty(), "the manager does not watch %s", ns)
		By(fmt.Sprintf("a MyDeployment in %s (not watched): left alone", ns))
	}
	kubectl("-n", ns, "delete", "md", "hub", "--wait=true")
}

// uninstall removes what a user removes to uninstall an OLM v0 operator:
// the Subscription, the CSV and the OperatorGroup of each mode, and the
// CatalogSource.
func uninstall(objects []map[string]any, modes []installMode) {
	GinkgoHelper()
	for _, m := range modes {
		kubectl("-n", m.namespace, "delete", "subscription,csv,operatorgroup", "--all")
	}
	meta := object(objects, "CatalogSource")["metadata"].(map[string]any)
	kubectl("-n", fmt.Sprint(meta["namespace"]), "delete", "catalogsource", fmt.Sprint(meta["name"]), "--wait=true")
	for _, m := range modes {
		Eventually(func() string {
			return kubectl("-n", m.namespace, "get", "pods", "-l", "control-plane=controller-manager", "-o", "name")
		}, 3*time.Minute, time.Second).Should(BeEmpty(), "%s: the manager's pods are gone", m.name)
	}
}
