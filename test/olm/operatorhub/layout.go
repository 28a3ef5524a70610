package operatorhub

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/mydeployment-io/mydeployment-operator/test/olm/releases"
)

// UpdateGraphMode is the community-operators update graph mode of the package:
// each version's CSV names the one it replaces, as the channel entries of our
// own catalog do (hack/catalog.sh).
const UpdateGraphMode = "replaces-mode"

// PackageAnnotation is the bundle annotation naming the package.
const PackageAnnotation = "operators.operatorframework.io.bundle.package.v1"

// Options says where a submission is read from and written to.
type Options struct {
	// BundleDir holds the bundle: manifests/ and metadata/ (bundle/).
	BundleDir string
	// ReleasesDir holds the released bundles (catalog/releases).
	ReleasesDir string
	// OutDir receives operators/<package>/ (dist/operatorhub).
	OutDir string
}

// Submission describes a written submission.
type Submission struct {
	Package string
	Version string
	// PackageDir is OutDir/operators/<package>: ci.yaml and the version folder.
	PackageDir string
	// BundleDir is PackageDir/<version>: manifests/ and metadata/.
	BundleDir string
	// Replaces is the CSV the bundle replaces (the newest release below its
	// version), empty for a first release.
	Replaces string
}

// Write lays out the bundle as a community-operators pull request needs it:
// OutDir/operators/<package>/<version>/{manifests,metadata}, copied from
// o.BundleDir, and OutDir/operators/<package>/ci.yaml (updateGraph:
// replaces-mode). In replaces mode the pipeline builds the upgrade graph from
// the CSVs, so the copied CSV gets the edges hack/catalog.sh gives our
// catalog's channel entry: spec.replaces (the newest release below this
// version) and the olm.skipRange annotation (from the oldest release).
// Anything in OutDir/operators/<package> before is removed. It fails if the
// bundle, its annotations or the releases cannot be read, or on a write error.
func Write(o Options) (Submission, error) {
	annotations, err := readAnnotations(filepath.Join(o.BundleDir, "metadata", "annotations.yaml"))
	if err != nil {
		return Submission{}, err
	}
	csvPath, csv, err := findCSV(filepath.Join(o.BundleDir, "manifests"))
	if err != nil {
		return Submission{}, err
	}
	released, err := releases.Load(o.ReleasesDir)
	if err != nil {
		return Submission{}, fmt.Errorf("reading releases: %w", err)
	}
	s := Submission{Package: annotations[PackageAnnotation], Version: csv.Spec.Version.String()}
	if s.Package == "" {
		return s, fmt.Errorf("%s: no %s annotation", o.BundleDir, PackageAnnotation)
	}
	s.PackageDir = filepath.Join(o.OutDir, "operators", s.Package)
	s.BundleDir = filepath.Join(s.PackageDir, s.Version)
	var skipRange string
	s.Replaces, skipRange = Edges(released, csv.Spec.Version.Version)

	if err := os.RemoveAll(s.PackageDir); err != nil {
		return s, fmt.Errorf("clearing %s: %w", s.PackageDir, err)
	}
	for _, sub := range []string{"manifests", "metadata"} {
		if err := copyDir(filepath.Join(o.BundleDir, sub), filepath.Join(s.BundleDir, sub)); err != nil {
			return s, err
		}
	}
	copied := filepath.Join(s.BundleDir, "manifests", filepath.Base(csvPath))
	if err := setUpgradeEdges(copied, s.Replaces, skipRange); err != nil {
		return s, err
	}
	ci := fmt.Sprintf("# Written by make operatorhub: how the community pipeline builds %s's update graph.\nupdateGraph: %s\n", s.Package, UpdateGraphMode)
	if err := os.WriteFile(filepath.Join(s.PackageDir, "ci.yaml"), []byte(ci), 0o644); err != nil {
		return s, fmt.Errorf("writing ci.yaml: %w", err)
	}
	return s, nil
}

// Edges are the upgrade edges of version v in a package whose earlier
// releases are released (as releases.Load returns them, oldest first): the
// CSV name of the newest release below v, which v replaces, and a skipRange
// from the oldest release up to v, so every release can upgrade straight to
// v. OLM v0 (its resolver takes a bundle that replaces, skips or has a
// skipRange holding the installed version) and OLM v1 (operator-controller's
// successors: the same three) both read a skipRange; opm validate's graph
// check reads only replaces and skips, so the replaces chain is what keeps
// each release in the channel. hack/catalog.sh writes the same edges into
// our own catalog's channel. Both are empty when no release is below v.
func Edges(released []releases.Bundle, v semver.Version) (replaces, skipRange string) {
	prev, ok := releases.Latest(released, v)
	if !ok {
		return "", ""
	}
	return prev.Name, fmt.Sprintf(">=%s <%s", released[0].Version, v)
}

// readAnnotations returns the annotations of a bundle's metadata/annotations.yaml.
func readAnnotations(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading bundle annotations: %w", err)
	}
	var f struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", path, err)
	}
	return f.Annotations, nil
}

// findCSV returns the path and content of the one ClusterServiceVersion in
// dir; it fails if there is none or more than one.
func findCSV(dir string) (string, *v1alpha1.ClusterServiceVersion, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", nil, fmt.Errorf("reading %s: %w", dir, err)
	}
	var path string
	var csv *v1alpha1.ClusterServiceVersion
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		data, err := os.ReadFile(p)
		if err != nil {
			return "", nil, fmt.Errorf("reading %s: %w", p, err)
		}
		var meta struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal(data, &meta); err != nil || meta.Kind != v1alpha1.ClusterServiceVersionKind {
			continue
		}
		if csv != nil {
			return "", nil, fmt.Errorf("%s: more than one ClusterServiceVersion (%s, %s)", dir, filepath.Base(path), e.Name())
		}
		csv = &v1alpha1.ClusterServiceVersion{}
		if err := yaml.Unmarshal(data, csv); err != nil {
			return "", nil, fmt.Errorf("parsing %s: %w", p, err)
		}
		path = p
	}
	if csv == nil {
		return "", nil, fmt.Errorf("%s: no ClusterServiceVersion", dir)
	}
	return path, csv, nil
}

// setUpgradeEdges sets spec.replaces and the olm.skipRange annotation of the
// CSV file at path (neither, for a first release).
func setUpgradeEdges(path, replaces, skipRange string) error {
	if replaces == "" {
		return nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	var csv map[string]interface{}
	if err := yaml.Unmarshal(data, &csv); err != nil {
		return fmt.Errorf("parsing %s: %w", path, err)
	}
	spec, _ := csv["spec"].(map[string]interface{})
	meta, _ := csv["metadata"].(map[string]interface{})
	if spec == nil || meta == nil {
		return fmt.Errorf("%s: CSV without metadata or spec", path)
	}
	spec["replaces"] = replaces
	annotations, _ := meta["annotations"].(map[string]interface{})
	if annotations == nil {
		annotations = map[string]interface{}{}
		meta["annotations"] = annotations
	}
	annotations["olm.skipRange"] = skipRange
	out, err := yaml.Marshal(csv)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// copyDir copies the regular files of src (not its subdirectories) into dst.
func copyDir(src, dst string) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return fmt.Errorf("reading %s: %w", src, err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dst, err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			return fmt.Errorf("copying %s: %w", e.Name(), err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644); err != nil {
			return fmt.Errorf("copying %s: %w", e.Name(), err)
		}
	}
	return nil
}
