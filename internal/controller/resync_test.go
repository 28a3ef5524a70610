package controller

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// reconcilesSoFar is controller_runtime_reconcile_total of the MyDeployment
// controller, every result, in this process.
func reconcilesSoFar() float64 {
	families, err := ctrlmetrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	total := 0.0
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == "mydeployment" {
					total += m.GetCounter().GetValue()
				}
			}
		}
	}
	return total
}

// At rest, a MyDeployment is reconciled once per resync period
// (--sync-period): its own informer's resync. The informers of its
// revisions and pods resync too, each an update event of every object with
// nothing changed; a revision's enqueued its owner again at another moment,
// so an idle MyDeployment was reconciled about twice a period (938 times
// in 67 s for 200 idle objects in the benchmark of 2026-11-28).
var _ = Describe("At rest", Ordered, Serial, func() {
	var ns string
	BeforeAll(func() {
		stopManager()
		ns = newNamespace()
		startManagerOpts(managerOpts{restCfg: managerCfg, namespaces: []string{ns}, syncPeriod: time.Second})
	})
	AfterAll(func() {
		stopManager()
		startManager()
	})

	It("reconciles an idle MyDeployment with two revisions once per resync period", func() {
		md := newMD(ns, "idle", 3, "nginx:1.27")
		createReady(md)
		stop := kubelet(md, 100*time.Millisecond)
		update(md, func(m *appsv1beta1.MyDeployment) { m.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
		complete(md)
		stop()
		Expect(revisionsOf(md)).To(HaveLen(2))
		time.Sleep(2 * time.Second) // the last status writes' own events

		before := reconcilesSoFar()
		time.Sleep(10 * time.Second)
		// Once a period is 9 to 11 in 10 s (resync periods carry 10% jitter);
		// twice a period, 18 to 22. A loaded machine delays ticks, never adds them.
		n := reconcilesSoFar() - before
		Expect(n).To(BeNumerically(">=", 4), "the resyncs happened")
		Expect(n).To(BeNumerically("<=", 14), "reconciles of one idle MyDeployment in 10 s of a 1 s resync period")
	})
})
