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
	"fmt"

	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/weights"
)

// canaryStatus is rolloutStatus for a canary rollout under way
// (CanaryStepsAnnotation, the controller's record naming the update
// revision), once the spec is observed and the deadline not exceeded: the
// step it is at and how many pods are updated; done, as at a partition's
// hold, when the controller says it is paused until a promote
// (Progressing=True, CanaryPaused, at that step) and no promote of that
// step is written yet. ok is false when no
// canary rollout is under way: the other messages apply.
func canaryStatus(md *appsv1beta1.MyDeployment) (msg string, done, ok bool) {
	c, errs := canaryOf(md)
	if len(errs) > 0 || c == nil || !canaryUnderWay(md, c.State, len(c.Steps)) {
		return "", false, false
	}
	at := c.State.Describe(c.Steps)
	st := md.Status
	step := c.Steps[c.State.Index]
	if c.Promote.Ends(c.State) {
		// Promoted, and the controller has not acted on it yet: not paused
		// (so 'rollout promote' then 'rollout status' waits for the rollout).
		at = fmt.Sprintf("step %d of %d: promoted", c.State.Index+1, len(c.Steps))
	} else if step.Pause && step.Duration == 0 && pausedAt(md, at) {
		return fmt.Sprintf("canary paused at %s: %d of %d pods updated ('rollout promote %s' goes on)\n",
			at, st.UpdatedReplicas, desired(md), md.Name) + routeLine(md) + analysisLine(md), true, true
	}
	return fmt.Sprintf("Waiting for mydeployment %q canary roll out to finish: %s: %d of %d pods updated...\n",
		md.Name, at, st.UpdatedReplicas, desired(md)) + routeLine(md) + analysisLine(md), false, true
}

// routeLine is what the route of md's Application carries for the update
// revision, as the Application recorded it (weight steps: the weights
// module's record), as a line of its own: the effective weight, and the
// stated one when the Ready pods cap it; "" without a record of it.
func routeLine(md *appsv1beta1.MyDeployment) string {
	r, ok := weights.RecordOf(md)
	if !ok || r.Revision != md.Status.UpdateRevision {
		return ""
	}
	if r.Effective < r.Stated {
		return fmt.Sprintf("  route: %d%% to the canary, of a stated %d%% (capped by its Ready pods)\n", r.Effective, r.Stated)
	}
	return fmt.Sprintf("  route: %d%% to the canary, as stated\n", r.Effective)
}

// analysisLine is the controller's Analysis condition (canary analysis,
// AnalysisAnnotation) as a line of its own: its reason and the last value
// of each query; "" without one.
func analysisLine(md *appsv1beta1.MyDeployment) string {
	for _, c := range md.Status.Conditions {
		if c.Type == appsv1beta1.ConditionAnalysis {
			return fmt.Sprintf("  analysis %s: %s\n", c.Reason, c.Message)
		}
	}
	return ""
}

// pausedAt says md's controller reports the canary paused at step (its
// Progressing condition: True, CanaryPaused, that step's description).
func pausedAt(md *appsv1beta1.MyDeployment, step string) bool {
	for _, c := range md.Status.Conditions {
		if c.Type == appsv1beta1.ConditionProgressing {
			return c.Status == corev1.ConditionTrue && c.Reason == appsv1beta1.ReasonCanaryPaused && c.Message == step
		}
	}
	return false
}
