package crdsafety

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/mydeployment-io/mydeployment-operator/test/olm/releases"
)

const mydeployments = "mydeployments.apps.mydeployment.io"

// releasedCRD is the MyDeployment CRD of the first release in
// catalog/releases: real input for the changes below.
func releasedCRD(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	bundles, err := releases.Load(filepath.Join("..", "..", "..", "catalog", "releases"))
	if err != nil {
		t.Fatal(err)
	}
	if len(bundles) == 0 {
		t.Fatal("catalog/releases holds no bundle")
	}
	crds, err := bundles[0].CRDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range crds {
		if c.Name == mydeployments {
			return c
		}
	}
	t.Fatalf("%s has no CRD %s", bundles[0].Name, mydeployments)
	return nil
}

// editSchema applies fn to the schema property at path (e.g. "spec",
// "strategy") of every version of crd.
func editSchema(crd *apiextensionsv1.CustomResourceDefinition, fn func(*apiextensionsv1.JSONSchemaProps), path ...string) {
	var walk func(p *apiextensionsv1.JSONSchemaProps, rest []string)
	walk = func(p *apiextensionsv1.JSONSchemaProps, rest []string) {
		if len(rest) == 0 {
			fn(p)
			return
		}
		child := p.Properties[rest[0]]
		walk(&child, rest[1:])
		p.Properties[rest[0]] = child
	}
	for i := range crd.Spec.Versions {
		walk(crd.Spec.Versions[i].Schema.OpenAPIV3Schema, path)
	}
}

