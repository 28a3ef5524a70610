package optin

import (
	"iter"

	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// A Module is one opt-in: the annotations (or labels) it owns and how it
// reads them. Its package, internal/optin/<module>, is the only one that
// parses them; internal/optin/modules lists every module and parses an
// object's opt-ins for the controller, the webhook and the kubectl plugin.
type Module interface {
	// Name is the module's key in a Set.
	Name() string
	// Keys are the annotations and labels it owns.
	Keys() []string
	// Parse reads md's keys: a nil Spec when md does not opt in, and an
	// error naming its key for each value that can never work (the webhook
	// refuses them with these errors; the controller reports them in its
	// InvalidAnnotation condition). A Spec returned beside errors holds
	// what could be parsed.
	Parse(md *appsv1beta1.MyDeployment) (Spec, field.ErrorList)
}

// A Spec is one module's parsed opt-in of one object, never modified once
// parsed. Beside Module it implements the extension points of the phases
// its module takes part in; each phase declares its own in its package
// (rollout.Planner: the planner's input; status.Reporter: the status's),
// so that a module imports the phases it serves and no phase imports a
// module.
type Spec interface {
	// Module is the Name of the module that parsed it.
	Module() string
}

// Set is one object's opt-ins: the Spec of each module it opts into, in the
// registry's order, and the Options of the opt-ins that are not modules
// yet (issue 52 moves them into modules one by one, and Options goes with
// the last).
type Set struct {
	Options
	specs []Spec
}

// NewSet is the Set of o and specs (none nil), which it keeps.
func NewSet(o Options, specs ...Spec) Set {
	return Set{Options: o, specs: specs}
}

// Specs are s's specs in the registry's order.
func (s Set) Specs() []Spec {
	return s.specs
}

// Get is the spec module parsed in s, as its package's type S; false when
// s does not opt into module. A module's package exports it typed:
//
//	func Of(s optin.Set) *Partition { p, _ := optin.Get[*Partition](s, Name); return p }
func Get[S Spec](s Set, module string) (S, bool) {
	for _, sp := range s.specs {
		if sp.Module() == module {
			v, ok := sp.(S)
			return v, ok
		}
	}
	var zero S
	return zero, false
}

// Each yields the specs of s that implement the extension point T, in the
// registry's order.
func Each[T any](s Set) iter.Seq[T] {
	return func(yield func(T) bool) {
		for _, sp := range s.specs {
			if t, ok := sp.(T); ok && !yield(t) {
				return
			}
		}
	}
}

// ParseBool reads a "true" or "false" annotation value; anything else is
// an error.
func ParseBool(v string) (bool, error) {
	return parseBool(v)
}
