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

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

var _ = Describe("rollout retry", func() {
	It("removes the abort record and sets retried-at to now, leaving the spec alone", func() {
		ns := newNamespace()
		md := createMD(ns, "web", "nginx:1", 3)
		setAnnotation(md, appsv1beta1.OnFailureAnnotation, appsv1beta1.OnFailureAbort)
		setAnnotation(md, appsv1beta1.AbortedRevisionAnnotation, "web-2")
		before := getMD(md)

		r := runPlugin(ns, "rollout", "retry", "web")
		Expect(r).To(Equal(result{out: "mydeployment.apps.mydeployment.io/web retried\n"}))
		got := getMD(md)
		Expect(got.Annotations).NotTo(HaveKey(appsv1beta1.AbortedRevisionAnnotation))
		Expect(got.Annotations).To(HaveKeyWithValue(appsv1beta1.RetriedAtAnnotation, "2026-01-02T03:04:05Z"))
		Expect(got.Annotations).To(HaveKeyWithValue(appsv1beta1.OnFailureAnnotation, appsv1beta1.OnFailureAbort))
		Expect(got.Generation).To(Equal(before.Generation), "the spec is not changed")

		By("refusing a second retry within the same second, as restart does")
		setAnnotation(got, appsv1beta1.AbortedRevisionAnnotation, "web-2")
		r = runPlugin(ns, "rollout", "retry", "web")
		Expect(r.code).To(Equal(1))
		Expect(r.err).To(ContainSubstring("retried within the past second"))
	})

	It("retries a rollout past its deadline that is not aborted yet", func() {
		ns := newNamespace()
		md := createMD(ns, "web", "nginx:1", 3)
		setStatus(md, func(cur *appsv1beta1.MyDeployment) {
			cur.Status.Conditions = []appsv1.DeploymentCondition{progressing(corev1.ConditionFalse, appsv1beta1.ReasonProgressDeadlineExceeded)}
		})
		Expect(runPlugin(ns, "rollout", "retry", "web").code).To(Equal(0))
		Expect(getMD(md).Annotations).To(HaveKey(appsv1beta1.RetriedAtAnnotation))
	})

	It("retries a rollout a failed hook holds (Progressing False HookFailed)", func() {
		ns := newNamespace()
		md := createMD(ns, "web", "nginx:1", 3)
		setStatus(md, func(cur *appsv1beta1.MyDeployment) {
			cur.Status.Conditions = []appsv1.DeploymentCondition{progressing(corev1.ConditionFalse, "HookFailed")}
		})
		Expect(runPlugin(ns, "rollout", "retry", "web").code).To(Equal(0))
		Expect(getMD(md).Annotations).To(HaveKey(appsv1beta1.RetriedAtAnnotation))
	})

	It("refuses a MyDeployment that is not aborted", func() {
		ns := newNamespace()
		createMD(ns, "web", "nginx:1", 3)
		r := runPlugin(ns, "rollout", "retry", "web")
		Expect(r.code).To(Equal(1))
		Expect(r.err).To(Equal("error: mydeployment \"web\" is not aborted: nothing to retry\n"))
	})
})
