/*
Copyright 2026.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package plugin

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/drain"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/hooks"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/modules"
	"github.com/mydeployment-io/mydeployment-operator/internal/status"
)

// The STATUS column of get: the one state of a MyDeployment a user must
// know about, the first of these that holds:
//
//	Aborted at revision R   Progressing=False, RolloutAborted ('rollout retry')
//	Waiting for config      ReplicaFailure=True, ConfigMissing or ConfigAccessDenied
//	WaitingForHandOver      Progressing reason WaitingForHandOver
//	<reason>                Progressing=False (ProgressDeadlineExceeded) or
//	                        ReplicaFailure=True (FailedCreate, InvalidSelector, ...)
//	Waiting for hook        Progressing reason WaitingForHook: a hook's Job runs
//	Wave baking             Progressing reason WaveBaking: a zone wave bakes
//	Paused                  spec.paused
//	Draining                drain SurgeFirst: a pod of it is on a draining node
//	Canary step i/n         a canary rollout at step i of n
//	Held at partition N     held at its partition annotation's N
//	Progressing             a rollout or scale not complete yet
//	Available               complete: every pod updated and available

// Values of the STATUS column that are not a condition's reason.
const (
	statusWaitingForConfig = "Waiting for config"
	statusWaitingForHook   = "Waiting for hook"
	statusWaveBaking       = "Wave baking"
	statusWeightHolds      = "Held by weight"
	statusPaused           = "Paused"
	statusDraining         = "Draining"
	statusProgressing      = "Progressing"
	statusAvailable        = "Available"
)

// rolloutState is md's STATUS column; draining says a pod of md is on a
// draining node (read only for objects that opt into drain: drainingPods).
func rolloutState(md *appsv1beta1.MyDeployment, draining bool) string {
	progressing := conditionOf(md, appsv1beta1.ConditionProgressing)
	failure := conditionOf(md, appsv1beta1.ConditionReplicaFailure)
	if failure != nil && failure.Status != corev1.ConditionTrue {
		failure = nil
	}
	switch {
	case progressing != nil && progressing.Reason == appsv1beta1.ReasonRolloutAborted:
		return "Aborted at revision " + orNone(abortedRevision(md))
	case failure != nil && (failure.Reason == appsv1beta1.ReasonConfigMissing || failure.Reason == appsv1beta1.ReasonConfigAccessDenied):
		return statusWaitingForConfig
	case progressing != nil && progressing.Reason == appsv1beta1.ReasonWaitingForHandOver:
		return appsv1beta1.ReasonWaitingForHandOver
	case progressing != nil && progressing.Status == corev1.ConditionFalse:
		return progressing.Reason
	case failure != nil:
		return failure.Reason
	case progressing != nil && progressing.Reason == hooks.ReasonWaitingForHook:
		return statusWaitingForHook
	case progressing != nil && progressing.Reason == status.ReasonWaveBaking:
		return statusWaveBaking
	case progressing != nil && progressing.Reason == appsv1beta1.ReasonWeightHolds:
		return statusWeightHolds
	case md.Spec.Paused:
		return statusPaused
	case draining:
		return statusDraining
	}
	if step, n, ok := canaryStep(md); ok {
		return fmt.Sprintf("Canary step %d/%d", step, n)
	}
	if heldAtPartition(md) {
		return "Held at partition " + md.Annotations[appsv1beta1.PartitionAnnotation]
	}
	if !rolloutComplete(md) {
		return statusProgressing
	}
	return statusAvailable
}

// moduleWaits says Progressing's reason is a module's wait that is not a
// failure (a hook's Job running, a wave's bake, a step the weight holds):
// its message says what the rollout waits for.
func moduleWaits(reason string) bool {
	return reason == hooks.ReasonWaitingForHook || reason == status.ReasonWaveBaking || reason == appsv1beta1.ReasonWeightHolds
}

// abortedRevision is the number of the revision whose rollout was aborted:
// the revision annotation, which names the update revision the abort
// record is about; the record's revision name if there is no number.
func abortedRevision(md *appsv1beta1.MyDeployment) string {
	r := optin.RecordsOf(md)
	if r.RevisionText != "" {
		return r.RevisionText
	}
	return r.Aborted
}

// canaryStep is the step (from 1) of n md's canary rollout is at, if one
// is under way.
func canaryStep(md *appsv1beta1.MyDeployment) (step, n int, ok bool) {
	c, errs := canaryOf(md)
	if len(errs) > 0 || c == nil || !canaryUnderWay(md, c.State, len(c.Steps)) {
		return 0, 0, false
	}
	return c.State.Index + 1, len(c.Steps), true
}

// rolloutComplete is kubectl rollout status' verdict of done for a
// Deployment: the spec observed, every desired pod updated and available,
// no old pod left.
func rolloutComplete(md *appsv1beta1.MyDeployment) bool {
	st := md.Status
	return st.ObservedGeneration >= md.Generation && st.UpdatedReplicas == desired(md) &&
		st.Replicas == st.UpdatedReplicas && st.AvailableReplicas == st.UpdatedReplicas
}

// conditionOf is md's condition of type t, or nil.
func conditionOf(md *appsv1beta1.MyDeployment, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range md.Status.Conditions {
		if md.Status.Conditions[i].Type == t {
			return &md.Status.Conditions[i]
		}
	}
	return nil
}

// nodeReader reads nodes once per command: many objects' pods share them.
type nodeReader struct {
	c     client.Client
	nodes map[string]*corev1.Node
}

// drainingPods says a pod of md is on a node being drained (optin's
// drain.NodeDraining), for an object that opts into drain SurgeFirst; false for
// any other, and when the pods or nodes cannot be read (a user without
// access to Nodes sees no Draining, nothing else changes).
func (r *nodeReader) drainingPods(ctx context.Context, md *appsv1beta1.MyDeployment) bool {
	if o, _ := modules.Parse(md); !drain.On(o) || md.Spec.Selector == nil {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(md.Spec.Selector)
	if err != nil {
		return false
	}
	var pods corev1.PodList
	if err := r.c.List(ctx, &pods, client.InNamespace(md.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return false
	}
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.Spec.NodeName == "" || pod.DeletionTimestamp != nil || !metav1.IsControlledBy(pod, md) {
			continue
		}
		if node := r.node(ctx, pod.Spec.NodeName); node != nil && drain.NodeDraining(node) {
			return true
		}
	}
	return false
}

// node is the named node, or nil if it cannot be read.
func (r *nodeReader) node(ctx context.Context, name string) *corev1.Node {
	if n, ok := r.nodes[name]; ok {
		return n
	}
	n := &corev1.Node{}
	if err := r.c.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
		n = nil
	}
	if r.nodes == nil {
		r.nodes = map[string]*corev1.Node{}
	}
	r.nodes[name] = n
	return n
}
