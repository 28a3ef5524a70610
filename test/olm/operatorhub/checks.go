package operatorhub

import (
	"encoding/base64"
	"fmt"
	"net/mail"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/mydeployment-io/mydeployment-operator/test/olm/releases"
)

// OpenShiftVersionsAnnotation is the bundle annotation that targets OpenShift
// releases ("v4.17", "v4.17-v4.20", "=v4.17" or "v4.17,v4.18").
const OpenShiftVersionsAnnotation = "com.redhat.openshift.versions"

// iconMediaTypes are the icon media types OperatorHub shows.
var iconMediaTypes = map[string]bool{"image/gif": true, "image/jpeg": true, "image/png": true, "image/svg+xml": true}

// Check runs every offline static check of the community pipeline on the
// submission folder bundleDir (operators/<package>/<version>, as Write lays
// it out), with the released bundles of releasesDir for the update graph.
// It returns one error per failed rule (none: the submission passes) and
// notes on rules that passed because they did not apply.
func Check(bundleDir, releasesDir string) (notes []string, errs []error) {
	bundle, err := manifests.GetBundleFromDir(bundleDir)
	if err != nil {
		return nil, []error{fmt.Errorf("reading the bundle %s: %w", bundleDir, err)}
	}
	if bundle.CSV == nil {
		return nil, []error{fmt.Errorf("%s: no ClusterServiceVersion", bundleDir)}
	}
	annotations, err := readAnnotations(filepath.Join(bundleDir, "metadata", "annotations.yaml"))
	if err != nil {
		return nil, []error{err}
	}
	released, err := releases.Load(releasesDir)
	if err != nil {
		return nil, []error{fmt.Errorf("reading releases: %w", err)}
	}
	errs = append(errs, Validate(bundle, slices.Concat(NameOperatorHub, SuiteOperatorFramework)...)...)
	errs = append(errs, CSVMetadata(bundle.CSV)...)
	errs = append(errs, SemverVersion(filepath.Join(bundleDir, "manifests"))...)
	errs = append(errs, PackageName(bundleDir, annotations, bundle.CSV)...)
	errs = append(errs, NoNetworkPolicy(bundle)...)
	errs = append(errs, UpdateGraph(released, bundle.CSV)...)
	note, kubeErrs := KubeVersions(bundle.CSV, annotations)
	if note != "" {
		notes = append(notes, note)
	}
	errs = append(errs, kubeErrs...)
	return notes, errs
}

// CSVMetadata checks what OperatorHub shows of the CSV: displayName of 3 to
// 50 characters, a description of at least 20, one icon with base64 data and
// an image media type, a version (SemverVersion checks its spelling),
// maintainers each with a name and an email address, a provider name of at
// least 3 characters, and links each with a name and an absolute URL.
func CSVMetadata(csv *v1alpha1.ClusterServiceVersion) []error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf("CSV "+format, args...)) }
	if n := utf8.RuneCountInString(strings.TrimSpace(csv.Spec.DisplayName)); n < 3 || n > 50 {
		fail("displayName %q has %d characters, want 3 to 50", csv.Spec.DisplayName, n)
	}
	if n := utf8.RuneCountInString(strings.TrimSpace(csv.Spec.Description)); n < 20 {
		fail("description has %d characters, want at least 20", n)
	}
	if len(csv.Spec.Icon) != 1 {
		fail("has %d icons, want one", len(csv.Spec.Icon))
	}
	for _, icon := range csv.Spec.Icon {
		if _, err := base64.StdEncoding.DecodeString(icon.Data); err != nil || icon.Data == "" {
			fail("icon base64data is empty or not base64")
		}
		if !iconMediaTypes[icon.MediaType] {
			fail("icon mediatype %q is not one of image/gif, image/jpeg, image/png, image/svg+xml", icon.MediaType)
		}
	}
	if csv.Spec.Version.Equals(semver.Version{}) {
		fail("spec.version is not set")
	}
	if len(csv.Spec.Maintainers) == 0 {
		fail("has no maintainers")
	}
	for _, m := range csv.Spec.Maintainers {
		if m.Name == "" {
			fail("maintainer %q has no name", m.Email)
		}
		if _, err := mail.ParseAddress(m.Email); err != nil {
			fail("maintainer %q has no valid email (%q): %w", m.Name, m.Email, err)
		}
	}
	if n := utf8.RuneCountInString(strings.TrimSpace(csv.Spec.Provider.Name)); n < 3 {
		fail("provider name %q has %d characters, want at least 3", csv.Spec.Provider.Name, n)
	}
	if len(csv.Spec.Links) == 0 {
		fail("has no links")
	}
	for _, l := range csv.Spec.Links {
		u, err := url.ParseRequestURI(l.URL)
		if l.Name == "" || err != nil || u.Host == "" {
			fail("link %q -> %q needs a name and an absolute URL", l.Name, l.URL)
		}
	}
	return errs
}