// TestCheck feeds the released MyDeployment CRD and changed copies of it to
// Check: unsafe changes are found with crdify's message, safe ones are not.
func TestCheck(t *testing.T) {
	cases := []struct {
		name   string
		change func(*apiextensionsv1.CustomResourceDefinition)
		want   []string // each a substring of one finding, in order; none: safe
	}{
		{name: "unchanged", change: func(*apiextensionsv1.CustomResourceDefinition) {}},
		{
			name: "description changed (OLM v1 does not enforce descriptions)",
			change: func(c *apiextensionsv1.CustomResourceDefinition) {
				editSchema(c, func(p *apiextensionsv1.JSONSchemaProps) { p.Description = "changed" }, "spec", "paused")
			},
		},
		{
			name: "enum value added (allowed)",
			change: func(c *apiextensionsv1.CustomResourceDefinition) {
				editSchema(c, func(p *apiextensionsv1.JSONSchemaProps) {
					p.Enum = append(p.Enum, apiextensionsv1.JSON{Raw: []byte(`"BlueGreen"`)})
				}, "spec", "strategy", "type")
			},
		},
		{
			name: "field removed",
			change: func(c *apiextensionsv1.CustomResourceDefinition) {
				editSchema(c, func(p *apiextensionsv1.JSONSchemaProps) { delete(p.Properties, "paused") }, "spec")
			},
			want: []string{
				mydeployments + ": existingFieldRemoval: removed field : v1beta1.^.spec.paused",
				mydeployments + `: v1beta1: ^.spec.paused: type: type changed : "boolean" -> ""`,
			},
		},
		{
			name: "enum tightened",
			change: func(c *apiextensionsv1.CustomResourceDefinition) {
				editSchema(c, func(p *apiextensionsv1.JSONSchemaProps) {
					p.Enum = []apiextensionsv1.JSON{{Raw: []byte(`"RollingUpdate"`)}}
				}, "spec", "strategy", "type")
			},
			want: []string{mydeployments + `: v1beta1: ^.spec.strategy.type: enum: allowed enum values removed : ["Recreate"]`},
		},
		{
			name: "new required field",
			change: func(c *apiextensionsv1.CustomResourceDefinition) {
				editSchema(c, func(p *apiextensionsv1.JSONSchemaProps) { p.Required = append(p.Required, "replicas") }, "spec")
			},
			want: []string{mydeployments + ": v1beta1: ^.spec: required: new required fields: [replicas]"},
		},
		{
			name: "validation rule changed",
			change: func(c *apiextensionsv1.CustomResourceDefinition) {
				editSchema(c, func(p *apiextensionsv1.JSONSchemaProps) {
					p.XValidations = append(p.XValidations, apiextensionsv1.ValidationRule{Rule: "self.replicas < 10", Message: "too many"})
				}, "spec")
			},
			want: []string{mydeployments + ": v1beta1: ^.spec: unhandled: unhandled changes found (x-kubernetes-validations)"},
		},
		{
			name: "scope changed",
			change: func(c *apiextensionsv1.CustomResourceDefinition) {
				c.Spec.Scope = apiextensionsv1.ClusterScoped
			},
			want: []string{mydeployments + ": scope: "},
		},
	}
	old := releasedCRD(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			changed := old.DeepCopy()
			tc.change(changed)
			findings, err := Check(old, changed)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range findings {
				got = append(got, f.String())
			}
			if len(got) != len(tc.want) {
				t.Fatalf("findings:\n%s\nwant %d, each containing %q", strings.Join(got, "\n"), len(tc.want), tc.want)
			}
			for i := range got {
				if !strings.Contains(got[i], tc.want[i]) {
					t.Errorf("finding %d: %q, want it to contain %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// TestCompareBundles checks a CRD new in the bundle is listed as added and
// passes, and a CRD the bundle no longer ships is a finding.
func TestCompareBundles(t *testing.T) {
	old := releasedCRD(t)
	added := &apiextensionsv1.CustomResourceDefinition{}
	added.Name = "applications.apps.mydeployment.io"
	findings, newCRDs, err := CompareBundles([]*apiextensionsv1.CustomResourceDefinition{old}, []*apiextensionsv1.CustomResourceDefinition{old.DeepCopy(), added})
	if err != nil || len(findings) != 0 || len(newCRDs) != 1 || newCRDs[0] != added.Name {
		t.Errorf("a CRD added: findings %v, added %v, err %v; want no finding and %s added", findings, newCRDs, err, added.Name)
	}
	findings, _, err = CompareBundles([]*apiextensionsv1.CustomResourceDefinition{old}, []*apiextensionsv1.CustomResourceDefinition{added})
	want := mydeployments + ": crdRemoval: the CRD is no longer in the bundle"
	if err != nil || len(findings) != 1 || !strings.HasPrefix(findings[0].String(), want) {
		t.Errorf("a CRD removed: findings %v, err %v; want one starting %q", findings, err, want)
	}
}

// TestTriage checks an accepted break lets exactly its finding through, in
// its version only, and that an entry matching nothing is reported.
func TestTriage(t *testing.T) {
	removed := Finding{CRD: mydeployments, Version: "v1beta1", Property: "^.spec.paused", Check: "existingFieldRemoval", Message: "may not be removed"}
	required := Finding{CRD: mydeployments, Version: "v1beta1", Property: "^.spec", Check: "required", Message: "new required fields"}
	accept := AcceptedBreak{Version: "0.3.0", CRD: mydeployments, Check: "existingFieldRemoval", Property: "^.spec.paused", Reason: "r"}
	cases := []struct {
		name           string
		version        string
		accepted       []AcceptedBreak
		unsafe, unused int
	}{
		{name: "nothing accepted", version: "0.3.0", unsafe: 2},
		{name: "removal accepted in its version", version: "0.3.0", accepted: []AcceptedBreak{accept}, unsafe: 1},
		{name: "accepted for another version", version: "0.4.0", accepted: []AcceptedBreak{accept}, unsafe: 2},
		{name: "any property of the check", version: "0.3.0", accepted: []AcceptedBreak{{Version: "0.3.0", CRD: mydeployments, Check: "required", Reason: "r"}}, unsafe: 1},
		{name: "stale entry", version: "0.3.0", accepted: []AcceptedBreak{accept, {Version: "0.3.0", CRD: mydeployments, Check: "enum", Reason: "r"}}, unsafe: 1, unused: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			unsafe, allowed, unused := Triage(tc.version, []Finding{removed, required}, tc.accepted)
			if len(unsafe) != tc.unsafe || len(unused) != tc.unused || len(unsafe)+len(allowed) != 2 {
				t.Errorf("unsafe %v, allowed %v, unused %v; want %d unsafe, %d unused", unsafe, allowed, unused, tc.unsafe, tc.unused)
			}
		})
	}
}

// TestLoadAccepted refuses an entry without a reason and reads a missing
// file as no entry.
func TestLoadAccepted(t *testing.T) {
	dir := t.TempDir()
	if got, err := LoadAccepted(filepath.Join(dir, "missing.yaml")); err != nil || got != nil {
		t.Errorf("missing file: %v, %v; want nothing", got, err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("- {version: 0.3.0, crd: x, check: enum}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadAccepted(bad); err == nil || !strings.Contains(err.Error(), "reason") {
		t.Errorf("entry without reason: err %v, want one naming the reason", err)
	}
}
