// Command mydeployment-scorecard-tests is the entrypoint of the project's
// custom scorecard test image: `mydeployment-scorecard-tests TEST` reads the
// bundle at /bundle (where scorecard mounts it), runs TEST (see package
// test/scorecard) and prints its v1alpha3 TestStatus as JSON. Like
// scorecard-test, it exits 0 whatever the state; a bundle it cannot read is
// an error state.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	scapiv1alpha3 "github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	apimanifests "github.com/operator-framework/api/pkg/manifests"

	"github.com/mydeployment-io/mydeployment-operator/test/scorecard"
)

// bundleRoot is where the scorecard pod puts the bundle under test.
const bundleRoot = "/bundle"

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintf(os.Stderr, "usage: %s TEST (one of %v)\n", os.Args[0], scorecard.Names())
		os.Exit(2)
	}
	var status scapiv1alpha3.TestStatus
	bundle, err := apimanifests.GetBundleFromDir(bundleRoot)
	if err != nil {
		status.Results = []scapiv1alpha3.TestResult{{
			Name: os.Args[1], State: scapiv1alpha3.ErrorState,
			Errors: []string{fmt.Sprintf("reading the bundle at %s: %v", bundleRoot, err)},
		}}
	} else {
		status = scorecard.Run(os.Args[1], bundle)
	}
	out, err := json.MarshalIndent(status, "", "    ")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(string(out))
}
