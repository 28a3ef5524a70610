package operatorhub

import (
	"testing"

	"github.com/blang/semver/v4"

	"github.com/mydeployment-io/mydeployment-operator/test/olm/releases"
)

// TestEdges: each version replaces the newest release below it and skips
// from the first release, so 0.1.0 upgrades to 0.3.0 in one step (the
// skipRange OLM v0 and v1 both read) and through 0.2.0 (replaces).
func TestEdges(t *testing.T) {
	released := []releases.Bundle{
		{Name: "p.v0.1.0", Version: semver.MustParse("0.1.0")},
		{Name: "p.v0.2.0", Version: semver.MustParse("0.2.0")},
	}
	for _, c := range []struct {
		version, replaces, skipRange string
		from, notFrom                []string // versions the skipRange holds, and does not
	}{
		{version: "0.1.0"}, // the first release replaces nothing
		{version: "0.2.0", replaces: "p.v0.1.0", skipRange: ">=0.1.0 <0.2.0", from: []string{"0.1.0"}, notFrom: []string{"0.2.0"}},
		{version: "0.3.0", replaces: "p.v0.2.0", skipRange: ">=0.1.0 <0.3.0", from: []string{"0.1.0", "0.2.0"}, notFrom: []string{"0.3.0", "0.0.9"}},
		{version: "1.0.0", replaces: "p.v0.2.0", skipRange: ">=0.1.0 <1.0.0", from: []string{"0.1.0", "0.2.0", "0.9.9"}},
	} {
		replaces, skipRange := Edges(released, semver.MustParse(c.version))
		if replaces != c.replaces || skipRange != c.skipRange {
			t.Errorf("%s: replaces %q skipRange %q, want %q %q", c.version, replaces, skipRange, c.replaces, c.skipRange)
		}
		if skipRange == "" {
			continue
		}
		// Parsed as both OLMs parse a skipRange (blang/semver ranges).
		in, err := semver.ParseRange(skipRange)
		if err != nil {
			t.Fatalf("%s: skipRange %q: %v", c.version, skipRange, err)
		}
		for _, v := range c.from {
			if !in(semver.MustParse(v)) {
				t.Errorf("%s: skipRange %q leaves out %s", c.version, skipRange, v)
			}
		}
		for _, v := range c.notFrom {
			if in(semver.MustParse(v)) {
				t.Errorf("%s: skipRange %q holds %s", c.version, skipRange, v)
			}
		}
	}
}
