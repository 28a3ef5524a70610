package application

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mydeployment-io/mydeployment-operator/test/admission"
)

// The rows of the Application admission table that the CRD itself refuses,
// with no webhook installed (a manager run with ENABLE_WEBHOOKS=false).
var _ = Describe("Admission of invalid Applications by the CRD alone", func() {
	for _, c := range admission.AppCases() {
		if c.By != admission.CRD {
			continue
		}
		It("refuses: "+c.Name, func() {
			refusal, err := c.Submit(ctx, k8sClient, newNamespace())
			Expect(err).NotTo(HaveOccurred())
			Expect(refusal.Error()).To(ContainSubstring(c.Field))
			Expect(strings.ToLower(refusal.Error())).To(ContainSubstring(strings.ToLower(c.Why)))
		})
	}
})
