// Package partition is the partition opt-in (PartitionAnnotation): a
// RollingUpdate holds that many pods on the current revision, as
// StatefulSet's and CloneSet's partition does; "0" or no annotation
// completes the rollout.
package partition

import (
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
	"github.com/mydeployment-io/mydeployment-operator/internal/status"
)

// Name is the module's name in an optin.Set.
const Name = "partition"

// Module is the partition module.
var Module optin.Module = module{}

type module struct{}

func (module) Name() string { return Name }

func (module) Keys() []string { return []string{appsv1beta1.PartitionAnnotation} }

// Parse reads PartitionAnnotation. Refused: a value that is not a
// non-negative integer or a percentage from 0% to 100% (ParsePodCount), and
// any partition with strategy Recreate.
func (module) Parse(md *appsv1beta1.MyDeployment) (optin.Spec, field.ErrorList) {
	v, ok := md.Annotations[appsv1beta1.PartitionAnnotation]
	if !ok {
		return nil, nil
	}
	c, err := optin.ParsePodCount(v)
	switch {
	case err != nil:
		return nil, field.ErrorList{field.Invalid(optin.Path(appsv1beta1.PartitionAnnotation), v, err.Error())}
	case md.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType:
		return nil, field.ErrorList{field.Forbidden(optin.Path(appsv1beta1.PartitionAnnotation),
			"a partition needs spec.strategy.type RollingUpdate: Recreate replaces every pod at once")}
	}
	return &Partition{c}, nil
}

// Partition is a parsed PartitionAnnotation: a count, or a percentage of
// spec.replicas.
type Partition struct {
	optin.PodCount
}

// Of is the partition s opts into; nil without one.
func Of(s optin.Set) *Partition {
	p, _ := optin.Get[*Partition](s, Name)
	return p
}

// Module implements optin.Spec.
func (*Partition) Module() string { return Name }

// PlanInput implements rollout.Planner: the planner holds p resolved
// against spec.replicas.
func (p *Partition) PlanInput(in *rollout.Input) {
	in.Partition = p.Pods(in.Replicas)
}

// ReportInput implements status.Reporter: while a rollout is under way
// (the current and update revisions differ), the status says how many
// pods p holds.
func (p *Partition) ReportInput(in *status.Input) {
	if in.CurrentRevision != "" && in.UpdateRevision != "" && in.CurrentRevision != in.UpdateRevision {
		in.Partition = p.Pods(ptr.Deref(in.Object.Spec.Replicas, 1))
	}
}

// Pods is how many pods p holds on the current revision out of replicas
// (PodCount.Pods); 0 for a nil p.
func (p *Partition) Pods(replicas int32) int32 {
	if p == nil {
		return 0
	}
	return p.PodCount.Pods(replicas)
}

var (
	_ rollout.Planner = (*Partition)(nil)
	_ status.Reporter = (*Partition)(nil)
)
