// Command crdpatch finishes the MyDeployment CRD that controller-gen writes,
// with what markers cannot say about types that come from k8s.io/api:
//
//   - bounds on spec.selector.matchLabels and spec.template.metadata.labels
//     (maxProperties, value maxLength) and on spec.selector.matchExpressions
//     (items, key and value lengths, values per item), without which
//     kube-apiserver refuses the CEL rules that check the selector matches the
//     template labels ("estimated rule cost exceeds budget");
//   - the strategy type's allowed values (Recreate, RollingUpdate);
//   - Deployment's nested strategy defaults (type RollingUpdate; maxSurge and
//     maxUnavailable 25% when rollingUpdate is given). A rollingUpdate block is
//     never defaulted into existence: a schema default cannot depend on the
//     type, and one stored for a RollingUpdate would have to be removed by
//     whoever changes the type to Recreate (kubectl apply does not);
//   - no descriptions under spec.template.spec (the PodSpec: `kubectl explain
//     pod.spec` has them), so the CRD stays small enough to apply; the schema
//     itself is untouched.
//
// The Application CRD has the same spec's fields under spec.deployment
// (ApplicationDeploymentSpec) and gets the same patches there, and three
// more, because the Application defaults the selector itself
// (app.kubernetes.io/name: <name>), makes the template from image and port
// in its five-line form, and passes replicas through only when set:
//
//   - spec.deployment.selector and template are not required;
//   - the CEL rules that read the selector or the template hold only when it
//     is given;
//   - spec.deployment.replicas has no default (left out, the MyDeployment's
//     replicas belong to whoever scales it);
//   - no descriptions under spec.route's HTTPRoute fields (`kubectl explain
//     httproute.spec` has them), which would double the CRD's size.
//
// Usage: go run ./hack/crdpatch FILE... (rewrites each FILE in place;
// idempotent).
package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"sigs.k8s.io/yaml"
)

const (
	maxLabels           = 64  // label count bound for the CEL cost estimate
	maxLabelValueBytes  = 63  // a label value's limit in Kubernetes
	maxLabelKeyBytes    = 317 // a label key's limit: a 253-byte DNS prefix, "/", a 63-byte name
	maxExpressions      = 64  // matchExpressions bound for the CEL cost estimate
	maxExpressionValues = 256 // values of one matchExpressions item, likewise
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: crdpatch CRD.yaml...")
		os.Exit(2)
	}
	for _, path := range os.Args[1:] {
		if err := patchFile(path); err != nil {
			fmt.Fprintln(os.Stderr, "crdpatch:", err)
			os.Exit(1)
		}
	}
}

type object = map[string]any

func patchFile(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var crd object
	if err := yaml.Unmarshal(bytes.TrimPrefix(raw, []byte("---\n")), &crd); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	versions, _ := get(crd, "spec", "versions").([]any)
	if len(versions) == 0 {
		return fmt.Errorf("%s: no versions", path)
	}
	kind, _ := get(crd, "spec", "names", "kind").(string)
	for _, v := range versions {
		spec, ok := get(v, "schema", "openAPIV3Schema", "properties", "spec").(object)
		if !ok {
			return fmt.Errorf("%s: a version has no spec schema", path)
		}
		switch kind {
		case "MyDeployment":
			err = patchSpec(spec)
		case "Application":
			err = patchApplicationSpec(spec)
		default:
			err = fmt.Errorf("unknown kind %q", kind)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	out, err := yaml.Marshal(crd)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte("---\n"), out...), 0o644)
}

