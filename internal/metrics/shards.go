package metrics

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// ShardCounts is what one manager replica holds of active-active shards
// (issue 56) now: the slots it acts on, and the MyDeployments and pods of
// their namespaces in its cache.
type ShardCounts struct{ Slots, Objects, Pods int }

// shardCounts is read at each scrape; nil without shards (no series).
var shardCounts atomic.Pointer[func() ShardCounts]

// SetShardCounts makes the shard series read count at each scrape (the
// manager with --shards); a second call replaces the first.
func SetShardCounts(count func() ShardCounts) { shardCounts.Store(&count) }

var (
	shardSlotsDesc = prometheus.NewDesc("mydeployment_shard_slots",
		"Slots of the namespace hash this replica holds and syncs (of 64), with --shards.", nil, nil)
	shardObjectsDesc = prometheus.NewDesc("mydeployment_shard_objects",
		"MyDeployments in the namespaces of the slots this replica holds, with --shards.", nil, nil)
	shardPodsDesc = prometheus.NewDesc("mydeployment_shard_pods",
		"Pods this replica caches in the namespaces of the slots it holds, with --shards.", nil, nil)
)

// shardCollector emits the shard series from SetShardCounts' function.
type shardCollector struct{}

func (shardCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- shardSlotsDesc
	ch <- shardObjectsDesc
	ch <- shardPodsDesc
}

func (shardCollector) Collect(ch chan<- prometheus.Metric) {
	f := shardCounts.Load()
	if f == nil {
		return
	}
	c := (*f)()
	ch <- prometheus.MustNewConstMetric(shardSlotsDesc, prometheus.GaugeValue, float64(c.Slots))
	ch <- prometheus.MustNewConstMetric(shardObjectsDesc, prometheus.GaugeValue, float64(c.Objects))
	ch <- prometheus.MustNewConstMetric(shardPodsDesc, prometheus.GaugeValue, float64(c.Pods))
}
