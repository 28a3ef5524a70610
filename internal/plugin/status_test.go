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
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/hooks"
	"github.com/mydeployment-io/mydeployment-operator/internal/status"
)

var _ = Describe("rollout status", func() {
	var (
		ns string
		md *appsv1beta1.MyDeployment
	)
	BeforeEach(func() {
		ns = newNamespace()
		md = createMD(ns, "web", "nginx:1", 5)
	})

	// observe plays the controller: status for the current generation.
	observe := func(replicas, updated, available int32) {
		setStatus(md, func(cur *appsv1beta1.MyDeployment) {
			cur.Status.ObservedGeneration = cur.Generation
			cur.Status.Replicas = replicas
			cur.Status.UpdatedReplicas = updated
			cur.Status.ReadyReplicas = available
			cur.Status.AvailableReplicas = available
		})
	}

	DescribeTable("prints kubectl's message for each stage",
		func(setup func(), want string) {
			setup()
			r := runPlugin(ns, "rollout", "status", "web", "--watch=false")
			Expect(r.code).To(Equal(0), r.err)
			Expect(r.out).To(Equal(want))
			Expect(r.err).To(BeEmpty())
		},
		Entry("spec not observed", func() {},
			"Waiting for deployment spec update to be observed...\n"),
		Entry("new replicas being updated", func() { observe(5, 2, 2) },
			`Waiting for mydeployment "web" rollout to finish: 2 out of 5 new replicas have been updated...`+"\n"),
		Entry("old replicas pending termination", func() { observe(6, 5, 5) },
			`Waiting for mydeployment "web" rollout to finish: 1 old replicas are pending termination...`+"\n"),
		Entry("updated replicas becoming available", func() { observe(5, 5, 2) },
			`Waiting for mydeployment "web" rollout to finish: 2 of 5 updated replicas are available...`+"\n"),
		Entry("rolled out", func() { observe(5, 5, 5) },
			`mydeployment "web" successfully rolled out`+"\n"),
	)

	It("watches until the rollout finishes, printing each new stage once, with a progress line while it waits", func() {
		observe(5, 2, 2)
		var out, errOut syncBuffer
		wait := start(ns, &out, &errOut, "rollout", "status", "web", "--timeout", "30s")
		Eventually(out.String).Should(ContainSubstring("2 out of 5 new replicas have been updated"))
		observe(5, 5, 3)
		Eventually(out.String).Should(ContainSubstring("3 of 5 updated replicas are available"))
		observe(5, 5, 5)
		Expect(wait()).To(Equal(0), errOut.String())
		Expect(out.String()).To(Equal(
			`Waiting for mydeployment "web" rollout to finish: 2 out of 5 new replicas have been updated...` + "\n" +
				"  2/5 updated, 2/5 ready, 2/5 available\n" +
				`Waiting for mydeployment "web" rollout to finish: 3 of 5 updated replicas are available...` + "\n" +
				"  5/5 updated, 3/5 ready, 3/5 available\n" +
				`mydeployment "web" successfully rolled out` + "\n"))
	})

	It("fails once the progress deadline is exceeded", func() {
		observe(5, 2, 2)
		var out, errOut syncBuffer
		wait := start(ns, &out, &errOut, "rollout", "status", "web")
		Eventually(out.String).Should(ContainSubstring("2 out of 5"))
		setStatus(md, func(cur *appsv1beta1.MyDeployment) {
			cur.Status.Conditions = append(cur.Status.Conditions,
				progressing(corev1.ConditionFalse, appsv1beta1.ReasonProgressDeadlineExceeded))
		})
		Expect(wait()).To(Equal(1))
		Expect(errOut.String()).To(Equal(`error: mydeployment "web" exceeded its progress deadline` + "\n"))
	})

	It("fails at once without --watch when the deadline was exceeded", func() {
		observe(5, 2, 2)
		setStatus(md, func(cur *appsv1beta1.MyDeployment) {
			cur.Status.Conditions = []appsv1.DeploymentCondition{
				progressing(corev1.ConditionFalse, appsv1beta1.ReasonProgressDeadlineExceeded)}
		})
		r := runPlugin(ns, "rollout", "status", "web", "--watch=false")
		Expect(r.code).To(Equal(1))
		Expect(r.out).To(BeEmpty())
		Expect(r.err).To(Equal(`error: mydeployment "web" exceeded its progress deadline` + "\n"))
	})

	It("fails at once when the rollout was aborted (on-failure Abort), saying so", func() {
		observe(5, 0, 5)
		setStatus(md, func(cur *appsv1beta1.MyDeployment) {
			c := progressing(corev1.ConditionFalse, appsv1beta1.ReasonRolloutAborted)
			c.Message = `Rollout to revision "web-2" aborted: no progress within progressDeadlineSeconds; every pod goes back to revision "web-1"`
			cur.Status.Conditions = []appsv1.DeploymentCondition{c}
		})
		r := runPlugin(ns, "rollout", "status", "web")
		Expect(r.code).To(Equal(1))
		Expect(r.out).To(BeEmpty())
		Expect(r.err).To(Equal(`error: mydeployment "web" rollout aborted: Rollout to revision "web-2" aborted: no progress within ` +
			`progressDeadlineSeconds; every pod goes back to revision "web-1" (run rollout retry to start it over)` + "\n"))
	})

	It("fails at once when a failed hook holds the rollout, saying which and how to go on", func() {
		observe(5, 0, 5)
		setStatus(md, func(cur *appsv1beta1.MyDeployment) {
			c := progressing(corev1.ConditionFalse, hooks.ReasonHookFailed)
			c.Message = "Job web-2-pre (pre) failed: BackoffLimitExceeded; `kubectl mydeployment rollout retry` runs it again"
			cur.Status.Conditions = []appsv1.DeploymentCondition{c}
		})
		r := runPlugin(ns, "rollout", "status", "web")
		Expect(r.code).To(Equal(1))
		Expect(r.err).To(Equal(`error: mydeployment "web" rollout held: HookFailed: Job web-2-pre (pre) failed: BackoffLimitExceeded; ` +
			"`kubectl mydeployment rollout retry` runs it again\n"))
	})

	It("says what a waiting module waits for: a hook's Job, a wave's bake, a step the weight holds", func() {
		observe(5, 0, 5)
		for reason, msg := range map[string]string{
			hooks.ReasonWaitingForHook:    "waiting for Job web-2-pre (pre) to succeed",
			status.ReasonWaveBaking:       "wave 1 of 3: zone-a, baking until 2026-11-30T14:00:00Z",
			appsv1beta1.ReasonWeightHolds: "step 5 of 6: 2, held by the weight: the stable side carries 80% and keeps 3 of 4 pods",
		} {
			setStatus(md, func(cur *appsv1beta1.MyDeployment) {
				c := progressing(corev1.ConditionTrue, reason)
				c.Message = msg
				cur.Status.Conditions = []appsv1.DeploymentCondition{c}
			})
			r := runPlugin(ns, "rollout", "status", "web", "--watch=false")
			Expect(r.code).To(Equal(0), r.err)
			Expect(r.out).To(HavePrefix(`Waiting for mydeployment "web" rollout to finish: ` + msg + "...\n"))
		}
	})

	It("fails when --timeout passes first", func() {
		observe(5, 5, 2)
		r := runPlugin(ns, "rollout", "status", "web", "--timeout", "300ms")
		Expect(r.code).To(Equal(1))
		Expect(r.out).To(Equal(`Waiting for mydeployment "web" rollout to finish: 2 of 5 updated replicas are available...` + "\n" +
			"  5/5 updated, 2/5 ready, 2/5 available\n"))
		Expect(r.err).To(Equal("error: timed out waiting for the condition\n"))
	})

	It("checks --revision against the revision annotation", func() {
		observe(5, 5, 5)
		setAnnotation(md, appsv1beta1.RevisionAnnotation, "3")
		r := runPlugin(ns, "rollout", "status", "web", "--revision", "2")
		Expect(r.code).To(Equal(1))
		Expect(r.err).To(Equal("error: desired revision (2) is different from the running revision (3)\n"))
		// Annotating bumps no generation: still observed.
		r = runPlugin(ns, "rollout", "status", "web", "--revision", "3")
		Expect(r.code).To(Equal(0), r.err)
		Expect(r.out).To(Equal(`mydeployment "web" successfully rolled out` + "\n"))
	})

	It("fails for a MyDeployment that does not exist", func() {
		r := runPlugin(ns, "rollout", "status", "nope")
		Expect(r.code).To(Equal(1))
		Expect(r.err).To(HavePrefix("error: "))
		Expect(strings.ToLower(r.err)).To(ContainSubstring(`"nope" not found`))
	})
})

