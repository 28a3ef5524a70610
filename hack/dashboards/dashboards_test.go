package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// The dashboards in config/grafana are generated: a hand edit there, or a
// definition changed here without `make dashboards`, fails.
func TestCommittedDashboardsAreGenerated(t *testing.T) {
	for name, b := range files {
		want, err := render(b())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := os.ReadFile(filepath.Join("..", "..", "config", "grafana", name))
		if err != nil {
			t.Fatalf("%v (run make dashboards)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("config/grafana/%s is not what hack/dashboards generates: run make dashboards and commit", name)
		}
	}
}
