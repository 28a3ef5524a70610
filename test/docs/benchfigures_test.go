package docs_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// benchQuote is a figure of the benchmark's last full run
// (docs/benchmarks/results.json) that a page quotes in its prose: the
// phrase, with {} where each figure stands, and the results.json path of
// each, divided by div (60: seconds quoted as minutes), within tolerance.
type benchQuote struct {
	file, phrase string
	paths        []string
	div, within  float64
}

var benchQuotes = []benchQuote{
	{
		file: "docs/beyond-deployment.md",
		phrase: "{} writes a pod of every resource by Deployment's two controllers in the benchmark's last full run " +
			"({} of them to pods: the create and the delete), {} by everyone ({} to pods), against {} and {} for the in-place update",
		paths: []string{
			"in_place_update.writes_per_pod.deployment", "in_place_update.pod_writes_per_pod.deployment",
			"in_place_update.writes_per_pod.deployment_all", "in_place_update.pod_writes_per_pod.deployment_all",
			"in_place_update.writes_per_pod.mydeployment", "in_place_update.writes_per_pod.mydeployment_all",
		},
		div: 1, within: 0.005,
	},
	{
		file:   "docs/testing.md",
		phrase: "The full size runs 10,000 pods per party three times over ({} minutes in the last full run",
		paths:  []string{"run_s"}, div: 60, within: 1,
	},
	{
		file:   "docs/benchmarks/README.md",
		phrase: "3 rounds: {} minutes in the last run",
		paths:  []string{"run_s"}, div: 60, within: 1,
	},
}

// phraseRegexp matches phrase across line breaks, each {} a number.
func phraseRegexp(phrase string) *regexp.Regexp {
	parts := strings.Split(phrase, "{}")
	for i, p := range parts {
		parts[i] = strings.Join(strings.Fields(regexp.QuoteMeta(p)), `\s+`)
		if strings.HasPrefix(p, " ") {
			parts[i] = `\s+` + parts[i]
		}
		if strings.HasSuffix(p, " ") && strings.TrimSpace(p) != "" {
			parts[i] += `\s+`
		}
	}
	return regexp.MustCompile(strings.Join(parts, `(\d+(?:\.\d+)?)`))
}

// jsonPath reads a number at a dotted path of v.
func jsonPath(v any, path string) (float64, error) {
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return 0, fmt.Errorf("%s: %q is not under an object", path, k)
		}
		if v, ok = m[k]; !ok {
			return 0, fmt.Errorf("%s: no %q", path, k)
		}
	}
	f, ok := v.(float64)
	if !ok {
		return 0, fmt.Errorf("%s is %v, not a number", path, v)
	}
	return f, nil
}

// TestBenchmarkFiguresInTheDocs: the benchmark's figures the docs quote in
// their prose are the last full run's (docs/benchmarks/results.json, which
// `make bench` rewrites): a new run fails this test until the quotes are
// brought up to date.
func TestBenchmarkFiguresInTheDocs(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(root, "docs", "benchmarks", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var results any
	if err := json.Unmarshal(raw, &results); err != nil {
		t.Fatal(err)
	}
	for _, q := range benchQuotes {
		text, err := os.ReadFile(filepath.Join(root, q.file))
		if err != nil {
			t.Fatal(err)
		}
		m := phraseRegexp(q.phrase).FindStringSubmatch(string(text))
		if m == nil {
			t.Errorf("%s no longer says %q: quote the figures there again, or update this test", q.file, q.phrase)
			continue
		}
		for i, path := range q.paths {
			want, err := jsonPath(results, path)
			if err != nil {
				t.Fatalf("results.json: %v", err)
			}
			want /= q.div
			said, _ := strconv.ParseFloat(m[i+1], 64)
			if math.Abs(said-want) > q.within {
				t.Errorf("%s quotes %s as %s, but the last full run's results.json says %.2f", q.file, path, m[i+1], want)
			}
		}
	}
}
