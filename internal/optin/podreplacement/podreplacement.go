// Package podreplacement is the pod-replacement opt-in (Annotation): with
// TerminationComplete a pod's replacement is created only once the pod it
// replaces is gone from the API server, terminating pods counted against
// replicas and maxSurge (KEP-5882's podReplacementPolicy, planned for
// Deployment; kubernetes#107920). TerminationStarted, or no annotation, is
// Deployment's behaviour: a replacement is made as soon as its pod begins
// terminating.
//
// Accepted with strategy Recreate too, where it is no no-op: Recreate waits
// for the old revision's pods to be gone before a rollout creates the new
// one's, but, like a ReplicaSet, replaces a deleted or evicted pod, and
// makes up a scale-in undone, at once; the opt-in holds those until the
// pods are gone.
package podreplacement

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
)

// Name is the module's name in an optin.Set.
const Name = "pod-replacement"

// The module's annotation and its values.
const (
	// Annotation says when a pod's replacement is created:
	// TerminationStarted (the default) or TerminationComplete.
	Annotation = "apps.mydeployment.io/pod-replacement"
	// TerminationStarted: a replacement is created once its pod is
	// terminating, as a Deployment does.
	TerminationStarted = "TerminationStarted"
	// TerminationComplete: a replacement is created once its pod is gone.
	TerminationComplete = "TerminationComplete"
)

// Module is the pod-replacement module.
var Module optin.Module = module{}

type module struct{}

func (module) Name() string { return Name }

func (module) Keys() []string { return []string{Annotation} }

// Parse reads Annotation: TerminationComplete opts in, TerminationStarted
// does not; any other value (the values are case-sensitive, as the
// API's enums are) is refused.
func (module) Parse(md *appsv1beta1.MyDeployment) (optin.Spec, field.ErrorList) {
	switch v, ok := md.Annotations[Annotation]; {
	case !ok || v == TerminationStarted:
		return nil, nil
	case v == TerminationComplete:
		return terminationComplete{}, nil
	default:
		return nil, field.ErrorList{field.NotSupported(optin.Path(Annotation), v,
			[]string{TerminationStarted, TerminationComplete})}
	}
}

// terminationComplete is the Spec of an object that opts in.
type terminationComplete struct{}

// On says s opts into TerminationComplete.
func On(s optin.Set) bool {
	_, ok := optin.Get[terminationComplete](s, Name)
	return ok
}

func (terminationComplete) Module() string { return Name }

// PlanInput implements rollout.Planner: the planner counts every pod of
// the object until it is gone.
func (terminationComplete) PlanInput(in *rollout.Input) {
	in.TerminationComplete = true
}

var _ rollout.Planner = terminationComplete{}
