package controller

import (
	"github.com/mydeployment-io/mydeployment-operator/internal/metrics"
	"github.com/mydeployment-io/mydeployment-operator/internal/status"
)

// observation is the sync's outcome as the metrics recorder needs it.
func (s *scope) observation(st status.Result) metrics.Observation {
	return metrics.Observation{
		Object:           s.md,
		Status:           &st.Status,
		Current:          s.current,
		Update:           s.update,
		NewRevision:      s.newRevision,
		DeadlineExceeded: st.DeadlineExceeded,
		Now:              s.now,
	}
}