// SemverVersion checks the CSV file in manifestsDir spells spec.version as
// a semver version ("0.2.0", not "0.2" or "v0.2.0"): the typed CSV reads
// either as 0.2.0, the community pipeline does not.
func SemverVersion(manifestsDir string) []error {
	path, _, err := findCSV(manifestsDir)
	if err != nil {
		return []error{err}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return []error{fmt.Errorf("reading %s: %w", path, err)}
	}
	var csv struct {
		Spec struct {
			Version string `json:"version"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &csv); err != nil {
		return []error{fmt.Errorf("parsing %s: %w", path, err)}
	}
	if _, err := semver.Parse(csv.Spec.Version); err != nil {
		return []error{fmt.Errorf("CSV spec.version %q is not a semver version: %w", csv.Spec.Version, err)}
	}
	return nil
}

// PackageName checks the package annotation of metadata/annotations.yaml
// names the folder the version folder bundleDir is in, and that the CSV is
// named <package>.v<version> with the folder's version.
func PackageName(bundleDir string, annotations map[string]string, csv *v1alpha1.ClusterServiceVersion) []error {
	var errs []error
	pkg := annotations[PackageAnnotation]
	abs, err := filepath.Abs(bundleDir)
	if err != nil {
		return []error{fmt.Errorf("resolving %s: %w", bundleDir, err)}
	}
	folder, version := filepath.Base(filepath.Dir(abs)), filepath.Base(abs)
	if pkg == "" || pkg != folder {
		errs = append(errs, fmt.Errorf("annotation %s is %q, the package folder is %q", PackageAnnotation, pkg, folder))
	}
	if want := pkg + ".v" + csv.Spec.Version.String(); csv.Name != want {
		errs = append(errs, fmt.Errorf("CSV name %q is not %q (package %q, version %s)", csv.Name, want, pkg, csv.Spec.Version))
	}
	if version != csv.Spec.Version.String() {
		errs = append(errs, fmt.Errorf("version folder %q holds CSV version %s", version, csv.Spec.Version))
	}
	return errs
}

// NoNetworkPolicy checks the bundle ships no NetworkPolicy, which the
// community pipeline refuses.
func NoNetworkPolicy(bundle *manifests.Bundle) []error {
	var errs []error
	for _, o := range bundle.Objects {
		if o.GetKind() == "NetworkPolicy" {
			errs = append(errs, fmt.Errorf("the bundle ships NetworkPolicy %s, which community operators may not", o.GetName()))
		}
	}
	return errs
}

// UpdateGraph checks the package's update graph, made of the released
// bundles and csv (a release of csv's name is replaced by csv), has no
// dangling edge and no dangling bundle: every `replaces` and `skips` names a
// bundle of the graph, and every bundle can be reached from the channel head
// (the newest version) through them, as opm validate requires of a channel.
// A released bundle's edges are its CSV's and the `replaces` its own
// submission was written with ([Edges]): catalog/releases records bundles as
// `make bundle` made them, before Write added the edges. One channel holds
// every bundle, as in hack/catalog.sh.
func UpdateGraph(released []releases.Bundle, csv *v1alpha1.ClusterServiceVersion) []error {
	type node struct {
		version semver.Version
		edges   []string
	}
	nodes := map[string]node{}
	for _, b := range released {
		if b.Name == csv.Name {
			continue
		}
		old, err := b.CSV()
		if err != nil {
			return []error{fmt.Errorf("update graph: %w", err)}
		}
		edges := upgradeEdges(old)
		if replaces, _ := Edges(released, b.Version); replaces != "" && !slices.Contains(edges, replaces) {
			edges = append(edges, replaces)
		}
		nodes[b.Name] = node{version: b.Version, edges: edges}
	}
	nodes[csv.Name] = node{version: csv.Spec.Version.Version, edges: upgradeEdges(csv)}

	var errs []error
	head := csv.Name
	for name, n := range nodes {
		if n.version.GT(nodes[head].version) {
			head = name
		}
		for _, e := range n.edges {
			if _, ok := nodes[e]; !ok {
				errs = append(errs, fmt.Errorf("update graph: %s replaces or skips %s, which is not a bundle of the package", name, e))
			}
		}
	}
	reached := map[string]bool{}
	for todo := []string{head}; len(todo) > 0; {
		name := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if reached[name] {
			continue
		}
		reached[name] = true
		todo = append(todo, nodes[name].edges...)
	}
	for name := range nodes {
		if !reached[name] {
			errs = append(errs, fmt.Errorf("update graph: %s is dangling: the channel head %s does not replace or skip it, directly or through others", name, head))
		}
	}
	return errs
}

// upgradeEdges lists the bundles csv replaces or skips.
func upgradeEdges(csv *v1alpha1.ClusterServiceVersion) []string {
	edges := append([]string(nil), csv.Spec.Skips...)
	if csv.Spec.Replaces != "" {
		edges = append(edges, csv.Spec.Replaces)
	}
	return edges
}

// KubeVersions checks spec.minKubeVersion is a semver version and, when the
// bundle targets OpenShift (the com.redhat.openshift.versions annotation),
// at most the Kubernetes version of the oldest OpenShift it targets
// (OpenShift 4.N ships Kubernetes 1.N+13): otherwise that OpenShift could
// not install it. Without the annotation it says so in note and passes.
func KubeVersions(csv *v1alpha1.ClusterServiceVersion, annotations map[string]string) (note string, errs []error) {
	minKube, err := semver.ParseTolerant(csv.Spec.MinKubeVersion)
	if csv.Spec.MinKubeVersion == "" || err != nil {
		return "", []error{fmt.Errorf("CSV minKubeVersion %q is not a version", csv.Spec.MinKubeVersion)}
	}
	value, ok := annotations[OpenShiftVersionsAnnotation]
	if !ok {
		return fmt.Sprintf("no %s annotation (the bundle does not target OpenShift): minKubeVersion %s has nothing to agree with", OpenShiftVersionsAnnotation, minKube), nil
	}
	oldest, err := oldestOpenShift(value)
	if err != nil {
		return "", []error{fmt.Errorf("annotation %s: %w", OpenShiftVersionsAnnotation, err)}
	}
	kube := semver.Version{Major: 1, Minor: oldest.Minor + 13}
	if oldest.Major != 4 {
		return "", []error{fmt.Errorf("annotation %s=%q: only OpenShift 4 versions are known", OpenShiftVersionsAnnotation, value)}
	}
	if minKube.GT(kube) {
		return "", []error{fmt.Errorf("minKubeVersion %s is above Kubernetes %d.%d of OpenShift %d.%d, the oldest %s=%q targets",
			minKube, kube.Major, kube.Minor, oldest.Major, oldest.Minor, OpenShiftVersionsAnnotation, value)}
	}
	return "", nil
}

// oldestOpenShift parses an OpenShift versions annotation ("v4.17",
// "v4.17-v4.20", "=v4.17", "v4.17,v4.18") and returns its oldest version.
func oldestOpenShift(value string) (semver.Version, error) {
	var oldest semver.Version
	found := false
	for _, part := range strings.Split(strings.TrimPrefix(strings.TrimSpace(value), "="), ",") {
		first, _, _ := strings.Cut(strings.TrimSpace(part), "-")
		major, minor, ok := strings.Cut(strings.TrimPrefix(first, "v"), ".")
		maj, err1 := strconv.ParseUint(major, 10, 64)
		min, err2 := strconv.ParseUint(minor, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return oldest, fmt.Errorf("%q is not a version like v4.17, v4.17-v4.20 or v4.17,v4.18", value)
		}
		v := semver.Version{Major: maj, Minor: min}
		if !found || v.LT(oldest) {
			oldest, found = v, true
		}
	}
	return oldest, nil
}
