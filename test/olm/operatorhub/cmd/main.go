// Command operatorhub writes the community-operators submission of the bundle
// (make operatorhub) and runs the pipeline's offline static checks on it.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/mydeployment-io/mydeployment-operator/test/olm/operatorhub"
)

func main() {
	var o operatorhub.Options
	flag.StringVar(&o.BundleDir, "bundle", "bundle", "the bundle directory (manifests/ and metadata/)")
	flag.StringVar(&o.ReleasesDir, "releases", "catalog/releases", "the released bundles (file-based catalog blobs)")
	flag.StringVar(&o.OutDir, "out", "dist/operatorhub", "where operators/<package>/ is written")
	flag.Parse()

	s, err := operatorhub.Write(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "operatorhub:", err)
		os.Exit(1)
	}
	replaces := s.Replaces
	if replaces == "" {
		replaces = "nothing (first release)"
	}
	fmt.Printf("wrote %s (replaces %s) and %s/ci.yaml (updateGraph: %s)\n", s.BundleDir, replaces, s.PackageDir, operatorhub.UpdateGraphMode)
	notes, errs := operatorhub.Check(s.BundleDir, o.ReleasesDir)
	for _, n := range notes {
		fmt.Println("note:", n)
	}
	for _, e := range errs {
		fmt.Fprintln(os.Stderr, "FAIL:", e)
	}
	if len(errs) > 0 {
		fmt.Fprintf(os.Stderr, "%d static check(s) failed\n", len(errs))
		os.Exit(1)
	}
	fmt.Println("static checks passed: validators name=operatorhub and suite=operatorframework, CSV metadata, package name, no NetworkPolicy, update graph, minKubeVersion")
}
