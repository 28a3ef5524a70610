// Package releases reads the released bundles recorded in catalog/releases:
// file-based catalog (FBC) olm.bundle blobs, as `make catalog-release` writes
// them, whose manifests travel inline as olm.bundle.object properties.
package releases

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Bundle is one released bundle: its FBC name (the CSV name), package,
// version and the manifests it carries.
type Bundle struct {
	Name    string
	Package string
	Version semver.Version
	// Objects are the bundle's manifests, each as the JSON the catalog holds.
	Objects []json.RawMessage
}

// fbcBlob is the part of an FBC blob this package reads.
type fbcBlob struct {
	Schema     string `json:"schema"`
	Name       string `json:"name"`
	Package    string `json:"package"`
	Properties []struct {
		Type  string          `json:"type"`
		Value json.RawMessage `json:"value"`
	} `json:"properties"`
}

// Load returns every olm.bundle of the *.yaml files in dir, oldest version
// first. A directory with no file gives an empty list, not an error. It fails
// on a file that does not parse, a bundle without an olm.package version, or
// an olm.bundle.object that is not base64 JSON.
func Load(dir string) ([]Bundle, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", dir, err)
	}
	var out []Bundle
	for _, f := range files {
		bundles, err := loadFile(f)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", f, err)
		}
		out = append(out, bundles...)
	}
	slices.SortFunc(out, func(a, b Bundle) int { return a.Version.Compare(b.Version) })
	return out, nil
}

func loadFile(path string) ([]Bundle, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []Bundle
	for {
		var blob fbcBlob
		if err := dec.Decode(&blob); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("decoding: %w", err)
		}
		if blob.Schema != "olm.bundle" {
			continue
		}
		b, err := fromBlob(blob)
		if err != nil {
			return nil, fmt.Errorf("bundle %s: %w", blob.Name, err)
		}
		out = append(out, b)
	}
}

func fromBlob(blob fbcBlob) (Bundle, error) {
	b := Bundle{Name: blob.Name, Package: blob.Package}
	versioned := false
	for _, p := range blob.Properties {
		switch p.Type {
		case "olm.package":
			var v struct {
				Version string `json:"version"`
			}
			if err := json.Unmarshal(p.Value, &v); err != nil {
				return b, fmt.Errorf("olm.package: %w", err)
			}
			ver, err := semver.Parse(v.Version)
			if err != nil {
				return b, fmt.Errorf("olm.package version: %w", err)
			}
			b.Version, versioned = ver, true
		case "olm.bundle.object":
			var v struct {
				Data string `json:"data"`
			}
			if err := json.Unmarshal(p.Value, &v); err != nil {
				return b, fmt.Errorf("olm.bundle.object: %w", err)
			}
			raw, err := base64.StdEncoding.DecodeString(v.Data)
			if err != nil {
				return b, fmt.Errorf("olm.bundle.object data: %w", err)
			}
			if !json.Valid(raw) {
				return b, errors.New("olm.bundle.object data is not JSON")
			}
			b.Objects = append(b.Objects, raw)
		}
	}
	if !versioned {
		return b, errors.New("no olm.package property with a version")
	}
	return b, nil
}

// Latest returns the newest of bundles whose version is below v, and false if
// there is none (v is the first release).
func Latest(bundles []Bundle, v semver.Version) (Bundle, bool) {
	var found Bundle
	ok := false
	for _, b := range bundles {
		if b.Version.LT(v) && (!ok || b.Version.GT(found.Version)) {
			found, ok = b, true
		}
	}
	return found, ok
}

// objectsOf decodes every object of the bundle whose apiVersion and kind
// are gvk's into a new T (JSON decoding: apiextensions' raw JSON fields such as
// enum and default keep their values).
func objectsOf[T any](b Bundle, apiVersion, kind string) ([]*T, error) {
	var out []*T
	for _, raw := range b.Objects {
		var meta metav1.TypeMeta
		if err := json.Unmarshal(raw, &meta); err != nil {
			return nil, fmt.Errorf("bundle %s: %w", b.Name, err)
		}
		if meta.APIVersion != apiVersion || meta.Kind != kind {
			continue
		}
		obj := new(T)
		if err := json.Unmarshal(raw, obj); err != nil {
			return nil, fmt.Errorf("bundle %s: %s: %w", b.Name, kind, err)
		}
		out = append(out, obj)
	}
	return out, nil
}

// CRDs returns the bundle's CustomResourceDefinitions (apiextensions.k8s.io/v1).
func (b Bundle) CRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	return objectsOf[apiextensionsv1.CustomResourceDefinition](b, apiextensionsv1.SchemeGroupVersion.String(), "CustomResourceDefinition")
}

// CSV returns the bundle's ClusterServiceVersion; it fails if there is none.
func (b Bundle) CSV() (*v1alpha1.ClusterServiceVersion, error) {
	csvs, err := objectsOf[v1alpha1.ClusterServiceVersion](b, v1alpha1.SchemeGroupVersion.String(), v1alpha1.ClusterServiceVersionKind)
	if err != nil {
		return nil, err
	}
	if len(csvs) == 0 {
		return nil, fmt.Errorf("bundle %s has no ClusterServiceVersion", b.Name)
	}
	return csvs[0], nil
}
