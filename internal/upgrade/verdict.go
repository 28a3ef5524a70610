// Package upgrade tells OLM whether the operator may be upgraded now. While
// a MyDeployment it watches is rolling out, or the controller still waits
// for its cache to observe pods it created or deleted, the operator reports
// Upgradeable=False on its OperatorCondition (operator-lib's conditions), and
// OLM holds an upgrade of the operator until it is True again.
//
// A rollout that cannot finish by waiting does not hold upgrades: a paused
// MyDeployment, one past its progress deadline, and one whose selector can
// never work. Nor does one that waits on the user, which may take days: a
// canary held at its partition or at a canary pause, and a rollout aborted
// with every pod back on the stable revision. What such a rollout waits for
// is recorded on the object (the partition, the canary step and when its
// pause began, the aborted revision), so the upgraded operator goes on from
// there. Outside OLM (no OPERATOR_CONDITION_NAME) nothing is reported.
package upgrade

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/status"
)

// Reasons of the Upgradeable condition.
const (
	// ReasonSettled: Upgradeable=True, no rollout under way.
	ReasonSettled = "RolloutsSettled"
	// ReasonRolloutInProgress: Upgradeable=False, a MyDeployment is rolling out.
	ReasonRolloutInProgress = "RolloutInProgress"
	// ReasonPodWritesUnobserved: Upgradeable=False, pod creations or
	// deletions are not yet in the controller's cache.
	ReasonPodWritesUnobserved = "PodWritesUnobserved"
)

// maxNamed is how many rolling MyDeployments a message names.
const maxNamed = 5

// Verdict is whether the operator may be upgraded now, and why not.
type Verdict struct {
	Upgradeable bool
	Reason      string
	Message     string
}

// Evaluate judges mds, the MyDeployments the operator watches, and
// unobserved, how many of them have pod writes not yet seen in the cache.
func Evaluate(mds []appsv1beta1.MyDeployment, unobserved int) Verdict {
	var rolling []string
	for i := range mds {
		if Rolling(&mds[i]) {
			rolling = append(rolling, types.NamespacedName{Namespace: mds[i].Namespace, Name: mds[i].Name}.String())
		}
	}
	switch {
	case len(rolling) > 0:
		slices.Sort(rolling)
		named := strings.Join(rolling[:min(len(rolling), maxNamed)], ", ")
		if more := len(rolling) - maxNamed; more > 0 {
			named += fmt.Sprintf(" and %d more", more)
		}
		return Verdict{Reason: ReasonRolloutInProgress,
			Message: fmt.Sprintf("%d MyDeployment(s) rolling out: %s", len(rolling), named)}
	case unobserved > 0:
		return Verdict{Reason: ReasonPodWritesUnobserved,
			Message: fmt.Sprintf("%d MyDeployment(s) have pod writes not yet observed", unobserved)}
	}
	return Verdict{Upgradeable: true, Reason: ReasonSettled, Message: "No MyDeployment is rolling out"}
}

// Rolling reports whether md's rollout (or scale) is under way and will go
// on by itself: not complete (nor held at its partition or a canary pause),
// not aborted and back on its stable pods, not paused, not past its
// deadline, and not stopped by a selector, strategy or opt-in annotation
// that can never work.
func Rolling(md *appsv1beta1.MyDeployment) bool {
	if md.DeletionTimestamp != nil || md.Spec.Paused || status.RolloutComplete(md, &md.Status) ||
		status.DeadlineExceeded(&md.Status) || abortedAtStable(md) {
		return false
	}
	c := status.Get(&md.Status, appsv1beta1.ConditionReplicaFailure)
	return c == nil || (c.Reason != appsv1beta1.ReasonInvalidSelector && c.Reason != appsv1beta1.ReasonInvalidStrategy &&
		c.Reason != appsv1beta1.ReasonInvalidAnnotation)
}

// abortedAtStable reports whether md's rollout is aborted (Progressing
// RolloutAborted) and its pods are back: spec.replicas pods, all available,
// none of the aborted revision, none terminating. Nothing moves then until
// `rollout retry` or a new template; while pods are still going back, the
// abort is a rollout like any other.
func abortedAtStable(md *appsv1beta1.MyDeployment) bool {
	st := &md.Status
	return status.Aborted(st) && st.ObservedGeneration >= md.Generation && st.UpdatedReplicas == 0 &&
		st.Replicas == ptr.Deref(md.Spec.Replicas, 1) && st.AvailableReplicas >= st.Replicas &&
		ptr.Deref(st.TerminatingReplicas, 0) == 0
}
