package docs_test

import (
	"sort"
	"strings"
	"testing"
)

// reasonConstants are the event reasons and condition reasons api/v1beta1
// declares: its string constants named Event... or Reason..., by value,
// each with the constant's name.
func reasonConstants(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for value, name := range stringConstants(t, "api/v1beta1") {
		if strings.HasPrefix(name, "Reason") || strings.HasPrefix(name, "Event") {
			out[value] = name
		}
	}
	if len(out) < 20 {
		t.Fatalf("read only %d reasons from api/v1beta1 (%v): has the way they are declared changed?", len(out), out)
	}
	return out
}

// TestEveryReasonIsDocumented: every event reason and condition reason in
// api/v1beta1 appears in docs/ as code (`Reason`), so the tables users read
// (docs/operations.md) cannot fall behind the API.
func TestEveryReasonIsDocumented(t *testing.T) {
	documented := map[string]bool{}
	for _, d := range docs(t) {
		if !strings.HasPrefix(d.path, "docs/") {
			continue
		}
		for _, c := range d.code {
			documented[c] = true
		}
	}
	var missing []string
	for value, name := range reasonConstants(t) {
		if !documented[value] {
			missing = append(missing, "`"+value+"` ("+name+")")
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("api/v1beta1's reason %s appears nowhere in docs/ as code: add it to the tables of docs/operations.md", m)
	}
}
