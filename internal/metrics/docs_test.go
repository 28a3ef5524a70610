package metrics

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// The metrics table of docs/operations.md is the users' reference (and
// test/prometheus checks the alerts against it): it must list exactly what
// is exposed.
func TestDocsListEveryMetric(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `(mydeployment_[a-z_]+)` \\|").FindAllSubmatch(readme, -1) {
		documented = append(documented, string(m[1]))
	}
	var exposed []string
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	ch := make(chan *prometheus.Desc, 64)
	go func() {
		for _, c := range Collectors() {
			c.Describe(ch)
		}
		close(ch)
	}()
	for d := range ch {
		exposed = append(exposed, fqName.FindStringSubmatch(d.String())[1])
	}
	slices.Sort(documented)
	slices.Sort(exposed)
	if !slices.Equal(documented, exposed) {
		t.Errorf("docs/operations.md's metrics table lists\n%v\nbut the operator exposes\n%v", documented, exposed)
	}
}
