package controller

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// analysisPrometheus plays Prometheus' /api/v1/query for the envtest: one
// value for every query, counting the queries it answers.
type analysisPrometheus struct {
	mu    sync.Mutex
	value string
	asked int
}

func (p *analysisPrometheus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked++
	_, _ = fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,%q]}]}}`, p.value)
}

func (p *analysisPrometheus) set(v string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.value, p.asked = v, 0
}

func (p *analysisPrometheus) queries() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.asked
}

var _ = Describe("Beyond Deployment: canary analysis", Ordered, Serial, func() {
	var (
		ns   string
		rec  *countingRecorder
		prom = &analysisPrometheus{value: "1"}
		url  string
	)
	withCountingManager(&rec)
	BeforeAll(func() {
		srv := httptest.NewServer(prom)
		DeferCleanup(srv.Close)
		url = srv.URL
	})
	BeforeEach(func() { ns = newNamespace() })
	analysed := func(name string, count int) *appsv1beta1.MyDeployment {
		md := rolling(newMD(ns, name, 2, "nginx:1.27"), intstr.FromInt32(1), intstr.FromInt32(0))
		md.Annotations = map[string]string{
			appsv1beta1.CanaryStepsAnnotation: "50%, 100%",
			appsv1beta1.AnalysisAnnotation: fmt.Sprintf(`{"prometheus":%q,"interval":"1s","count":%d,"queries":[`+
				`{"name":"success-rate","query":"ok{revision=\"{{revision}}\"}","threshold":">= 0.99"}]}`, url, count),
		}
		return md
	}
	analysisMessage := func(md *appsv1beta1.MyDeployment) func() string {
		return func() string {
			for _, c := range get(md).Status.Conditions {
				if c.Type == appsv1beta1.ConditionAnalysis {
					return c.Reason + ": " + c.Message
				}
			}
			return ""
		}
	}

	It("holds each step until count measurements passed, and after a manager restart counts them again", func() {
		prom.set("1")
		md := analysed("restart", 3)
		createReady(md)
		stop := kubelet(md, 200*time.Millisecond)
		defer stop()
		update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
		Eventually(progressing(md), timeout, interval).Should(Equal(
			appsv1beta1.ReasonCanaryPaused + ": step 1 of 2: 50%, waiting for its analysis"))
		Eventually(analysisMessage(md), timeout, 100*time.Millisecond).Should(ContainSubstring("2 of 3 passed"))

		By("a restart loses the two measurements: the step is measured three times again")
		stopManager()
		prom.set("1")
		startManager(func(r *MyDeploymentReconciler) { rec.EventRecorder, r.Recorder = r.Recorder, rec })
		Eventually(func() int { return canaryStep(md).Index }, timeout, 100*time.Millisecond).Should(Equal(1))
		Expect(prom.queries()).To(BeNumerically(">=", 3), "step 1 ended on measurements taken after the restart")
		Expect(analysisMessage(md)()).NotTo(HavePrefix(appsv1beta1.ReasonAnalysisFailed))

		By("step 2 moves every pod: the update revision becomes current only once it passed too")
		Eventually(analysisMessage(md), timeout, 100*time.Millisecond).Should(ContainSubstring("step 2 of revision"))
		Expect(get(md).Status.CurrentRevision).NotTo(Equal(get(md).Status.UpdateRevision))
		complete(md)
		Eventually(func() string { return get(md).Status.CurrentRevision }, timeout, interval).Should(Equal(get(md).Status.UpdateRevision))
		Expect(analysisMessage(md)()).To(HavePrefix(appsv1beta1.ReasonAnalysisPassed + ": step 2 of revision"))
	})

	It("aborts to stable on a failed measurement, with the query and value in an event and the conditions", func() {
		prom.set("1")
		md := analysed("fails", 2)
		createReady(md)
		stable := get(md).Status.CurrentRevision
		stop := kubelet(md, 200*time.Millisecond)
		defer stop()
		update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
		Eventually(progressing(md), timeout, interval).Should(HaveSuffix("waiting for its analysis"))
		prom.set("0.5")
		Eventually(conditionReason(md, appsv1beta1.ConditionProgressing), timeout, interval).Should(Equal(appsv1beta1.ReasonRolloutAborted))
		aborted := get(md).Status.UpdateRevision
		Expect(get(md).Annotations).To(HaveKeyWithValue(appsv1beta1.AbortedRevisionAnnotation, aborted))
		Expect(analysisMessage(md)()).To(HavePrefix(appsv1beta1.ReasonAnalysisFailed + ": failed: success-rate = 0.5 (wants >= 0.99)"))
		Expect(progressing(md)()).To(ContainSubstring("analysis failed: success-rate = 0.5 (wants >= 0.99)"))
		Eventually(func() int { return podsOfRevision(md, stable) }, timeout, interval).Should(Equal(2))
		Expect(rec.of(md, appsv1beta1.ReasonAnalysisFailed)).To(ConsistOf(
			fmt.Sprintf("Rollout to revision %q aborted: analysis failed: success-rate = 0.5 (wants >= 0.99); every pod goes back to revision %q",
				aborted, stable)))
		Expect(strings.Join(rec.of(md, appsv1beta1.EventRolloutAborted), "")).To(BeEmpty(), "one event per abort, the analysis'")
	})
})
