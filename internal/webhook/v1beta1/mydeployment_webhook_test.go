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

package v1beta1

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/podreplacement"
)

func newMD(ns string) *appsv1beta1.MyDeployment {
	labels := map[string]string{"app": "web"}
	return &appsv1beta1.MyDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "web-"},
		Spec: appsv1beta1.MyDeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
			},
		},
	}
}

var _ = Describe("MyDeployment webhook", func() {
	var ns string
	BeforeEach(func() {
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "webhook-"}}
		Expect(k8sClient.Create(ctx, n)).To(Succeed())
		ns = n.Name
	})

	It("accepts a template kube-apiserver accepts as a Pod, and creates no Pod doing so", func() {
		Expect(k8sClient.Create(ctx, newMD(ns))).To(Succeed())
		var pods corev1.PodList
		Expect(k8sClient.List(ctx, &pods, client.InNamespace(ns))).To(Succeed())
		Expect(pods.Items).To(BeEmpty(), "the check is a dry run")
	})

	// The templates it refuses are rows of the admission table (admission_table_test.go),
	// and so are the opt-in values it refuses.

	It("names a bad annotation and a bad template in one admission answer", func() {
		md := newMD(ns)
		md.Annotations = map[string]string{appsv1beta1.PartitionAnnotation: "-1"}
		md.Spec.Template.Spec.Containers[0].Name = "Bad_Name"
		err := k8sClient.Create(ctx, md)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(And(
			ContainSubstring(`metadata.annotations[apps.mydeployment.io/partition]: Invalid value: "-1"`),
			ContainSubstring("spec.template.spec.containers[0].name")))
	})

	It("passes admission with valid opt-in annotations, on create and on update", func() {
		for _, a := range []map[string]string{
			{appsv1beta1.PartitionAnnotation: "8"},
			{appsv1beta1.PartitionAnnotation: "80%"},
			{appsv1beta1.PartitionAnnotation: "0"},
			{appsv1beta1.PartitionAnnotation: "100%", appsv1beta1.RespectPDBAnnotation: "true"},
			{appsv1beta1.RespectPDBAnnotation: "false"},
			{appsv1beta1.RolloutOnConfigChangeAnnotation: "true"},
			{appsv1beta1.RolloutOnConfigChangeAnnotation: "false", appsv1beta1.PartitionAnnotation: "1"},
			{podreplacement.Annotation: podreplacement.TerminationComplete},
			{podreplacement.Annotation: podreplacement.TerminationStarted},
		} {
			md := newMD(ns)
			md.Annotations = a
			Expect(k8sClient.Create(ctx, md)).To(Succeed(), "create with %v", a)

			plain := newMD(ns)
			Expect(k8sClient.Create(ctx, plain)).To(Succeed())
			plain.Annotations = a
			Expect(k8sClient.Update(ctx, plain)).To(Succeed(), "update to %v", a)
		}

		By("Recreate once the partition is removed")
		md := newMD(ns)
		md.Annotations = map[string]string{appsv1beta1.PartitionAnnotation: "1"}
		Expect(k8sClient.Create(ctx, md)).To(Succeed())
		md.Annotations = nil
		md.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
		Expect(k8sClient.Update(ctx, md)).To(Succeed())

		By("TerminationComplete with Recreate: it holds a deleted pod's replacement, which Recreate does not")
		md.Annotations = map[string]string{podreplacement.Annotation: podreplacement.TerminationComplete}
		Expect(k8sClient.Update(ctx, md)).To(Succeed())
	})

	It("checks a changed template on update, and not an unchanged one", func() {
		md := newMD(ns)
		Expect(k8sClient.Create(ctx, md)).To(Succeed())
		bad := md.DeepCopy()
		bad.Spec.Template.Spec.Containers[0].Name = "Bad_Name"
		err := k8sClient.Update(ctx, bad)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("spec.template.spec.containers[0].name"))

		scaled := md.DeepCopy()
		scaled.Spec.Replicas = ptr.To[int32](3)
		Expect(k8sClient.Update(ctx, scaled)).To(Succeed())
	})
})
