// Package crdsafety checks that a CustomResourceDefinition can replace an
// older one without breaking the objects stored under it, with the checks of
// sigs.k8s.io/crdify configured as OLM v1 (operator-controller v1.11.0,
// internal/operator-controller/rukpak/preflights/crdupgradesafety) configures
// its upgrade preflight: what fails here, OLM v1 refuses to install.
package crdsafety

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/crdify/pkg/config"
	"sigs.k8s.io/crdify/pkg/runner"
	"sigs.k8s.io/crdify/pkg/validations/property"
	"sigs.k8s.io/crdify/pkg/validators/version"
)

// Finding is one unsafe change between two versions of a CRD.
type Finding struct {
	// CRD is the CRD's name (plural.group).
	CRD string
	// Version is the CRD version compared ("v1beta1", or "v1beta1 -> v1" across
	// served versions); empty for a check of the whole CRD.
	Version string
	// Property is the JSON path of the schema property (e.g. "^.spec.paused");
	// empty for a check of the whole CRD.
	Property string
	// Check is crdify's name for the check: existingFieldRemoval, enum,
	// required, default, scope, storedVersionRemoval, unhandled, ...; or
	// crdRemoval (CompareBundles: a CRD the new bundle no longer ships).
	Check string
	// Message is crdify's message.
	Message string
}

// String renders the finding as "<crd>: <version>: <property>: <check>:
// <message>" ("<crd>: <check>: <message>" for the whole CRD); after the CRD's
// name, that is how OLM v1 reports it in a ClusterExtension's status.
func (f Finding) String() string {
	if f.Property == "" {
		return fmt.Sprintf("%s: %s: %s", f.CRD, f.Check, f.Message)
	}
	return fmt.Sprintf("%s: %s: %s: %s: %s", f.CRD, f.Version, f.Property, f.Check, f.Message)
}

// olmV1Config is operator-controller v1.11.0's crdupgradesafety defaultConfig:
// every crdify check enforced as an error except description changes, new
// enum values allowed, unhandled changes errors, served-version checks
// skipped when the CRD has a conversion webhook.
func olmV1Config() *config.Config {
	return &config.Config{
		Conversion:           config.ConversionPolicyIgnore,
		UnhandledEnforcement: config.EnforcementPolicyError,
		Validations: []config.ValidationConfig{
			{Name: "description", Enforcement: config.EnforcementPolicyNone},
			{
				Name:          "enum",
				Enforcement:   config.EnforcementPolicyError,
				Configuration: map[string]interface{}{"additionPolicy": property.AdditionPolicyAllow},
			},
		},
	}
}

