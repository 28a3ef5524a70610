package olm

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/manifests"
)

// features are the features.operators.openshift.io annotations a catalog
// filters on; each must be stated, "true" or "false".
var features = []string{"cnf", "cni", "csi", "disconnected", "fips-compliant", "proxy-aware",
	"tls-profiles", "token-auth-aws", "token-auth-azure", "token-auth-gcp"}

// TestBundleClaimsAreTrue checks what the CSV claims against what the bundle
// holds: every infrastructure feature stated, "disconnected" only with every
// image by digest (a mirror copies images by digest); "Deep Insights" (or
// Auto Pilot) only with the ServiceMonitor and PrometheusRule in the bundle;
// the maturity of the channel it ships in; and the icon the catalog's
// package shows (hack/catalog.sh passes config/manifests/icon.svg to opm
// init) the CSV's own.
func TestBundleClaimsAreTrue(t *testing.T) {
	bundle, err := manifests.GetBundleFromDir(filepath.Join("..", "..", "bundle"))
	if err != nil {
		t.Fatalf("reading bundle/: %v", err)
	}
	csv := bundle.CSV
	for _, f := range features {
		key := "features.operators.openshift.io/" + f
		if v, ok := csv.Annotations[key]; !ok || (v != "true" && v != "false") {
			t.Errorf("annotation %s is %q; want \"true\" or \"false\"", key, v)
		}
	}
	if csv.Annotations["features.operators.openshift.io/disconnected"] == "true" {
		var images []string
		for _, r := range csv.Spec.RelatedImages {
			images = append(images, r.Image)
		}
		for _, d := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
			for _, c := range d.Spec.Template.Spec.Containers {
				images = append(images, c.Image)
			}
		}
		for _, img := range images {
			if !strings.Contains(img, "@sha256:") {
				t.Errorf("disconnected is \"true\" but image %s is not named by digest (make bundle USE_IMAGE_DIGESTS=true)", img)
			}
		}
	}

	kinds := map[string]bool{}
	for _, o := range bundle.Objects {
		kinds[o.GetKind()] = true
	}
	switch level := csv.Annotations["capabilities"]; level {
	case "Deep Insights", "Auto Pilot":
		for _, k := range []string{"ServiceMonitor", "PrometheusRule"} {
			if !kinds[k] {
				t.Errorf("capabilities %q, but the bundle has no %s", level, k)
			}
		}
	case "Basic Install", "Seamless Upgrades", "Full Lifecycle":
	default:
		t.Errorf("capabilities %q is no capability level", level)
	}

	annotations, err := os.ReadFile(filepath.Join("..", "..", "bundle", "metadata", "annotations.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(annotations), "channel.default.v1: stable") && csv.Spec.Maturity != "stable" {
		t.Errorf("maturity %q in the stable channel", csv.Spec.Maturity)
	}

	icon, err := os.ReadFile(filepath.Join("..", "..", "config", "manifests", "icon.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if len(csv.Spec.Icon) != 1 {
		t.Fatalf("the CSV has %d icons, want 1", len(csv.Spec.Icon))
	}
	if got, err := base64.StdEncoding.DecodeString(csv.Spec.Icon[0].Data); err != nil || !bytes.Equal(got, icon) {
		t.Errorf("the CSV's icon is not config/manifests/icon.svg, the catalog package's (err %v)", err)
	}
}
