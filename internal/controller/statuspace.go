package controller

import (
	"sync"
	"time"
)

// statusPacer spaces out the status writes of one MyDeployment while its
// rollout only counts pods up and down: at most one such write per period,
// the last one deferred (requeued), never lost. Writes status.Pressing says
// cannot wait go at once. Every status patch of a CRD costs the API server
// several times a pod write (whole-object schema validation, managedFields,
// JSON); a rollout of 50 pods would otherwise write its status for nearly
// every pod event. kube-controller-manager's Job and EndpointSlice
// controllers batch their pod-driven updates the same way.
type statusPacer struct {
	period time.Duration
	mu     sync.Mutex
	last   map[string]time.Time
	// pruneAt is the map size at which entries older than a period are dropped.
	pruneAt int
}

func newStatusPacer(period time.Duration) *statusPacer {
	return &statusPacer{period: period, last: map[string]time.Time{}, pruneAt: 64}
}

// wait returns how long key's write must wait, 0 when it may go now.
func (p *statusPacer) wait(key string, now time.Time) time.Duration {
	if p == nil || p.period <= 0 {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if last, ok := p.last[key]; ok {
		if d := last.Add(p.period).Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// wrote records a status write of key at now.
func (p *statusPacer) wrote(key string, now time.Time) {
	if p == nil || p.period <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last[key] = now
	// Drop entries older than a period: they no longer hold anything back,
	// so the map stays about as small as the set of objects rolling now.
	if len(p.last) > p.pruneAt {
		for k, t := range p.last {
			if now.Sub(t) >= p.period {
				delete(p.last, k)
			}
		}
		p.pruneAt = max(64, 2*len(p.last))
	}
}

// forget drops key (the MyDeployment is gone).
func (p *statusPacer) forget(key string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.last, key)
}
