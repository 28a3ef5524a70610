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
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

var _ = Describe("rollout partition and promote", func() {
	var (
		ns string
		md *appsv1beta1.MyDeployment
	)
	BeforeEach(func() {
		ns = newNamespace()
		md = createMD(ns, "web", "nginx:1", 10)
		setAnnotation(md, appsv1beta1.RevisionAnnotation, "3")
	})

	It("sets the partition annotation, says so, and writes nothing when it already has that value", func() {
		r := runPlugin(ns, "rollout", "partition", "web", "8")
		Expect(r).To(Equal(result{out: "mydeployment.apps.mydeployment.io/web partitioned at 8\n"}))
		got := getMD(md)
		Expect(got.Annotations).To(HaveKeyWithValue(appsv1beta1.PartitionAnnotation, "8"))
		Expect(got.Annotations).To(HaveKeyWithValue(appsv1beta1.RevisionAnnotation, "3"), "a merge patch of one annotation")
		Expect(got.Generation).To(Equal(md.Generation), "the spec is not touched")

		r = runPlugin(ns, "rollout", "partition", "md/web", "8")
		Expect(r).To(Equal(result{out: "mydeployment.apps.mydeployment.io/web already partitioned at 8\n"}))
		Expect(getMD(md).ResourceVersion).To(Equal(got.ResourceVersion))

		r = runPlugin(ns, "rollout", "partition", "web", "80%")
		Expect(r).To(Equal(result{out: "mydeployment.apps.mydeployment.io/web partitioned at 80%\n"}))
		Expect(getMD(md).Annotations).To(HaveKeyWithValue(appsv1beta1.PartitionAnnotation, "80%"))
	})

	DescribeTable("refuses a value optin refuses, before any write",
		func(value string) {
			setAnnotation(md, appsv1beta1.PartitionAnnotation, "5")
			before := getMD(md)
			r := runPlugin(ns, "rollout", "partition", "web", "--", value)
			Expect(r.code).To(Equal(1))
			Expect(r.out).To(BeEmpty())
			Expect(r.err).To(Equal(`error: invalid partition "` + value +
				`": must be a non-negative integer ("8") or a percentage from 0% to 100% ("80%")` + "\n"))
			Expect(getMD(md).ResourceVersion).To(Equal(before.ResourceVersion))
		},
		Entry("negative", "-1"),
		Entry("over 100%", "101%"),
		Entry("not a number", "half"),
		Entry("empty", ""),
		Entry("a fraction", "2.5"),
	)

	It("validates the value before looking the MyDeployment up", func() {
		r := runPlugin(ns, "rollout", "partition", "nope", "half")
		Expect(r.code).To(Equal(1))
		Expect(r.err).To(HavePrefix(`error: invalid partition "half"`))
	})

	It("refuses a Recreate MyDeployment with the webhook's message", func() {
		recreate := createMD(ns, "batch", "nginx:1", 3)
		patch := client.MergeFrom(recreate.DeepCopy())
		recreate.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
		Expect(k8sClient.Patch(ctx, recreate, patch)).To(Succeed())

		r := runPlugin(ns, "rollout", "partition", "batch", "1")
		Expect(r.code).To(Equal(1))
		Expect(r.out).To(BeEmpty())
		Expect(r.err).To(Equal(`error: cannot partition mydeployment "batch": metadata.annotations[apps.mydeployment.io/partition]: ` +
			"Forbidden: a partition needs spec.strategy.type RollingUpdate: Recreate replaces every pod at once\n"))
		Expect(getMD(recreate).Annotations).NotTo(HaveKey(appsv1beta1.PartitionAnnotation))
	})

	It("promote removes the partition and says so; without one it says not partitioned", func() {
		Expect(runPlugin(ns, "rollout", "partition", "web", "8").code).To(Equal(0))
		r := runPlugin(ns, "rollout", "promote", "web")
		Expect(r).To(Equal(result{out: "mydeployment.apps.mydeployment.io/web promoted: partition 8 removed\n"}))
		got := getMD(md)
		Expect(got.Annotations).NotTo(HaveKey(appsv1beta1.PartitionAnnotation))
		Expect(got.Annotations).To(HaveKeyWithValue(appsv1beta1.RevisionAnnotation, "3"))

		r = runPlugin(ns, "rollout", "promote", "web")
		Expect(r).To(Equal(result{out: "mydeployment.apps.mydeployment.io/web not partitioned\n"}))
		Expect(getMD(md).ResourceVersion).To(Equal(got.ResourceVersion))
	})

	It("fails for a MyDeployment that does not exist", func() {
		for _, args := range [][]string{{"partition", "nope", "2"}, {"promote", "nope"}} {
			r := runPlugin(ns, append([]string{"rollout"}, args...)...)
			Expect(r.code).To(Equal(1))
			Expect(r.err).To(ContainSubstring(`"nope" not found`))
		}
	})
})
