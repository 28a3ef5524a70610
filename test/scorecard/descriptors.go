package scorecard

import (
	"fmt"
	"regexp"
	"strings"

	apimanifests "github.com/operator-framework/api/pkg/manifests"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// CheckDescriptorsInSchema checks that every spec and status descriptor of
// every CRD the CSV owns names a field that exists in the bundle's CRD, in
// the described version's openAPIV3Schema: a console renders a descriptor
// whose path is not in the schema as a form field that writes nothing (spec)
// or shows nothing (status). The built-in olm-spec-descriptors test only
// checks the reverse (the example's fields have descriptors).
func CheckDescriptorsInSchema(bundle *apimanifests.Bundle) (errs, log []string) {
	crds := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, crd := range bundle.V1CRDs {
		crds[crd.Name] = crd
	}
	owned := bundle.CSV.Spec.CustomResourceDefinitions.Owned
	if len(owned) == 0 {
		return []string{"the CSV owns no CRD"}, nil
	}
	for _, desc := range owned {
		label := fmt.Sprintf("%s %s", desc.Name, desc.Version)
		crd, ok := crds[desc.Name]
		if !ok {
			errs = append(errs, fmt.Sprintf("%s: the CSV owns it but the bundle has no such CRD", label))
			continue
		}
		root := versionSchema(crd, desc.Version)
		if root == nil {
			errs = append(errs, fmt.Sprintf("%s: the CRD has no such version with an openAPIV3Schema", label))
			continue
		}
		checkDescriptors := func(section string, paths []string) {
			for _, p := range paths {
				if err := lookup(root, section, p); err != nil {
					errs = append(errs, fmt.Sprintf("%s: %s descriptor %q: %v", label, section, p, err))
				}
			}
			log = append(log, fmt.Sprintf("%s: %d %s descriptors checked against the schema", label, len(paths), section))
		}
		checkDescriptors("spec", specPaths(desc.SpecDescriptors))
		checkDescriptors("status", statusPaths(desc.StatusDescriptors))
	}
	return errs, log
}

func specPaths(ds []operatorsv1alpha1.SpecDescriptor) []string {
	paths := make([]string, len(ds))
	for i, d := range ds {
		paths[i] = d.Path
	}
	return paths
}

func statusPaths(ds []operatorsv1alpha1.StatusDescriptor) []string {
	paths := make([]string, len(ds))
	for i, d := range ds {
		paths[i] = d.Path
	}
	return paths
}

// versionSchema returns the openAPIV3Schema of the named version, or nil.
func versionSchema(crd *apiextensionsv1.CustomResourceDefinition, version string) *apiextensionsv1.JSONSchemaProps {
	for _, v := range crd.Spec.Versions {
		if v.Name == version && v.Schema != nil {
			return v.Schema.OpenAPIV3Schema
		}
	}
	return nil
}

// segment is one step of a descriptor path: a field name with optional
// array indexes, e.g. "containers[0]".
var segment = regexp.MustCompile(`^([^.\[\]]+)((?:\[[0-9]+\])*)$`)

// lookup walks a descriptor path (dot-separated fields, "[N]" for an array
// element, as OLM's console reads it) under root.properties[section]. Map
// values (additionalProperties) accept any key; a subtree that preserves
// unknown fields accepts anything below it. It returns nil when the path
// exists, else an error naming the first step that does not.
func lookup(root *apiextensionsv1.JSONSchemaProps, section, path string) error {
	s, ok := root.Properties[section]
	if !ok {
		return fmt.Errorf("the schema has no .%s", section)
	}
	node := &s
	if path == "" {
		return fmt.Errorf("empty path")
	}
	walked := section
	for _, step := range strings.Split(path, ".") {
		m := segment.FindStringSubmatch(step)
		if m == nil {
			return fmt.Errorf("%q is not a field name with optional [index]", step)
		}
		switch next, ok := node.Properties[m[1]]; {
		case ok:
			node = &next
		case node.AdditionalProperties != nil && node.AdditionalProperties.Schema != nil:
			node = node.AdditionalProperties.Schema
		case ptrTrue(node.XPreserveUnknownFields):
			return nil // anything goes below
		default:
			return fmt.Errorf("%s has no field %q", walked, m[1])
		}
		walked += "." + m[1]
		for _, idx := range strings.SplitAfter(m[2], "]") {
			if idx == "" {
				continue
			}
			if node.Type != "array" || node.Items == nil || node.Items.Schema == nil {
				return fmt.Errorf("%s is not an array, so %s does not apply", walked, idx)
			}
			node = node.Items.Schema
			walked += idx
		}
	}
	return nil
}

func ptrTrue(b *bool) bool { return b != nil && *b }
