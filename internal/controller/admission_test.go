package controller

import (
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/test/admission"
)

// The CRD's own validation (OpenAPI schema and CEL rules) is the admission
// for the basics: no webhook is needed to refuse these.
var _ = Describe("MyDeployment admission", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	// The table of invalid objects is shared with the webhook suite, which
	// runs every row with the webhook installed; here, with no webhook, the
	// rows the CRD alone must refuse.
	for _, c := range admission.Cases() {
		if c.By != admission.CRD {
			continue
		}
		It("refuses an invalid MyDeployment, naming the field: "+c.Name, func() {
			refusal, err := c.Submit(ctx, k8sClient, ns)
			Expect(err).NotTo(HaveOccurred())
			Expect(refusal.Error()).To(ContainSubstring(c.Field))
			Expect(strings.ToLower(refusal.Error())).To(ContainSubstring(strings.ToLower(c.Why)))
		})
	}

	It("accepts a selector at the bounds its CEL rules need (64 matchExpressions, 256 values each)", func() {
		md := admission.Valid(ns, "bounds")
		values := []string{"web"}
		for i := range 255 {
			values = append(values, fmt.Sprintf("v%d", i))
		}
		reqs := []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: values}}
		for i := range 63 {
			reqs = append(reqs, metav1.LabelSelectorRequirement{Key: fmt.Sprintf("k%d", i), Operator: metav1.LabelSelectorOpNotIn, Values: values})
		}
		md.Spec.Selector = &metav1.LabelSelector{MatchExpressions: reqs}
		Expect(k8sClient.Create(ctx, md)).To(Succeed())
	})

	It("defaults like a Deployment", func() {
		intstrp := func(v intstr.IntOrString) *intstr.IntOrString { return &v }
		By("a manifest without replicas or strategy, as kubectl applies it")
		raw := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps.mydeployment.io/v1beta1", "kind": "MyDeployment",
			"metadata": map[string]any{"name": "defaults", "namespace": ns},
			"spec": map[string]any{
				"selector": map[string]any{"matchLabels": map[string]any{"app": "d"}},
				"template": map[string]any{
					"metadata": map[string]any{"labels": map[string]any{"app": "d"}},
					"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx"}}},
				},
			},
		}}
		Expect(k8sClient.Create(ctx, raw)).To(Succeed())
		cur := &appsv1beta1.MyDeployment{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(raw), cur)).To(Succeed())
		Expect(cur.Spec.Replicas).To(HaveValue(BeEquivalentTo(1)))
		Expect(cur.Spec.RevisionHistoryLimit).To(HaveValue(BeEquivalentTo(10)))
		Expect(cur.Spec.ProgressDeadlineSeconds).To(HaveValue(BeEquivalentTo(600)))
		// Unlike a Deployment, no rollingUpdate block: a schema default cannot
		// depend on the type, and a block stored by default would make a later
		// `kubectl apply` of {type: Recreate} fail (see apply_test.go). The
		// rollout uses 25%/25% all the same.
		Expect(cur.Spec.Strategy).To(Equal(appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType}))

		By("a rollingUpdate with only maxSurge gets maxUnavailable 25%")
		partial := newMD(ns, "partial", 1, "nginx:1.27")
		partial.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: intstrp(intstr.FromInt32(2))}
		Expect(k8sClient.Create(ctx, partial)).To(Succeed())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(partial), cur)).To(Succeed())
		Expect(cur.Spec.Strategy.Type).To(Equal(appsv1.RollingUpdateDeploymentStrategyType))
		Expect(cur.Spec.Strategy.RollingUpdate.MaxSurge).To(HaveValue(Equal(intstr.FromInt32(2))))
		Expect(cur.Spec.Strategy.RollingUpdate.MaxUnavailable).To(HaveValue(Equal(intstr.FromString("25%"))))

		By("strategy {} gets type RollingUpdate and no rollingUpdate block either")
		bare := newMD(ns, "bare-strategy", 1, "nginx:1.27")
		bare.Spec.Strategy = appsv1.DeploymentStrategy{}
		Expect(k8sClient.Create(ctx, bare)).To(Succeed())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(bare), cur)).To(Succeed())
		Expect(cur.Spec.Strategy.Type).To(Equal(appsv1.RollingUpdateDeploymentStrategyType))
		Expect(cur.Spec.Strategy.RollingUpdate).To(BeNil())
	})
})
