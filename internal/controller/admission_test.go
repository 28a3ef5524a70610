package controller

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// The CRD's own validation (OpenAPI schema and CEL rules) is the admission
// for the basics: no webhook is needed to refuse these.
var _ = Describe("MyDeployment admission", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	intstrp := func(v intstr.IntOrString) *intstr.IntOrString { return &v }
	withRolling := func(surge, unavailable intstr.IntOrString) func(*appsv1beta1.MyDeployment) {
		return func(m *appsv1beta1.MyDeployment) {
			m.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: intstrp(surge), MaxUnavailable: intstrp(unavailable)}}
		}
	}

	DescribeTable("refuses an invalid MyDeployment, naming the field",
		func(change func(*appsv1beta1.MyDeployment), field, why string) {
			md := newMD(ns, "bad", 2, "nginx:1.27")
			change(md)
			err := k8sClient.Create(ctx, md)
			Expect(err).To(HaveOccurred())
			Expect(err.Error()).To(ContainSubstring(field))
			Expect(strings.ToLower(err.Error())).To(ContainSubstring(strings.ToLower(why)))
		},
		Entry("no selector", func(m *appsv1beta1.MyDeployment) { m.Spec.Selector = nil }, "spec.selector", "Required"),
		Entry("empty selector", func(m *appsv1beta1.MyDeployment) { m.Spec.Selector = &metav1.LabelSelector{} },
			"spec.selector", "empty selector"),
		Entry("selector not matching the template labels", func(m *appsv1beta1.MyDeployment) {
			m.Spec.Template.Labels = map[string]string{"app": "other"}
		}, "spec.template.metadata.labels", "does not match template"),
		Entry("template without labels", func(m *appsv1beta1.MyDeployment) { m.Spec.Template.Labels = nil },
			"spec.template.metadata.labels", "does not match template"),
		Entry("negative replicas", func(m *appsv1beta1.MyDeployment) { m.Spec.Replicas = ptr.To[int32](-1) },
			"spec.replicas", "greater than or equal to 0"),
		Entry("negative minReadySeconds", func(m *appsv1beta1.MyDeployment) { m.Spec.MinReadySeconds = -1 },
			"spec.minReadySeconds", "greater than or equal to 0"),
		Entry("negative revisionHistoryLimit", func(m *appsv1beta1.MyDeployment) { m.Spec.RevisionHistoryLimit = ptr.To[int32](-1) },
			"spec.revisionHistoryLimit", "greater than or equal to 0"),
		Entry("progressDeadlineSeconds not above minReadySeconds", func(m *appsv1beta1.MyDeployment) {
			m.Spec.MinReadySeconds, m.Spec.ProgressDeadlineSeconds = 10, ptr.To[int32](10)
		}, "spec.progressDeadlineSeconds", "greater than minReadySeconds"),
		Entry("maxSurge and maxUnavailable both 0", withRolling(intstr.FromInt32(0), intstr.FromInt32(0)),
			"spec.strategy.rollingUpdate.maxUnavailable", "may not be 0 when `maxSurge` is 0"),
		Entry("maxSurge and maxUnavailable both 0%", withRolling(intstr.FromString("0%"), intstr.FromString("0%")),
			"spec.strategy.rollingUpdate.maxUnavailable", "may not be 0"),
		Entry("negative maxSurge", withRolling(intstr.FromInt32(-1), intstr.FromInt32(1)),
			"spec.strategy.rollingUpdate.maxSurge", "non-negative integer or a percent"),
		Entry("maxSurge not a percent", withRolling(intstr.FromString("25"), intstr.FromInt32(1)),
			"spec.strategy.rollingUpdate.maxSurge", "non-negative integer or a percent"),
		Entry("maxUnavailable over 100%", withRolling(intstr.FromInt32(1), intstr.FromString("101%")),
			"spec.strategy.rollingUpdate.maxUnavailable", "not be greater than 100%"),
		Entry("rollingUpdate with Recreate", func(m *appsv1beta1.MyDeployment) {
			m.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: intstrp(intstr.FromInt32(1))}}
		}, "spec.strategy.rollingUpdate", "may not be specified when strategy `type` is 'Recreate'"),
		Entry("unknown strategy type", func(m *appsv1beta1.MyDeployment) { m.Spec.Strategy.Type = "BlueGreen" },
			"spec.strategy.type", "Unsupported value"),
		Entry("restartPolicy Never", func(m *appsv1beta1.MyDeployment) { m.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever },
			"spec.template.spec.restartPolicy", "only \"Always\""),
		Entry("no containers", func(m *appsv1beta1.MyDeployment) { m.Spec.Template.Spec.Containers = nil },
			"spec.template.spec.containers", "Required"),
		Entry("label value too long", func(m *appsv1beta1.MyDeployment) {
			long := strings.Repeat("x", 64)
			m.Spec.Selector.MatchLabels["app"], m.Spec.Template.Labels["app"] = long, long
		}, "spec.selector.matchLabels.app", "may not be more than 63"),
	)

	It("refuses a selector change after creation", func() {
		md := newMD(ns, "fixed", 1, "nginx:1.27")
		Expect(k8sClient.Create(ctx, md)).To(Succeed())
		// The controller writes the object too (its revision annotation): retry conflicts.
		var err error
		Eventually(func() bool {
			cur := get(md)
			cur.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "fixed", "tier": "web"}}
			cur.Spec.Template.Labels["tier"] = "web"
			err = k8sClient.Update(ctx, cur)
			return apierrors.IsConflict(err)
		}, timeout, interval).Should(BeFalse())
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(And(ContainSubstring("spec.selector"), ContainSubstring("field is immutable")))
	})

	It("defaults like a Deployment", func() {
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
		Expect(cur.Spec.Strategy.Type).To(Equal(appsv1.RollingUpdateDeploymentStrategyType))
		Expect(cur.Spec.Strategy.RollingUpdate).NotTo(BeNil())
		Expect(cur.Spec.Strategy.RollingUpdate.MaxSurge).To(HaveValue(Equal(intstr.FromString("25%"))))
		Expect(cur.Spec.Strategy.RollingUpdate.MaxUnavailable).To(HaveValue(Equal(intstr.FromString("25%"))))

		By("a rollingUpdate with only maxSurge gets maxUnavailable 25%")
		partial := newMD(ns, "partial", 1, "nginx:1.27")
		partial.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: intstrp(intstr.FromInt32(2))}
		Expect(k8sClient.Create(ctx, partial)).To(Succeed())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(partial), cur)).To(Succeed())
		Expect(cur.Spec.Strategy.Type).To(Equal(appsv1.RollingUpdateDeploymentStrategyType))
		Expect(cur.Spec.Strategy.RollingUpdate.MaxSurge).To(HaveValue(Equal(intstr.FromInt32(2))))
		Expect(cur.Spec.Strategy.RollingUpdate.MaxUnavailable).To(HaveValue(Equal(intstr.FromString("25%"))))
	})
})
