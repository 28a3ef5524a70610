// Package modules is the registry of opt-in modules: the one list of them
// (All) and the one parse of an object's opt-ins (Parse), which the
// controller, the webhook and the kubectl plugin call. Adding an opt-in is
// adding its package under internal/optin and a line to All.
package modules

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/abort"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/adoptfrom"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/analysis"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/canary"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/configrollout"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/drain"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/hooks"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/partition"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/podreplacement"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/respectpdb"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/updatemode"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/waves"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/weights"
)

// All are the opt-in modules, in the order their errors are reported and
// their extension points are called (analysis after canary, waves after
// both, adopt-from last: the order of the errors before they were
// modules).
var All = []optin.Module{
	partition.Module,
	respectpdb.Module,
	updatemode.Module,
	drain.Module,
	abort.Module,
	configrollout.Module,
	canary.Module,
	analysis.Module,
	weights.Module,
	waves.Module,
	hooks.Module,
	podreplacement.Module,
	adoptfrom.Module,
}

// Annotations are the keys every opt-in owns, in All's order.
var Annotations = func() []string {
	var keys []string
	for _, m := range All {
		keys = append(keys, m.Keys()...)
	}
	return keys
}()

// Builders are the modules of All with a long-lived part (optin.Builder:
// a watch beside the object, a memo), in All's order.
var Builders = func() []optin.Builder {
	var bs []optin.Builder
	for _, m := range All {
		if b, ok := m.(optin.Builder); ok {
			bs = append(bs, b)
		}
	}
	return bs
}()

// Owners are the modules of All whose own objects the controller makes
// (optin.Owner: the hooks module's Jobs), in All's order.
var Owners = func() []optin.Owner {
	var os []optin.Owner
	for _, m := range All {
		if o, ok := m.(optin.Owner); ok {
			os = append(os, o)
		}
	}
	return os
}()

// Parse reads md's opt-ins: each module's Spec. Every value that can
// never work is an error naming its annotation, in All's order; the Set
// holds what could be parsed.
func Parse(md *appsv1beta1.MyDeployment) (optin.Set, field.ErrorList) {
	var (
		specs []optin.Spec
		errs  field.ErrorList
	)
	for _, m := range All {
		spec, e := m.Parse(md)
		errs = append(errs, e...)
		if spec != nil {
			specs = append(specs, spec)
		}
	}
	return optin.NewSet(specs...), errs
}
