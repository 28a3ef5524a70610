package v1beta1

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/test/admission"
)

// Every row of the Application admission table against a real
// kube-apiserver with the CRDs and the webhooks installed: each invalid
// Application is refused, by the part of admission the row says, naming
// its field.
var _ = Describe("Admission of invalid Applications", func() {
	var ns string
	BeforeEach(func() {
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "invalid-app-"}}
		Expect(k8sClient.Create(ctx, n)).To(Succeed())
		ns = n.Name
	})

	It("accepts the valid Application", func() {
		Expect(k8sClient.Create(ctx, admission.ValidApp(ns, "shop"))).To(Succeed())
	})

	It("accepts the valid Application in the five-line form", func() {
		Expect(k8sClient.Create(ctx, admission.FiveLineApp(ns, "shop"))).To(Succeed())
	})

	It("accepts a routed Application whose name leaves room for its canary Services, and the canary steps it passes on", func() {
		app := admission.ValidApp(ns, strings.Repeat("a", 56))
		app.Spec.Route = admission.RouteTo(app.Name)
		app.Spec.Deployment.Metadata = &appsv1beta1.ChildMetadata{Annotations: map[string]string{
			appsv1beta1.CanaryStepsAnnotation: "10%, pause, 50%, pause, 100%"}}
		Expect(k8sClient.Create(ctx, app)).To(Succeed())
	})

	It("accepts a routed Application with weight steps (its MyDeployment is the Application's)", func() {
		app := admission.ValidApp(ns, "weighed")
		app.Spec.Route = admission.RouteTo(app.Name)
		app.Spec.Deployment.Metadata = &appsv1beta1.ChildMetadata{Annotations: map[string]string{
			appsv1beta1.CanaryStepsAnnotation: "weight 2%, 1, pause, weight 10%, pause, weight 50%, 50%, pause"}}
		Expect(k8sClient.Create(ctx, app)).To(Succeed())
	})

	for _, c := range admission.AppCases() {
		It("refuses: "+c.Name, func() {
			refusal, err := c.Submit(ctx, k8sClient, ns)
			Expect(err).NotTo(HaveOccurred())
			msg := refusal.Error()
			Expect(msg).To(ContainSubstring(c.Field))
			Expect(strings.ToLower(msg)).To(ContainSubstring(strings.ToLower(c.Why)))
			if c.By == admission.Webhook {
				Expect(msg).To(ContainSubstring("admission webhook"))
			} else {
				Expect(msg).NotTo(ContainSubstring("admission webhook"), "the CRD itself refuses it")
			}
		})
	}
})
