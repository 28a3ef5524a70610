package olm

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/operator-framework/api/pkg/manifests"
)

// TestBundleWiring checks what the validators do not, and what OLM needs to
// run and upgrade the operator on a real cluster: each webhook definition
// points at a deployment of the install strategy and a port; the deployment
// mounts no secret OLM does not make (a pod would never start); the manager
// is told OLM provides its webhook certificate (a self-managed one would
// look for a Secret and rules the bundle does not have); the manager
// image is the one the CSV advertises and lists as related.
func TestBundleWiring(t *testing.T) {
	bundle, err := manifests.GetBundleFromDir(filepath.Join("..", "..", "bundle"))
	if err != nil {
		t.Fatalf("reading bundle/: %v", err)
	}
	csv := bundle.CSV
	deployments := map[string]bool{}
	images := map[string]bool{}
	for _, d := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		deployments[d.Name] = true
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Secret != nil {
				t.Errorf("deployment %s mounts secret %s: OLM makes and mounts the webhook certificate itself, any other secret must ship in the bundle",
					d.Name, v.Secret.SecretName)
			}
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			images[c.Image] = true
			if c.Name == "manager" && !slices.Contains(c.Args, "--webhook-cert-mode=provided") {
				t.Errorf("deployment %s runs the manager with %v: want --webhook-cert-mode=provided (OLM makes the certificate)",
					d.Name, c.Args)
			}
		}
	}
	if len(csv.Spec.WebhookDefinitions) == 0 {
		t.Error("the CSV defines no webhook: the validating webhook would not be installed")
	}
	for _, w := range csv.Spec.WebhookDefinitions {
		if !deployments[w.DeploymentName] {
			t.Errorf("webhook %s names deployment %q, not one of the install strategy's %v", w.GenerateName, w.DeploymentName, deployments)
		}
		if w.ContainerPort == 0 || w.WebhookPath == nil || *w.WebhookPath == "" {
			t.Errorf("webhook %s has no port or path", w.GenerateName)
		}
	}
	if img := csv.Annotations["containerImage"]; !images[img] {
		t.Errorf("containerImage %q is not the image the deployment runs (%v)", img, images)
	}
	related := map[string]bool{}
	for _, r := range csv.Spec.RelatedImages {
		related[r.Image] = true
	}
	for img := range images {
		if !related[img] {
			t.Errorf("image %s is not in relatedImages", img)
		}
	}
}