var _ = Describe("rollout status of a partitioned rollout", func() {
	var (
		ns string
		md *appsv1beta1.MyDeployment
	)
	BeforeEach(func() {
		ns = newNamespace()
		md = createMD(ns, "web", "nginx:2", 10)
		setAnnotation(md, appsv1beta1.PartitionAnnotation, "8")
	})

	// rolling plays the controller mid-rollout from web-1 to web-2: status
	// for the current generation, with Progressing=True reason.
	rolling := func(replicas, updated, available int32, reason string) {
		setStatus(md, func(cur *appsv1beta1.MyDeployment) {
			cur.Status.ObservedGeneration = cur.Generation
			cur.Status.CurrentRevision, cur.Status.UpdateRevision = "web-1", "web-2"
			cur.Status.Replicas = replicas
			cur.Status.UpdatedReplicas = updated
			cur.Status.CurrentReplicas = replicas - updated
			cur.Status.ReadyReplicas = available
			cur.Status.AvailableReplicas = available
			cur.Status.Conditions = []appsv1.DeploymentCondition{progressing(corev1.ConditionTrue, reason)}
		})
	}
	status := func() result { return runPlugin(ns, "rollout", "status", "web", "--watch=false") }
	waiting := func(s string) string {
		return `Waiting for mydeployment "web" partitioned roll out to finish: ` + s + "\n"
	}

	It("is complete, exit 0, once the controller holds it at the partition", func() {
		rolling(10, 2, 10, appsv1beta1.ReasonPartitionAvailable)
		Expect(status()).To(Equal(result{out: "partitioned roll out complete: 2 of 10 pods updated\n"}))

		By("a percentage, rounded up: 75% of 10 holds 8")
		setAnnotation(md, appsv1beta1.PartitionAnnotation, "75%")
		Expect(status()).To(Equal(result{out: "partitioned roll out complete: 2 of 10 pods updated\n"}))
	})

	It("watches toward replicas-partition, not replicas, and exits 0 when held", func() {
		rolling(11, 1, 10, appsv1beta1.ReasonRevisionUpdated)
		var out, errOut syncBuffer
		wait := start(ns, &out, &errOut, "rollout", "status", "web", "--timeout", "30s")
		Eventually(out.String).Should(ContainSubstring("1 out of 2 new replicas have been updated"))
		rolling(11, 2, 10, appsv1beta1.ReasonRevisionUpdated)
		Eventually(out.String).Should(ContainSubstring("1 old replicas are pending termination"))
		rolling(10, 2, 9, appsv1beta1.ReasonRevisionUpdated)
		Eventually(out.String).Should(ContainSubstring("9 of 10 replicas are available"))
		rolling(10, 2, 10, appsv1beta1.ReasonPartitionAvailable)
		Expect(wait()).To(Equal(0), errOut.String())
		Expect(out.String()).To(Equal(
			waiting("1 out of 2 new replicas have been updated...") + "  1/10 updated, 10/10 ready, 10/10 available\n" +
				waiting("1 old replicas are pending termination...") + "  2/10 updated, 10/10 ready, 10/10 available\n" +
				waiting("9 of 10 replicas are available...") + "  2/10 updated, 9/10 ready, 9/10 available\n" +
				"partitioned roll out complete: 2 of 10 pods updated\n"))
	})

	It("is not complete at the previous value once the partition changes (an annotation bumps no generation)", func() {
		rolling(10, 2, 10, appsv1beta1.ReasonPartitionAvailable)

		By("lowered: more pods to update")
		setAnnotation(md, appsv1beta1.PartitionAnnotation, "5")
		Expect(status()).To(Equal(result{out: waiting("2 out of 5 new replicas have been updated...")}))

		By("raised: updated pods go back to the current revision")
		setAnnotation(md, appsv1beta1.PartitionAnnotation, "9")
		Expect(status()).To(Equal(result{out: waiting("1 updated replicas are pending return to the current revision...")}))

		By("promoted: Deployment's messages, toward every replica")
		patch := client.MergeFrom(md.DeepCopy())
		delete(md.Annotations, appsv1beta1.PartitionAnnotation)
		Expect(k8sClient.Patch(ctx, md, patch)).To(Succeed())
		Expect(status()).To(Equal(result{
			out: `Waiting for mydeployment "web" rollout to finish: 2 out of 10 new replicas have been updated...` + "\n"}))
	})

	It("says a rollout that is not under way is rolled out, partition or not", func() {
		setStatus(md, func(cur *appsv1beta1.MyDeployment) {
			cur.Status.ObservedGeneration = cur.Generation
			cur.Status.CurrentRevision, cur.Status.UpdateRevision = "web-2", "web-2"
			cur.Status.Replicas, cur.Status.UpdatedReplicas, cur.Status.AvailableReplicas = 10, 10, 10
		})
		Expect(status()).To(Equal(result{out: `mydeployment "web" successfully rolled out` + "\n"}))
	})

	It("still fails when the progress deadline is exceeded", func() {
		rolling(10, 1, 10, appsv1beta1.ReasonRevisionUpdated)
		setStatus(md, func(cur *appsv1beta1.MyDeployment) {
			cur.Status.Conditions = []appsv1.DeploymentCondition{
				progressing(corev1.ConditionFalse, appsv1beta1.ReasonProgressDeadlineExceeded)}
		})
		r := status()
		Expect(r.code).To(Equal(1))
		Expect(r.err).To(Equal(`error: mydeployment "web" exceeded its progress deadline` + "\n"))
	})
})
