package v1beta1

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mydeployment-io/mydeployment-operator/test/admission"
)

// Every row of the admission table against a real kube-apiserver with the
// CRD and this webhook installed, as in a cluster: each invalid MyDeployment
// is refused, by the part of admission the row says, naming its field.
var _ = Describe("Admission of invalid MyDeployments", func() {
	var ns string
	BeforeEach(func() {
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "invalid-"}}
		Expect(k8sClient.Create(ctx, n)).To(Succeed())
		ns = n.Name
	})

	It("has at least 30 rows", func() { Expect(len(admission.Cases())).To(BeNumerically(">=", 30)) })

	for _, c := range admission.Cases() {
		It("refuses: "+c.Name, func() {
			refusal, err := c.Submit(ctx, k8sClient, ns)
			Expect(err).NotTo(HaveOccurred())
			msg := refusal.Error()
			Expect(msg).To(ContainSubstring(c.Field))
			Expect(strings.ToLower(msg)).To(ContainSubstring(strings.ToLower(c.Why)))
			if c.By == admission.Webhook {
				Expect(msg).To(ContainSubstring("admission webhook"))
				Expect(msg).NotTo(MatchRegexp(`(Invalid value|Required value|Not found): (Invalid value|Required value|Not found)`),
					"the reason is said once")
			} else {
				Expect(msg).NotTo(ContainSubstring("admission webhook"), "the CRD itself refuses it")
			}
		})
	}
})
