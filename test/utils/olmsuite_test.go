package utils

import (
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/manifests"
)

// TestManagerImages: bundle/'s manager image is the digest its CSV names
// everywhere; a release's is what its catalog record names (0.2.0: by
// tag); a release not recorded fails clearly.
func TestManagerImages(t *testing.T) {
	root := "../.."
	var got string
	if msg := failureOf(func() { got = BundleManagerImage(root) }); msg != "" {
		t.Fatal(msg)
	}
	b, err := manifests.GetBundleFromDir(root + "/bundle")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "@sha256:") || got != b.CSV.Annotations["containerImage"] {
		t.Errorf("bundle/: %q, want the CSV's containerImage %q, by digest", got, b.CSV.Annotations["containerImage"])
	}
	if msg := failureOf(func() { got = ReleaseManagerImage(root, "0.2.0") }); msg != "" {
		t.Fatal(msg)
	}
	if got != "mydeployment.io/mydeployment-operator:v0.2.0" {
		t.Errorf("0.2.0: %q", got)
	}
	if msg := failureOf(func() { ReleaseManagerImage(root, "9.9.9") }); !strings.Contains(msg, "no release 9.9.9") {
		t.Errorf("9.9.9: failure %q, want one naming the release", msg)
	}
}
