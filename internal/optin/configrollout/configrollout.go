// Package configrollout is the config-rollout opt-in
// (RolloutOnConfigChangeAnnotation "true"): the data of the ConfigMaps and
// Secrets the pod template references is part of the revision, so an edit
// of one rolls the pods out as a template change does. The watch of those
// objects and the reading of their data are still the controller's
// (configwatch.go, config.go: issue 52 moves them here).
package configrollout

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
)

// Name is the module's name in an optin.Set.
const Name = "rollout-on-config-change"

// Module is the config-rollout module.
var Module optin.Module = module{}

type module struct{}

func (module) Name() string { return Name }

func (module) Keys() []string { return []string{appsv1beta1.RolloutOnConfigChangeAnnotation} }

// Parse reads RolloutOnConfigChangeAnnotation: "true" opts in, "false"
// does not, any other value is refused. Either strategy may opt in.
func (module) Parse(md *appsv1beta1.MyDeployment) (optin.Spec, field.ErrorList) {
	if on, errs := optin.ParseSwitch(md, appsv1beta1.RolloutOnConfigChangeAnnotation); !on {
		return nil, errs
	}
	return onConfigChange{}, nil
}

// onConfigChange is the Spec of an object that opts in.
type onConfigChange struct{}

func (onConfigChange) Module() string { return Name }

// On says s opts into rollouts on config changes.
func On(s optin.Set) bool {
	_, ok := optin.Get[onConfigChange](s, Name)
	return ok
}
