package controller

import (
	"github.com/mydeployment-io/mydeployment-operator/internal/metrics"
	"github.com/mydeployment-io/mydeployment-operator/internal/status"
)

// metricsObservation is the sync's outcome as the metrics recorder needs it.
func metricsObservation(o *observation, v counted, st status.Result) metrics.Observation {
	return metrics.Observation{
		Object:           o.md,
		Status:           &st.Status,
		Current:          v.current,
		Update:           v.update,
		NewRevision:      v.newRevision,
		DeadlineExceeded: st.DeadlineExceeded,
		Now:              o.now,
	}
}
