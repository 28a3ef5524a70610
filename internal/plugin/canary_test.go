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
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/weights"
)

var _ = Describe("rollout promote and status with canary steps", func() {
	var (
		ns string
		md *appsv1beta1.MyDeployment
	)
	// atStep plays the controller: a rollout from web-1 to web-2 at step
	// (from 1), with updated of 10 pods updated and the Progressing
	// condition given.
	atStep := func(step string, updated int32, cond corev1.ConditionStatus, reason, message string) {
		setAnnotation(md, appsv1beta1.CanaryStepAnnotation, `{"revision":"web-2","step":`+step+`}`)
		setStatus(md, func(cur *appsv1beta1.MyDeployment) {
			cur.Status.ObservedGeneration = cur.Generation
			cur.Status.CurrentRevision, cur.Status.UpdateRevision = "web-1", "web-2"
			cur.Status.Replicas, cur.Status.ReadyReplicas, cur.Status.AvailableReplicas = 10, 10, 10
			cur.Status.UpdatedReplicas = updated
			c := progressing(cond, reason)
			c.Message = message
			cur.Status.Conditions = append(cur.Status.Conditions[:0], c)
		})
		md = getMD(md)
	}
	BeforeEach(func() {
		ns = newNamespace()
		md = createMD(ns, "web", "nginx:1", 10)
		setAnnotation(md, appsv1beta1.CanaryStepsAnnotation, "1, pause 10s, 50%, pause, 100%")
	})

	It("promote names the step the rollout is at, once: a repeated promote writes nothing", func() {
		atStep("4", 5, corev1.ConditionTrue, appsv1beta1.ReasonCanaryPaused, "step 4 of 5: paused until promote")
		r := runPlugin(ns, "rollout", "promote", "web")
		Expect(r).To(Equal(result{out: "mydeployment.apps.mydeployment.io/web promoted: ended step 4 of 5: paused until promote\n"}))
		got := getMD(md)
		Expect(got.Annotations).To(HaveKeyWithValue(appsv1beta1.CanaryPromoteAnnotation, "web-2/4"))
		Expect(got.Generation).To(Equal(md.Generation), "the spec is not touched")

		r = runPlugin(ns, "rollout", "promote", "web")
		Expect(r).To(Equal(result{out: "mydeployment.apps.mydeployment.io/web already promoted (web-2/4)\n"}))
		Expect(getMD(md).ResourceVersion).To(Equal(got.ResourceVersion))
	})

	It("promote --full ends every remaining step", func() {
		atStep("2", 1, corev1.ConditionTrue, appsv1beta1.ReasonCanaryPaused, "step 2 of 5: paused 10s, until 2026-11-27T22:01:40Z")
		r := runPlugin(ns, "rollout", "promote", "web", "--full")
		Expect(r).To(Equal(result{out: "mydeployment.apps.mydeployment.io/web promoted: steps 2 to 5 of 5 ended\n"}))
		Expect(getMD(md).Annotations).To(HaveKeyWithValue(appsv1beta1.CanaryPromoteAnnotation, "web-2/full"))
	})

	It("promote writes nothing when no canary rollout is at a step", func() {
		before := getMD(md)
		r := runPlugin(ns, "rollout", "promote", "web")
		Expect(r).To(Equal(result{out: "mydeployment.apps.mydeployment.io/web has no canary step to promote\n"}))
		Expect(getMD(md).ResourceVersion).To(Equal(before.ResourceVersion))
	})

	It("status says the step; paused until promote, it is done for now", func() {
		atStep("3", 2, corev1.ConditionTrue, appsv1beta1.ReasonRevisionUpdated, `Revision "web-2" is progressing.`)
		r := runPlugin(ns, "rollout", "status", "web", "--watch=false")
		Expect(r).To(Equal(result{out: `Waiting for mydeployment "web" canary roll out to finish: step 3 of 5: 50%: 2 of 10 pods updated...` + "\n"}))

		atStep("4", 5, corev1.ConditionTrue, appsv1beta1.ReasonCanaryPaused, "step 4 of 5: paused until promote")
		r = runPlugin(ns, "rollout", "status", "web")
		Expect(r).To(Equal(result{out: "canary paused at step 4 of 5: paused until promote: 5 of 10 pods updated ('rollout promote web' goes on)\n"}),
			"a watch ends at a pause until promote")

		Expect(runPlugin(ns, "rollout", "promote", "web").code).To(Equal(0))
		r = runPlugin(ns, "rollout", "status", "web", "--watch=false")
		Expect(r).To(Equal(result{out: `Waiting for mydeployment "web" canary roll out to finish: step 4 of 5: promoted: 5 of 10 pods updated...` + "\n"}),
			"promoted, before the controller acts: not paused any more")
	})

	It("status shows the canary analysis' last values", func() {
		atStep("3", 5, corev1.ConditionTrue, appsv1beta1.ReasonCanaryPaused, "step 3 of 5: 50%, waiting for its analysis")
		msg := `step 3 of revision "web-2": success-rate = 0.995 (>= 0.99): 1 of 2 passed, 0 failed (limit 0)`
		setStatus(md, func(cur *appsv1beta1.MyDeployment) {
			cur.Status.Conditions = append(cur.Status.Conditions, appsv1.DeploymentCondition{Type: appsv1beta1.ConditionAnalysis,
				Status: corev1.ConditionUnknown, Reason: appsv1beta1.ReasonAnalysisRunning, Message: msg})
		})
		r := runPlugin(ns, "rollout", "status", "web", "--watch=false")
		Expect(r).To(Equal(result{out: `Waiting for mydeployment "web" canary roll out to finish: step 3 of 5: 50%: 5 of 10 pods updated...` + "\n" +
			"  analysis AnalysisRunning: " + msg + "\n"}))
	})

	It("status shows the route's stated and effective weight, as the Application recorded it", func() {
		cur := getMD(md) // an Application's MyDeployment: weight steps need one
		cur.OwnerReferences = []metav1.OwnerReference{{APIVersion: appsv1beta1.GroupVersion.String(), Kind: "Application",
			Name: "web", UID: "uid-web", Controller: ptr.To(true)}}
		Expect(k8sClient.Update(ctx, cur)).To(Succeed())
		md = getMD(md)
		setAnnotation(md, appsv1beta1.CanaryStepsAnnotation, "weight 10%, 1, weight 50%, 5, pause")
		setAnnotation(md, weights.RouteWeightAnnotation, `{"revision":"web-2","stated":50,"effective":10,"at":"2026-11-30T20:00:00Z"}`)
		atStep("4", 1, corev1.ConditionTrue, appsv1beta1.ReasonRevisionUpdated, `Revision "web-2" is progressing.`)
		r := runPlugin(ns, "rollout", "status", "web", "--watch=false")
		Expect(r).To(Equal(result{out: `Waiting for mydeployment "web" canary roll out to finish: step 4 of 5: 5: 1 of 10 pods updated...` + "\n" +
			"  route: 10% to the canary, of a stated 50% (capped by its Ready pods)\n"}))

		setAnnotation(md, weights.RouteWeightAnnotation, `{"revision":"web-1","stated":50,"effective":50,"at":"2026-11-30T19:00:00Z"}`)
		r = runPlugin(ns, "rollout", "status", "web", "--watch=false")
		Expect(r.out).NotTo(ContainSubstring("route:"), "a record of the last rollout says nothing of this one")
	})
})
