package crdsafety

import (
	"errors"
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

// AcceptedBreak is an unsafe CRD change a release makes on purpose, recorded
// in catalog/crd-upgrade-breaks.yaml with the reason its users are given.
type AcceptedBreak struct {
	// Version is the bundle version that makes the change; the entry accepts
	// nothing in any other version.
	Version string `json:"version"`
	// CRD is the CRD's name (plural.group).
	CRD string `json:"crd"`
	// Check is crdify's check name, as a finding reports it.
	Check string `json:"check"`
	// Property is the property's path as a finding reports it (e.g.
	// "^.spec.paused"); empty accepts the check on every property.
	Property string `json:"property,omitempty"`
	// Reason says why the break is acceptable and what users must do.
	Reason string `json:"reason"`
}

// String names the entry for messages.
func (a AcceptedBreak) String() string {
	s := fmt.Sprintf("%s %s %s", a.Version, a.CRD, a.Check)
	if a.Property != "" {
		s += " " + a.Property
	}
	return s
}

// accepts reports whether the entry accepts finding f made by version.
func (a AcceptedBreak) accepts(version string, f Finding) bool {
	return a.Version == version && a.CRD == f.CRD && a.Check == f.Check &&
		(a.Property == "" || a.Property == f.Property)
}

// LoadAccepted reads the list of accepted breaks from path (a YAML list of
// AcceptedBreak). A missing file means none. It fails on a file that does
// not parse, an unknown field, or an entry without version, crd, check or
// reason.
func LoadAccepted(path string) ([]AcceptedBreak, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("reading accepted CRD breaks: %w", err)
	}
	var out []AcceptedBreak
	if err := yaml.UnmarshalStrict(data, &out); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", path, err)
	}
	for i, a := range out {
		if a.Version == "" || a.CRD == "" || a.Check == "" || a.Reason == "" {
			return nil, fmt.Errorf("%s: entry %d (%s) needs version, crd, check and reason", path, i+1, a)
		}
	}
	return out, nil
}

// Triage splits the findings of the bundle at version into those an entry
// of accepted accepts and the unsafe rest, and lists the entries for version
// that accept no finding (stale: the break they describe is not made).
func Triage(version string, findings []Finding, accepted []AcceptedBreak) (unsafe, allowed []Finding, unused []AcceptedBreak) {
	used := make([]bool, len(accepted))
	for _, f := range findings {
		ok := false
		for i, a := range accepted {
			if a.accepts(version, f) {
				ok, used[i] = true, true
			}
		}
		if ok {
			allowed = append(allowed, f)
		} else {
			unsafe = append(unsafe, f)
		}
	}
	for i, a := range accepted {
		if a.Version == version && !used[i] {
			unused = append(unused, a)
		}
	}
	return unsafe, allowed, unused
}
