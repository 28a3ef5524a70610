// Package updatemode is the in-place opt-in (UpdateModeAnnotation
// InPlaceIfPossible): a RollingUpdate moves an old pod to the new revision
// in place when the template change allows it (internal/inplace says
// which), as CloneSet's InPlaceIfPossible does, and replaces it otherwise;
// Recreate (the default) always replaces.
package updatemode

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
)

// Name is the module's name in an optin.Set.
const Name = "update-mode"

// Module is the update-mode module.
var Module optin.Builder = module{}

type module struct{}

func (module) Name() string { return Name }

func (module) Keys() []string { return []string{appsv1beta1.UpdateModeAnnotation} }

// Parse reads UpdateModeAnnotation: a Spec only for InPlaceIfPossible.
// Refused: a value other than Recreate or InPlaceIfPossible, and
// InPlaceIfPossible with strategy Recreate (which promises that no pod of
// the old template runs beside one of the new).
func (module) Parse(md *appsv1beta1.MyDeployment) (optin.Spec, field.ErrorList) {
	v, ok := md.Annotations[appsv1beta1.UpdateModeAnnotation]
	switch {
	case !ok || v == appsv1beta1.UpdateModeRecreate:
		return nil, nil
	case v != appsv1beta1.UpdateModeInPlaceIfPossible:
		return nil, field.ErrorList{field.NotSupported(optin.Path(appsv1beta1.UpdateModeAnnotation), v,
			[]string{appsv1beta1.UpdateModeRecreate, appsv1beta1.UpdateModeInPlaceIfPossible})}
	case md.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType:
		return nil, field.ErrorList{field.Forbidden(optin.Path(appsv1beta1.UpdateModeAnnotation),
			"InPlaceIfPossible needs spec.strategy.type RollingUpdate: Recreate promises that no pod of the old template runs beside one of the new")}
	}
	return inPlace{}, nil
}

// Build implements optin.Builder: the module's part is the controller's
// Memo of decoded templates and in-place diffs, read for every object
// (MemoOf), since a pod made with the in-place gate steps on after its
// object opts out.
func (module) Build(context.Context, optin.BuildEnv) (optin.Part, error) {
	return &Memo{}, nil
}

// MemoOf is the Memo among a controller's parts (by module name), a new
// one when it has none (a reconciler built without its parts: it keeps
// what it computes for the sync that asked only).
func MemoOf(parts map[string]optin.Part) *Memo {
	if m, ok := parts[Name].(*Memo); ok {
		return m
	}
	return &Memo{}
}

// inPlace is the Spec of an object that opts in.
type inPlace struct{}

func (inPlace) Module() string { return Name }

// InPlace says s opts into in-place updates.
func InPlace(s optin.Set) bool {
	_, ok := optin.Get[inPlace](s, Name)
	return ok
}

// InPlaceOf says md opts into in-place updates, for a reader that holds
// no parsed Set (the metrics' counters); false when the value is refused.
func InPlaceOf(md *appsv1beta1.MyDeployment) bool {
	spec, _ := Module.Parse(md)
	return spec != nil
}
