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
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
)

// goldenStatus is get's table with one MyDeployment in each state STATUS
// names (UPDATE_GOLDEN=1 rewrites it).
var goldenStatus = filepath.Join("testdata", "get-status.golden")

// rolled plays the controller: status for the current generation with
// replicas pods, updated and available of them, revisions web-1 (current)
// and web-2 (update) unless done, and conds.
func rolled(md *appsv1beta1.MyDeployment, replicas, updated, available int32, done bool, conds ...appsv1.DeploymentCondition) {
	setStatus(md, func(cur *appsv1beta1.MyDeployment) {
		cur.Status.ObservedGeneration = cur.Generation
		cur.Status.CurrentRevision, cur.Status.UpdateRevision = md.Name+"-1", md.Name+"-2"
		if done {
			cur.Status.CurrentRevision = md.Name + "-2"
		}
		cur.Status.Replicas, cur.Status.UpdatedReplicas = replicas, updated
		cur.Status.ReadyReplicas, cur.Status.AvailableReplicas = available, available
		cur.Status.Conditions = conds
	})
}

func cond(t appsv1.DeploymentConditionType, status corev1.ConditionStatus, reason string) appsv1.DeploymentCondition {
	c := progressing(status, reason)
	c.Type = t
	return c
}

// cordonedNodeWithPodOf creates a cordoned node and a pod of md on it, as
// the scheduler and the controller would have left them.
func cordonedNodeWithPodOf(md *appsv1beta1.MyDeployment) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{GenerateName: "draining-"}, Spec: corev1.NodeSpec{Unschedulable: true}}
	Expect(k8sClient.Create(ctx, node)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, node))).To(Succeed()) })
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: md.Namespace, Name: md.Name + "-a", Labels: md.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(md, appsv1beta1.GroupVersion.WithKind("MyDeployment"))}},
		Spec: corev1.PodSpec{NodeName: node.Name, Containers: md.Spec.Template.Spec.Containers},
	}
	Expect(k8sClient.Create(ctx, pod)).To(Succeed())
}

var _ = Describe("get's STATUS column", func() {
	It("names the state a user must act on, for each state (golden)", func() {
		ns := newNamespace()
		available := func(reason string) appsv1.DeploymentCondition {
			return cond(appsv1beta1.ConditionProgressing, corev1.ConditionTrue, reason)
		}
		md := func(name string, annotations ...string) *appsv1beta1.MyDeployment {
			m := createMD(ns, name, "nginx:2", 4)
			for i := 0; i+1 < len(annotations); i += 2 {
				setAnnotation(m, annotations[i], annotations[i+1])
			}
			return m
		}

		rolled(md("a-available"), 4, 4, 4, true, available(appsv1beta1.ReasonNewRevisionAvailable))
		rolled(md("b-progressing"), 5, 2, 4, false, available(appsv1beta1.ReasonRevisionUpdated))
		paused := md("c-paused")
		paused.Spec.Paused = true
		Expect(k8sClient.Update(ctx, paused)).To(Succeed())
		rolled(paused, 4, 1, 4, false, cond(appsv1beta1.ConditionProgressing, corev1.ConditionUnknown, appsv1beta1.ReasonPaused))
		rolled(md("d-held", appsv1beta1.PartitionAnnotation, "3"), 4, 1, 4, false, available(appsv1beta1.ReasonPartitionAvailable))
		rolled(md("e-canary", appsv1beta1.CanaryStepsAnnotation, "1, pause, 100%",
			appsv1beta1.CanaryStepAnnotation, rollout.CanaryState{Revision: "e-canary-2", Index: 1}.String()),
			4, 1, 4, false, available(appsv1beta1.ReasonCanaryPaused))
		rolled(md("f-aborted", appsv1beta1.RevisionAnnotation, "3", appsv1beta1.AbortedRevisionAnnotation, "f-aborted-2"),
			4, 0, 4, false, cond(appsv1beta1.ConditionProgressing, corev1.ConditionFalse, appsv1beta1.ReasonRolloutAborted))
		rolled(md("g-config-missing"), 4, 4, 4, true, available(appsv1beta1.ReasonNewRevisionAvailable),
			cond(appsv1beta1.ConditionReplicaFailure, corev1.ConditionTrue, appsv1beta1.ReasonConfigMissing))
		rolled(md("h-config-denied"), 4, 4, 4, true, available(appsv1beta1.ReasonNewRevisionAvailable),
			cond(appsv1beta1.ConditionReplicaFailure, corev1.ConditionTrue, appsv1beta1.ReasonConfigAccessDenied))
		rolled(md("i-handover"), 0, 0, 0, false, available(appsv1beta1.ReasonWaitingForHandOver))
		rolled(md("j-deadline"), 5, 1, 4, false, cond(appsv1beta1.ConditionProgressing, corev1.ConditionFalse, appsv1beta1.ReasonProgressDeadlineExceeded))
		rolled(md("k-failed-create"), 3, 3, 3, false, available(appsv1beta1.ReasonRevisionUpdated),
			cond(appsv1beta1.ConditionReplicaFailure, corev1.ConditionTrue, appsv1beta1.ReasonFailedCreate))
		draining := md("l-draining", appsv1beta1.DrainAnnotation, appsv1beta1.DrainSurgeFirst)
		rolled(draining, 4, 4, 4, true, available(appsv1beta1.ReasonNewRevisionAvailable))
		cordonedNodeWithPodOf(draining)
		rolled(md("m-scaling"), 2, 2, 2, true, available(appsv1beta1.ReasonNewRevisionAvailable))

		var newest time.Time
		var l appsv1beta1.MyDeploymentList
		Expect(k8sClient.List(ctx, &l, client.InNamespace(ns))).To(Succeed())
		for _, m := range l.Items {
			if m.CreationTimestamp.After(newest) {
				newest = m.CreationTimestamp.Time
			}
		}
		prev := testNow
		testNow = func() time.Time { return newest.Add(time.Hour) }
		DeferCleanup(func() { testNow = prev })

		r := runPlugin(ns, "get")
		Expect(r.code).To(Equal(0), r.err)
		if os.Getenv("UPDATE_GOLDEN") == "1" {
			Expect(os.WriteFile(goldenStatus, []byte(r.out), 0o644)).To(Succeed())
		}
		golden, err := os.ReadFile(goldenStatus)
		Expect(err).NotTo(HaveOccurred())
		Expect(r.out).To(Equal(string(golden)), "UPDATE_GOLDEN=1 rewrites %s", goldenStatus)
	})

	It("does not say Draining for an object that does not opt into drain", func() {
		ns := newNamespace()
		m := createMD(ns, "web", "nginx:2", 1)
		rolled(m, 1, 1, 1, true, cond(appsv1beta1.ConditionProgressing, corev1.ConditionTrue, appsv1beta1.ReasonNewRevisionAvailable))
		cordonedNodeWithPodOf(m)
		Expect(rows(runPlugin(ns, "get").out)[1][5]).To(Equal("Available"))
	})
})
