// Package operatorhub writes the folder a community-operators pull request
// (OperatorHub.io) needs and runs on it the static checks of the community
// pipeline (operator-pipelines, docs/users/static_checks.md) that need no
// network: operator-framework/api's validators and the CSV, package, bundle
// content, update graph and Kubernetes version rules.
package operatorhub

import (
	"fmt"

	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/validation"
	apierrors "github.com/operator-framework/api/pkg/validation/errors"
	interfaces "github.com/operator-framework/api/pkg/validation/interfaces"
)

// KubeVersion is the Kubernetes minor this project is built and tested on,
// given to the validators that check for deprecated APIs.
const KubeVersion = "1.37"

// SuiteOperatorFramework is what `operator-sdk bundle validate
// --select-optional suite=operatorframework` runs besides the default bundle
// validators: OperatorHub (v2), capabilities, categories, deprecated APIs and
// good practices.
var SuiteOperatorFramework = []interfaces.Validator{
	validation.OperatorHubV2Validator,
	validation.StandardCapabilitiesValidator,
	validation.StandardCategoriesValidator,
	validation.AlphaDeprecatedAPIsValidator,
	validation.GoodPracticesValidator,
}

// NameOperatorHub is what `--select-optional name=operatorhub` runs: the
// older OperatorHub validator the community pipeline still runs.
var NameOperatorHub = []interfaces.Validator{
	validation.OperatorHubValidator, //nolint:staticcheck // the community pipeline runs it
}

// Validate runs the default bundle validators and extra on bundle, and
// returns every error and warning as an error naming its validator. The
// deprecation notice the older OperatorHub validator always adds about
// itself is left out. It fails (one error) if no validator ran.
func Validate(bundle *manifests.Bundle, extra ...interfaces.Validator) []error {
	validators := validation.DefaultBundleValidators.WithValidators(extra...)
	objs := append(bundle.ObjectsToValidate(), map[string]string{"k8s-version": KubeVersion})
	results := validators.Validate(objs...)
	if len(results) == 0 {
		return []error{fmt.Errorf("no validator ran on bundle %s", bundle.Name)}
	}
	var out []error
	for _, r := range results {
		for _, e := range r.Errors {
			out = append(out, fmt.Errorf("%s error: %w", r.Name, e))
		}
		for _, w := range r.Warnings {
			if w.Type == apierrors.ErrorDeprecatedValidator {
				continue
			}
			out = append(out, fmt.Errorf("%s warning: %w", r.Name, w))
		}
	}
	return out
}