// Check compares newCRD with oldCRD, the one a cluster has installed, and
// returns every change OLM v1's preflight would refuse (crdify errors; its
// warnings do not block OLM v1 and are left out), whole-CRD findings first,
// then by version and property. No finding means the upgrade is safe. The
// CRDs must have the same name; neither is modified. When oldCRD carries no
// status.storedVersions (a CRD read from a bundle, not a cluster), its
// storage version is taken as the stored one, as a cluster that installed it
// would record. It fails if the names differ or crdify cannot be configured.
func Check(oldCRD, newCRD *apiextensionsv1.CustomResourceDefinition) ([]Finding, error) {
	if oldCRD.Name != newCRD.Name {
		return nil, fmt.Errorf("comparing CRD %q with CRD %q: not the same CRD", oldCRD.Name, newCRD.Name)
	}
	r, err := runner.New(olmV1Config(), runner.DefaultRegistry())
	if err != nil {
		return nil, fmt.Errorf("configuring crdify: %w", err)
	}
	installed := oldCRD.DeepCopy()
	if len(installed.Status.StoredVersions) == 0 {
		for _, v := range installed.Spec.Versions {
			if v.Storage {
				installed.Status.StoredVersions = append(installed.Status.StoredVersions, v.Name)
			}
		}
	}
	results := r.Run(installed, newCRD)
	var out []Finding
	for _, res := range results.CRDValidation {
		for _, msg := range res.Errors {
			out = append(out, Finding{CRD: newCRD.Name, Check: res.Name, Message: msg})
		}
	}
	for _, versions := range [][]version.VersionedPropertyComparisonResult{results.SameVersionValidation, results.ServedVersionValidation} {
		for _, v := range versions {
			for _, p := range v.PropertyComparisons {
				for _, res := range p.ComparisonResults {
					for _, msg := range res.Errors {
						out = append(out, Finding{
							CRD: newCRD.Name, Version: v.Version, Property: p.Property,
							Check: res.Name, Message: concise(res.Name, msg),
						})
					}
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b Finding) int {
		return strings.Compare(a.Version+"\x00"+a.Property+"\x00"+a.Check+"\x00"+a.Message,
			b.Version+"\x00"+b.Property+"\x00"+b.Check+"\x00"+b.Message)
	})
	return out, nil
}

// CompareBundles checks every CRD of newCRDs against the CRD of the same
// name in oldCRDs (the CRDs of the release it upgrades) with Check, and adds
// a crdRemoval finding for each CRD of oldCRDs that newCRDs no longer ships
// (upgrading would leave its objects without their API). It also returns the
// names of the CRDs of newCRDs that oldCRDs did not have: they have nothing
// to be compared with, and are safe. It fails as Check does.
func CompareBundles(oldCRDs, newCRDs []*apiextensionsv1.CustomResourceDefinition) (findings []Finding, added []string, err error) {
	byName := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, c := range oldCRDs {
		byName[c.Name] = c
	}
	shipped := map[string]bool{}
	for _, c := range newCRDs {
		shipped[c.Name] = true
		old, ok := byName[c.Name]
		if !ok {
			added = append(added, c.Name)
			continue
		}
		f, err := Check(old, c)
		if err != nil {
			return nil, nil, err
		}
		findings = append(findings, f...)
	}
	for _, c := range oldCRDs {
		if !shipped[c.Name] {
			findings = append(findings, Finding{CRD: c.Name, Check: "crdRemoval",
				Message: "the CRD is no longer in the bundle: objects stored under it would lose their API"})
		}
	}
	return findings, added, nil
}

// concise shortens crdify's "unhandled" message, a diff of Go structs, to
// its first line and the schema fields that changed ("unhandled changes
// found (x-kubernetes-validations)"); OLM v1 trims it too. Other messages
// are returned as they are.
func concise(check, msg string) string {
	if check != "unhandled" {
		return msg
	}
	// go-cmp's diff sometimes uses no-break spaces, so that nobody parses it.
	lines := strings.Split(strings.ReplaceAll(msg, "\u00a0", " "), "\n")
	var changed []string
	field := ""
	for _, l := range lines[1:] {
		if len(l) < 3 {
			continue
		}
		marker, body := l[:2], l[2:]
		// Fields of the diffed JSONSchemaProps are indented by one tab.
		if strings.HasPrefix(body, "\t") && !strings.HasPrefix(body, "\t\t") {
			if name, _, ok := strings.Cut(strings.TrimSpace(body), ":"); ok && !strings.HasPrefix(name, "...") {
				field = name
			}
		}
		if (marker == "+ " || marker == "- ") && field != "" && !slices.Contains(changed, jsonName(field)) {
			changed = append(changed, jsonName(field))
		}
	}
	summary := strings.TrimSuffix(strings.TrimSpace(lines[0]), " :")
	if len(changed) == 0 {
		return summary
	}
	return summary + " (" + strings.Join(changed, ", ") + ")"
}

// jsonName is the schema's name of a JSONSchemaProps Go field.
func jsonName(goField string) string {
	f, ok := reflect.TypeFor[apiextensionsv1.JSONSchemaProps]().FieldByName(goField)
	if !ok {
		return goField
	}
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}
