// Package respectpdb is the respect-pdb opt-in (RespectPDBAnnotation): the
// pods a rollout or a specified delete replaces are evicted through the
// Eviction API, so that PodDisruptionBudgets hold; a scale-down stays a
// plain delete.
package respectpdb

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
)

// Name is the module's name in an optin.Set.
const Name = "respect-pdb"

// Module is the respect-pdb module.
var Module optin.Module = module{}

type module struct{}

func (module) Name() string { return Name }

func (module) Keys() []string { return []string{appsv1beta1.RespectPDBAnnotation} }

// Parse reads RespectPDBAnnotation: "true" opts in, "false" does not, any
// other value is refused.
func (module) Parse(md *appsv1beta1.MyDeployment) (optin.Spec, field.ErrorList) {
	if on, errs := optin.ParseSwitch(md, appsv1beta1.RespectPDBAnnotation); !on {
		return nil, errs
	}
	return respectPDB{}, nil
}

// respectPDB is the Spec of an object that opts in.
type respectPDB struct{}

// On says s opts into respect-pdb.
func On(s optin.Set) bool {
	_, ok := optin.Get[respectPDB](s, Name)
	return ok
}

func (respectPDB) Module() string { return Name }

// PlanInput implements rollout.Planner: the planner evicts what it
// replaces.
func (respectPDB) PlanInput(in *rollout.Input) {
	in.RespectPDB = true
}

var _ rollout.Planner = respectPDB{}
