// Package scorecard holds the project's own scorecard tests: checks of the
// OLM bundle that the built-in basic and olm suites do not make, run by the
// test image (test/scorecard/cmd) on the bundle mounted at /bundle. Each
// check is a pure function of the bundle, so it is unit-tested here and run
// offline by `make scorecard-local`.
package scorecard

import (
	"fmt"
	"slices"
	"strings"

	scapiv1alpha3 "github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	apimanifests "github.com/operator-framework/api/pkg/manifests"
)

// The tests this package provides, by the name the scorecard config passes
// as the entrypoint's argument.
const (
	// ExamplesRollOutTest: alm-examples has one of each owned kind; every
	// MyDeployment and Application in it decodes strictly, and the
	// MyDeployment (the Application's, defaults filled in) selects its own
	// template and rolls out under the real planner.
	ExamplesRollOutTest = "alm-examples-roll-out"
	// DescriptorsInSchemaTest: every spec/status descriptor path of an owned
	// CRD exists in that CRD's openAPIV3Schema.
	DescriptorsInSchemaTest = "descriptors-in-schema"
)

// check is one test: what it found wrong (empty: pass) and what it looked at.
type check func(*apimanifests.Bundle) (errs, log []string)

var checks = map[string]check{
	ExamplesRollOutTest:     CheckExamplesRollOut,
	DescriptorsInSchemaTest: CheckDescriptorsInSchema,
}

// Names lists the tests Run knows, sorted.
func Names() []string {
	names := make([]string, 0, len(checks))
	for n := range checks {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Run runs the named test on bundle and returns its scorecard status: state
// pass when it found nothing wrong, fail with the findings as errors
// otherwise, error for an unknown name or a bundle without a CSV.
func Run(name string, bundle *apimanifests.Bundle) scapiv1alpha3.TestStatus {
	r := scapiv1alpha3.TestResult{Name: name, State: scapiv1alpha3.PassState}
	c, ok := checks[name]
	switch {
	case !ok:
		r.State = scapiv1alpha3.ErrorState
		r.Errors = []string{fmt.Sprintf("unknown test %q; this image runs: %s", name, strings.Join(Names(), ", "))}
	case bundle == nil || bundle.CSV == nil:
		r.State = scapiv1alpha3.ErrorState
		r.Errors = []string{"the bundle has no ClusterServiceVersion"}
	default:
		errs, log := c(bundle)
		r.Log = strings.Join(log, "\n")
		if len(errs) > 0 {
			r.State = scapiv1alpha3.FailState
			r.Errors = errs
		}
	}
	return scapiv1alpha3.TestStatus{Results: []scapiv1alpha3.TestResult{r}}
}
