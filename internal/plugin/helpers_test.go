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
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/revision"
)

// newNamespace creates a namespace for one test and deletes it afterwards.
func newNamespace() string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "plugin-"}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, ns))).To(Succeed()) })
	return ns.Name
}

// podTemplate is the template of an app called name running image.
func podTemplate(name, image string) *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}},
	}
}

// createMD creates a MyDeployment of replicas pods running image.
func createMD(ns, name, image string, replicas int32) *appsv1beta1.MyDeployment {
	md := &appsv1beta1.MyDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1beta1.MyDeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: *podTemplate(name, image),
		},
	}
	Expect(k8sClient.Create(ctx, md)).To(Succeed())
	return md
}

// createRevision records image's template as revision number of md, with a
// change-cause unless cause is empty, as the controller would.
func createRevision(md *appsv1beta1.MyDeployment, image string, number int64, cause string) *appsv1.ControllerRevision {
	var annotations map[string]string
	if cause != "" {
		annotations = map[string]string{appsv1beta1.ChangeCauseAnnotation: cause}
	}
	rev, err := revision.New(revision.Owner{
		Object:      md,
		GVK:         appsv1beta1.GroupVersion.WithKind("MyDeployment"),
		Selector:    md.Spec.Selector,
		Template:    podTemplate(md.Name, image),
		Annotations: annotations,
	}, number, 0)
	Expect(err).NotTo(HaveOccurred())
	Expect(k8sClient.Create(ctx, rev)).To(Succeed())
	return rev
}

// getMD reads md back from the API server.
func getMD(md *appsv1beta1.MyDeployment) *appsv1beta1.MyDeployment {
	got := &appsv1beta1.MyDeployment{}
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(md), got)).To(Succeed())
	return got
}

// setStatus plays the controller: it applies fn to md's status.
func setStatus(md *appsv1beta1.MyDeployment, fn func(*appsv1beta1.MyDeployment)) {
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := &appsv1beta1.MyDeployment{}
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(md), cur); err != nil {
			return err
		}
		fn(cur)
		return k8sClient.Status().Update(ctx, cur)
	})).To(Succeed())
}

// setAnnotation sets an annotation on md's metadata.
func setAnnotation(md *appsv1beta1.MyDeployment, key, value string) {
	patch := client.MergeFrom(md.DeepCopy())
	if md.Annotations == nil {
		md.Annotations = map[string]string{}
	}
	md.Annotations[key] = value
	Expect(k8sClient.Patch(ctx, md, patch)).To(Succeed())
}

// progressing is a Progressing condition with reason.
func progressing(status corev1.ConditionStatus, reason string) appsv1.DeploymentCondition {
	return appsv1.DeploymentCondition{
		Type: appsv1beta1.ConditionProgressing, Status: status, Reason: reason,
		LastUpdateTime: metav1.Now(), LastTransitionTime: metav1.Now(),
	}
}
