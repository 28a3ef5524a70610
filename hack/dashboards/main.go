// Command dashboards writes the Grafana dashboards of config/grafana from
// their definitions here (grafana-foundation-sdk: typed, reviewed as code):
//
//	go run ./hack/dashboards -out config/grafana   (make dashboards)
//
// The JSON committed there must be what this writes: the module's test
// checks it (make test-rules), and test/prometheus evaluates every query in
// it against the manager's real /metrics.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// files are the dashboards, by the file name each is written to.
var files = map[string]func() *dashboard.DashboardBuilder{
	"mydeployment-fleet.json":  fleet,
	"mydeployment-object.json": object,
}

// render is the JSON of the dashboard b builds, indented, with a final newline.
func render(b *dashboard.DashboardBuilder) ([]byte, error) {
	d, err := b.Build()
	if err != nil {
		return nil, fmt.Errorf("building the dashboard: %w", err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep PromQL's < and > readable
	enc.SetIndent("", "  ")
	if err := enc.Encode(d); err != nil {
		return nil, fmt.Errorf("encoding the dashboard: %w", err)
	}
	return buf.Bytes(), nil
}

func main() {
	out := flag.String("out", filepath.Join("config", "grafana"), "directory to write the dashboards to")
	flag.Parse()
	for name, b := range files {
		data, err := render(b())
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
			os.Exit(1)
		}
		if err := os.WriteFile(filepath.Join(*out, name), data, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
