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

// NewInput is the planner's input for md as its controller plans it:
// spec.replicas (1 if unset), the strategy with maxSurge and maxUnavailable
// resolved (StrategyFenceposts), minReadySeconds, paused, what the pods were
// sized for (md's DesiredReplicasAnnotation and MaxReplicasAnnotation),
// DefaultMaxBurst, and the opt-ins of its annotations (optin.Parse): the
// partition resolved against spec.replicas, and RespectPDB.
// currentRevision names the revision held pods run (status.currentRevision),
// updateRevision the one new pods are created from; revisions are the
// ControllerRevisions pods may be created from, in any order (ordered here
// by revision number); pods and now are passed on. The errors are a
// strategy that cannot be resolved and an opt-in annotation whose value
// can never work (optin.Parse's errors, naming the annotation).
func NewInput(md *appsv1beta1.MyDeployment, currentRevision, updateRevision string, revisions []*appsv1.ControllerRevision,
	pods []*corev1.Pod, now time.Time) (Input, error) {
	surge, unavailable, err := StrategyFenceposts(md.Spec.Strategy, ptr.Deref(md.Spec.Replicas, 1))
	if err != nil {
		return Input{}, err
	}
	opts, errs := optin.Parse(md)
	if len(errs) > 0 {
		return Input{}, errs.ToAggregate()
	}
	return NewInputOf(md, Parsed{OptIn: opts, MaxSurge: surge, MaxUnavailable: unavailable},
		currentRevision, updateRevision, revisions, pods, now), nil
}

// Parsed is what NewInputOf takes parsed already: md's opt-ins
// (optin.Parse) and its strategy's fenceposts (StrategyFenceposts).
type Parsed struct {
	OptIn                    optin.Options
	MaxSurge, MaxUnavailable int32
}

// NewInputOf is NewInput of an object whose opt-ins and fenceposts the
// caller has parsed (the controller does once a sync, in observe, and
// stops at their errors there).
func NewInputOf(md *appsv1beta1.MyDeployment, parsed Parsed, currentRevision, updateRevision string,
	revisions []*appsv1.ControllerRevision, pods []*corev1.Pod, now time.Time) Input {
	replicas := ptr.Deref(md.Spec.Replicas, 1)
	opts := parsed.OptIn
	strategy := RollingUpdate
	if md.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		strategy = Recreate
	}
	return Input{
		Replicas:        replicas,
		Strategy:        strategy,
		MaxSurge:        parsed.MaxSurge,
		MaxUnavailable:  parsed.MaxUnavailable,
		MinReadySeconds: md.Spec.MinReadySeconds,
		Paused:          md.Spec.Paused,
		UpdateRevision:  updateRevision,
		Revisions:       olderRevisions(revisions, updateRevision),
		SizedFor:        SizedForOf(md),
		Partition:       opts.Partition.Pods(replicas),
		Canary:          opts.Canary,
		CurrentRevision: currentRevision,
		RespectPDB:      opts.RespectPDB,
		MaxBurst:        DefaultMaxBurst,
		Pods:            pods,
		Now:             now,
	}
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