func patchSpec(spec object) error {
	for _, p := range [][]string{{"selector", "matchLabels"}, {"template", "metadata", "labels"}} {
		m, err := field(spec, p...)
		if err != nil {
			return err
		}
		values, ok := m["additionalProperties"].(object)
		if !ok {
			return fmt.Errorf("%v is not a string map", p)
		}
		m["maxProperties"] = maxLabels
		values["maxLength"] = maxLabelValueBytes
	}

	expressions, err := field(spec, "selector", "matchExpressions")
	if err != nil {
		return err
	}
	expressions["maxItems"] = maxExpressions
	key, err := field(expressions["items"].(object), "key")
	if err != nil {
		return err
	}
	key["maxLength"] = maxLabelKeyBytes
	values, err := field(expressions["items"].(object), "values")
	if err != nil {
		return err
	}
	values["maxItems"] = maxExpressionValues
	values["items"].(object)["maxLength"] = maxLabelValueBytes

	strategyType, err := field(spec, "strategy", "type")
	if err != nil {
		return err
	}
	strategyType["enum"] = []any{"Recreate", "RollingUpdate"}

	defaults := []struct {
		path  []string
		value any
	}{
		{[]string{"strategy", "type"}, "RollingUpdate"},
		{[]string{"strategy", "rollingUpdate", "maxSurge"}, "25%"},
		{[]string{"strategy", "rollingUpdate", "maxUnavailable"}, "25%"},
	}
	for _, d := range defaults {
		f, err := field(spec, d.path...)
		if err != nil {
			return err
		}
		f["default"] = d.value
	}

	podSpec, err := field(spec, "template", "spec")
	if err != nil {
		return err
	}
	dropDescriptions(podSpec)
	return nil
}

// patchApplicationSpec patches the MyDeployment spec's fields under
// spec.deployment, then lets its selector and template be left out.
func patchApplicationSpec(spec object) error {
	deployment, err := field(spec, "deployment")
	if err != nil {
		return err
	}
	if err := patchSpec(deployment); err != nil {
		return fmt.Errorf("spec.deployment: %w", err)
	}
	required, _ := deployment["required"].([]any)
	var kept []any
	for _, r := range required {
		if r != "selector" && r != "template" {
			kept = append(kept, r)
		}
	}
	if len(kept) > 0 {
		deployment["required"] = kept
	} else {
		delete(deployment, "required")
	}
	rules, _ := deployment["x-kubernetes-validations"].([]any)
	for _, r := range rules {
		rule, ok := r.(object)
		if !ok {
			return fmt.Errorf("spec.deployment: a validation rule is not an object")
		}
		text, _ := rule["rule"].(string)
		for _, f := range []string{"selector", "template"} {
			if guard := "!has(self." + f + ") || "; strings.Contains(text, "self."+f+".") && !strings.Contains(text, guard) {
				text = guard + "(" + text + ")"
			}
		}
		rule["rule"] = text
	}
	replicas, err := field(deployment, "replicas")
	if err != nil {
		return err
	}
	delete(replicas, "default")

	route, err := field(spec, "route")
	if err != nil {
		return err
	}
	for name, p := range route["properties"].(object) {
		if c, ok := p.(object); ok && name != "metadata" {
			dropDescriptions(c)
		}
	}
	return nil
}

// field walks schema properties by name; it fails if one is missing, so a
// change in the generated CRD cannot silently skip a patch.
func field(s object, path ...string) (object, error) {
	for i, name := range path {
		next, ok := get(s, "properties", name).(object)
		if !ok {
			return nil, fmt.Errorf("schema has no property %v", path[:i+1])
		}
		s = next
	}
	return s, nil
}

func get(v any, path ...string) any {
	for _, k := range path {
		m, ok := v.(object)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// dropDescriptions removes every description in a schema subtree; it leaves
// the validation (types, formats, required, enums) exactly as it was.
func dropDescriptions(schema object) {
	delete(schema, "description")
	if props, ok := schema["properties"].(object); ok {
		for _, p := range props {
			if c, ok := p.(object); ok {
				dropDescriptions(c)
			}
		}
	}
	for _, k := range []string{"items", "additionalProperties", "not"} {
		if c, ok := schema[k].(object); ok {
			dropDescriptions(c)
		}
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		list, _ := schema[k].([]any)
		for _, item := range list {
			if c, ok := item.(object); ok {
				dropDescriptions(c)
			}
		}
	}
}
