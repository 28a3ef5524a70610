// Package drain is the drain opt-in (DrainAnnotation SurgeFirst): a pod on
// a node being drained (cordoned, or tainted for removal by the Cluster
// Autoscaler or Karpenter) is replaced before it goes, its replacement
// created first within maxSurge, so a drain never leaves the object short.
// The module reads Nodes through the node view it shares with the waves
// module (internal/optin/nodes: one informer of the manager's own, started
// once some object opts in and the manager may), hands each sync the
// draining nodes (Observe) for the planner (rollout.Input.DrainingNodes),
// and reports when the manager may not watch Nodes (ReplicaFailure
// DrainAccessDenied).
package drain

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/nodes"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
	"github.com/mydeployment-io/mydeployment-operator/internal/status"
)

// Name is the module's name in an optin.Set.
const Name = "drain"

// Module is the drain module.
var Module optin.Builder = module{}

type module struct{}

func (module) Name() string { return Name }

func (module) Keys() []string { return []string{appsv1beta1.DrainAnnotation} }

// Parse reads DrainAnnotation. Refused: any value but SurgeFirst, and
// SurgeFirst with strategy Recreate.
func (module) Parse(md *appsv1beta1.MyDeployment) (optin.Spec, field.ErrorList) {
	v, ok := md.Annotations[appsv1beta1.DrainAnnotation]
	switch {
	case !ok:
		return nil, nil
	case v != appsv1beta1.DrainSurgeFirst:
		return nil, field.ErrorList{field.NotSupported(optin.Path(appsv1beta1.DrainAnnotation), v, []string{appsv1beta1.DrainSurgeFirst})}
	case md.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType:
		return nil, field.ErrorList{field.Forbidden(optin.Path(appsv1beta1.DrainAnnotation),
			"SurgeFirst needs spec.strategy.type RollingUpdate: Recreate removes a pod before it creates one")}
	}
	return &Drain{}, nil
}

// Build implements optin.Builder: the module's part is the shared node
// view (nodes.Watch); a node that starts or stops draining syncs the
// opted-in objects with pods on it.
func (module) Build(_ context.Context, env optin.BuildEnv) (optin.Part, error) {
	return nodes.For(env, Module, nodes.DrainingChanged), nil
}

// Drain is the Spec of an object that opts in; once observed, it holds
// the nodes being drained and whether the manager is denied Nodes.
type Drain struct {
	nodes  map[string]bool
	denied bool
}

// On says s opts into drain SurgeFirst.
func On(s optin.Set) bool {
	_, ok := optin.Get[*Drain](s, Name)
	return ok
}

// Module implements optin.Spec.
func (*Drain) Module() string { return Name }

// Observe implements optin.Observer: what p (a *nodes.Watch; nil: no
// view, no drain seen) knows now.
func (d *Drain) Observe(p optin.Part) optin.Spec {
	nw, _ := p.(*nodes.Watch)
	seen := nw.Seen()
	return &Drain{nodes: seen.DrainingNodes(), denied: seen.Denied}
}

// PlanInput implements rollout.Planner: the planner replaces the pods on
// draining nodes surge-first.
func (d *Drain) PlanInput(in *rollout.Input) {
	in.DrainingNodes = d.nodes
}

// ErrAccessDenied is the ReplicaFailure message of an opted-in object
// whose manager may not list and watch Nodes.
var ErrAccessDenied = fmt.Errorf("%s: the manager may not list and watch Nodes, so it does not see drains "+
	"(grant it the ClusterRole of config/rbac/node_reader_role.yaml); pods on draining nodes are left to the drain",
	appsv1beta1.DrainAnnotation)

// ReportInput implements status.Reporter: with no other failure to
// report, the status says the manager may not see drains.
func (d *Drain) ReportInput(in *status.Input) {
	if in.Failure == nil && d.denied {
		in.Failure = &status.Failure{Reason: appsv1beta1.ReasonDrainAccessDenied, Message: ErrAccessDenied.Error()}
	}
}

// NodeDraining says node is being drained as DrainAnnotation means it:
// cordoned, or tainted for removal by the Cluster Autoscaler or Karpenter
// (nodes.Draining, which the node view indexes).
func NodeDraining(node *corev1.Node) bool {
	return nodes.Draining(node)
}

var (
	_ optin.Observer  = (*Drain)(nil)
	_ rollout.Planner = (*Drain)(nil)
	_ status.Reporter = (*Drain)(nil)
)
