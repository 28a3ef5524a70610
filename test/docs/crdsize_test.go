package docs_test

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"sigs.k8s.io/yaml"
)

// crdSizes is docs/install.md's sentence on the CRDs' last-applied
// annotation: "about 150 KB (Application) and 80 KB (MyDeployment)".
var crdSizes = regexp.MustCompile(`about (\d+) KB \(Application\) and (\d+) KB\s+\(MyDeployment\)`)

// TestCRDSizesInTheDocs: the sizes docs/install.md gives for the CRDs as
// client-side apply stores them (the JSON of the object, as make
// test-install measures against the 256 KiB limit) are within 10% of what
// config/crd/bases holds now, so the margin a reader sees is the real one.
func TestCRDSizesInTheDocs(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := crdSizes.FindStringSubmatch(string(b))
	if m == nil {
		t.Fatalf("docs/install.md no longer says 'about N KB (Application) and M KB (MyDeployment)': update this test with it")
	}
	for i, file := range []string{"apps.mydeployment.io_applications.yaml", "apps.mydeployment.io_mydeployments.yaml"} {
		raw, err := os.ReadFile(filepath.Join(root, "config", "crd", "bases", file))
		if err != nil {
			t.Fatal(err)
		}
		var obj map[string]any
		if err := yaml.Unmarshal(raw, &obj); err != nil {
			t.Fatal(err)
		}
		j, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		said, _ := strconv.Atoi(m[i+1])
		kb := float64(len(j)) / 1000
		if math.Abs(float64(said)-kb) > kb/10 {
			t.Errorf("docs/install.md gives %s as about %d KB; its JSON is %.1f KB now: say about %.0f KB", file, said, kb, math.Round(kb/10)*10)
		}
	}
}
