package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// expectationLeaks counts pod writes never observed in the cache within the
// expectations timeout: each one is a sync that would otherwise have stalled.
var expectationLeaks = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "mydeployment_expectation_timeouts_total",
	Help: "Pod creations or deletions not observed in the cache before the expectations timeout (leaked expectations).",
})

func init() {
	metrics.Registry.MustRegister(expectationLeaks)
}
