package olm

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/operator-framework/api/pkg/manifests"
)

// TestManagerImageByDigest: the CSV names the manager image by digest, and
// by the same reference in the deployment, containerImage and relatedImages
// (name: manager); it says what that makes true: disconnected "true", and
// the one platform the digest is of, linux/amd64, as labels. That the
// digest is the image make images builds from these sources is CI's check
// (make bundle, then git diff: hack/images.sh digest computes it). A bundle
// made by tag on purpose (make bundle USE_IMAGE_DIGESTS=false, for an image
// built another way) says disconnected "false", and only the agreement is
// checked.
func TestManagerImageByDigest(t *testing.T) {
	bundle, err := manifests.GetBundleFromDir(filepath.Join("..", "..", "bundle"))
	if err != nil {
		t.Fatalf("reading bundle/: %v", err)
	}
	csv := bundle.CSV
	var deployed []string
	for _, d := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.Name == "manager" {
				deployed = append(deployed, c.Image)
			}
		}
	}
	if len(deployed) != 1 {
		t.Fatalf("the install strategy runs %d manager containers (%v), want 1", len(deployed), deployed)
	}
	ref := deployed[0]
	byTag := csv.Annotations["features.operators.openshift.io/disconnected"] == "false"
	if _, err := name.NewDigest(ref, name.StrictValidation); err != nil && !byTag {
		t.Errorf("the deployment runs the manager as %q, not by digest (make bundle): %v", ref, err)
	}
	if got := csv.Annotations["containerImage"]; got != ref {
		t.Errorf("containerImage %q, want the deployment's %q", got, ref)
	}
	var related []string
	for _, r := range csv.Spec.RelatedImages {
		if r.Name == "manager" {
			related = append(related, r.Image)
		}
	}
	if len(related) != 1 || related[0] != ref {
		t.Errorf("relatedImages name the manager as %v, want [%s]", related, ref)
	}

	if got := csv.Annotations["features.operators.openshift.io/disconnected"]; got != "true" && !byTag {
		t.Errorf("disconnected %q with the manager by digest, want \"true\"", got)
	}
	for _, l := range []string{"operatorframework.io/arch.amd64", "operatorframework.io/os.linux"} {
		if got := csv.Labels[l]; got != "supported" {
			t.Errorf("label %s %q, want \"supported\"", l, got)
		}
	}
	for l, v := range csv.Labels {
		if strings.HasPrefix(l, "operatorframework.io/arch.") && l != "operatorframework.io/arch.amd64" && v == "supported" {
			t.Errorf("label %s: %s, but the digest is of the linux/amd64 image only", l, v)
		}
	}
}
