package controller

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/test/admission"
)

// A spec admission would refuse can still reach the controller: created with
// the webhook off (make run-local, the e2e suite), or stored before a rule
// existed. It must be a condition and an event, not a retry loop, and the
// status must keep saying what runs.
var _ = Describe("A spec that can never work, past admission", Serial, func() {
	It("reports a template its matchExpressions selector no longer selects, without an error loop, keeping its counts", func() {
		ns := newNamespace()
		md := newMD(ns, "drift", 1, "nginx:1.27")
		md.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"drift"}}}}
		createReady(md)
		pod := podsOf(md)[0]

		By("the template's labels change while the CRD lacks its selector rules (an object stored before them)")
		errorsBefore := reconcileErrors()
		withoutSelectorRules(func() {
			update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Template.Labels = map[string]string{"app": "other"} })
		})

		By("ReplicaFailure names the field, with an event")
		Eventually(func() string {
			if c := condition(get(md), appsv1beta1.ConditionReplicaFailure); c != nil && c.Status == corev1.ConditionTrue {
				return c.Reason + ": " + c.Message
			}
			return ""
		}, timeout, interval).Should(And(HavePrefix(appsv1beta1.ReasonInvalidSelector+": "),
			ContainSubstring("spec.template.metadata.labels"), ContainSubstring("does not match template")))
		Eventually(func() []string { return eventReasons(md) }, timeout, interval).Should(ContainElement(appsv1beta1.ReasonInvalidSelector))

		By("no error loop, no pod written, and the status still counts the pod that runs")
		Consistently(func(g Gomega) {
			g.Expect(reconcileErrors()).To(Equal(errorsBefore))
			cur := get(md)
			g.Expect(cur.Status.Replicas).To(BeEquivalentTo(1))
			g.Expect(cur.Status.AvailableReplicas).To(BeEquivalentTo(1))
			pods := podsOf(md)
			g.Expect(pods).To(HaveLen(1))
			g.Expect(pods[0].UID).To(Equal(pod.UID))
		}, 5*time.Second, 250*time.Millisecond).Should(Succeed())
		Expect(strings.Count(strings.Join(eventReasons(md), ","), appsv1beta1.ReasonInvalidSelector)).To(Equal(1),
			"one event, not one per sync")

		By("a template the selector selects again clears the failure")
		update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Template.Labels = map[string]string{"app": "drift"} })
		Eventually(func() any { return condition(get(md), appsv1beta1.ConditionReplicaFailure) }, timeout, interval).Should(BeNil())
		complete(md)
	})

	It("reports a strategy that gives no pod count as InvalidStrategy, not InvalidSelector", func() {
		ns := newNamespace()
		// Admitted (a percent within int32), but 2147483647% of 200 replicas is no int32.
		md := rolling(newMD(ns, "huge-surge", 200, "nginx:1.27"), intstr.FromString("2147483647%"), intstr.FromInt32(1))
		errorsBefore := reconcileErrors()
		Expect(k8sClient.Create(ctx, md)).To(Succeed())
		Eventually(func() string {
			if c := condition(get(md), appsv1beta1.ConditionReplicaFailure); c != nil && c.Status == corev1.ConditionTrue {
				return c.Reason + ": " + c.Message
			}
			return ""
		}, timeout, interval).Should(And(HavePrefix(appsv1beta1.ReasonInvalidStrategy+": "),
			ContainSubstring("spec.strategy.rollingUpdate"), ContainSubstring("maxSurge")))
		Eventually(func() []string { return eventReasons(md) }, timeout, interval).Should(ContainElement(appsv1beta1.ReasonInvalidStrategy))
		Expect(eventReasons(md)).NotTo(ContainElement(appsv1beta1.ReasonInvalidSelector))
		Consistently(func(g Gomega) {
			g.Expect(reconcileErrors()).To(Equal(errorsBefore))
			g.Expect(podsOf(md)).To(BeEmpty())
		}, 2*time.Second, 250*time.Millisecond).Should(Succeed())
	})
})

// reconcileErrors is controller-runtime's controller_runtime_reconcile_errors_total
// for our controller.
func reconcileErrors() float64 {
	families, err := ctrlmetrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_errors_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == "mydeployment" {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// withoutSelectorRules runs change with the CRD's rules that the selector
// match the template labels removed, as on a cluster whose objects were
// stored before them, and puts the CRD back.
func withoutSelectorRules(change func()) {
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	key := client.ObjectKey{Name: "mydeployments." + appsv1beta1.GroupVersion.Group}
	Expect(k8sClient.Get(ctx, key, crd)).To(Succeed())
	original := crd.Object["spec"]
	restore := func() {
		Eventually(func() error {
			cur := crd.DeepCopy()
			if err := k8sClient.Get(ctx, key, cur); err != nil {
				return err
			}
			cur.Object["spec"] = runtime.DeepCopyJSONValue(original)
			return k8sClient.Update(ctx, cur)
		}, timeout, interval).Should(Succeed())
		mismatch := admission.Valid("default", "probe")
		mismatch.Spec.Template.Labels = map[string]string{"app": "other"}
		Eventually(func() error { return k8sClient.Create(ctx, mismatch.DeepCopy(), client.DryRunAll) }, timeout, interval).
			Should(MatchError(ContainSubstring("does not match template")), "the rules are back")
	}
	DeferCleanup(restore)

	edited := crd.DeepCopy()
	versions, _, _ := unstructured.NestedSlice(edited.Object, "spec", "versions")
	Expect(versions).To(HaveLen(1))
	path := []string{"schema", "openAPIV3Schema", "properties", "spec", "x-kubernetes-validations"}
	rules, _, err := unstructured.NestedSlice(versions[0].(map[string]any), path...)
	Expect(err).NotTo(HaveOccurred())
	var kept []any
	for _, r := range rules {
		if msg, _ := r.(map[string]any)["message"].(string); !strings.Contains(msg, "does not match template") {
			kept = append(kept, r)
		}
	}
	Expect(kept).To(HaveLen(len(rules)-2), "the matchLabels and matchExpressions rules")
	Expect(unstructured.SetNestedSlice(versions[0].(map[string]any), kept, path...)).To(Succeed())
	Expect(unstructured.SetNestedSlice(edited.Object, versions, "spec", "versions")).To(Succeed())
	Expect(k8sClient.Update(ctx, edited)).To(Succeed())
	change() // update retries until the API server serves the changed CRD
	restore()
}
