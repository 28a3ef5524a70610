package rollout

import (
	"cmp"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
)

// A Planner is an opt-in module's parsed spec (optin.Spec) that sets its
// part of the planner's input; NewInputOf calls each of an object's, in
// the registry's order, once the spec's part is set.
type Planner interface {
	PlanInput(in *Input)
}

// NewInput is the planner's input for md as its controller plans it, with
// md's opt-ins parsed already (modules.Parse: the caller stops at their
// errors): spec.replicas (1 if unset), the strategy with maxSurge and
// maxUnavailable resolved (StrategyFenceposts), minReadySeconds, paused,
// what the pods were sized for (md's size record), DefaultMaxBurst, and
// what each opt-in sets (Planner).
// currentRevision names the revision held pods run (status.currentRevision),
// updateRevision the one new pods are created from; revisions are the
// ControllerRevisions pods may be created from, in any order (ordered here
// by revision number); pods and now are passed on. The error is a strategy
// that cannot be resolved.
func NewInput(md *appsv1beta1.MyDeployment, opts optin.Set, currentRevision, updateRevision string, revisions []*appsv1.ControllerRevision,
	pods []*corev1.Pod, now time.Time) (Input, error) {
	surge, unavailable, err := StrategyFenceposts(md.Spec.Strategy, ptr.Deref(md.Spec.Replicas, 1))
	if err != nil {
		return Input{}, err
	}
	return NewInputOf(md, Parsed{OptIn: opts, MaxSurge: surge, MaxUnavailable: unavailable, Records: optin.RecordsOf(md)},
		currentRevision, updateRevision, revisions, pods, now), nil
}

// Parsed is what NewInputOf takes parsed already: md's opt-ins
// (modules.Parse), its strategy's fenceposts (StrategyFenceposts) and its
// records (optin.RecordsOf: the size the pods were last sized for).
type Parsed struct {
	OptIn                    optin.Set
	MaxSurge, MaxUnavailable int32
	Records                  optin.Records
}

// NewInputOf is NewInput of an object whose fenceposts the caller has
// resolved too (the controller does once a sync, in observe, and stops at
// their errors there).
func NewInputOf(md *appsv1beta1.MyDeployment, parsed Parsed, currentRevision, updateRevision string,
	revisions []*appsv1.ControllerRevision, pods []*corev1.Pod, now time.Time) Input {
	strategy := RollingUpdate
	if md.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		strategy = Recreate
	}
	in := Input{
		Replicas:        ptr.Deref(md.Spec.Replicas, 1),
		Strategy:        strategy,
		MaxSurge:        parsed.MaxSurge,
		MaxUnavailable:  parsed.MaxUnavailable,
		MinReadySeconds: md.Spec.MinReadySeconds,
		Paused:          md.Spec.Paused,
		UpdateRevision:  updateRevision,
		Revisions:       olderRevisions(revisions, updateRevision),
		SizedFor:        parsed.Records.SizedFor,
		CurrentRevision: currentRevision,
		MaxBurst:        DefaultMaxBurst,
		Pods:            pods,
		Now:             now,
	}
	for p := range optin.Each[Planner](parsed.OptIn) {
		p.PlanInput(&in)
	}
	return in
}

// olderRevisions names revisions other than update, oldest first.
func olderRevisions(revisions []*appsv1.ControllerRevision, update string) []string {
	sorted := slices.DeleteFunc(slices.Clone(revisions), func(r *appsv1.ControllerRevision) bool {
		return r == nil || r.Name == update
	})
	slices.SortFunc(sorted, func(a, b *appsv1.ControllerRevision) int {
		return cmp.Or(cmp.Compare(a.Revision, b.Revision), cmp.Compare(a.Name, b.Name))
	})
	names := make([]string, len(sorted))
	for i, r := range sorted {
		names[i] = r.Name
	}
	return names
}

// SizedForOf reads what md's pods were last sized for from its size
// record (optin.RecordsOf): nil without one.
func SizedForOf(md *appsv1beta1.MyDeployment) *Size {
	return optin.RecordsOf(md).SizedFor
}
