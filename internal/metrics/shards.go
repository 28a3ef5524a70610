package metrics

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// ShardCounts is what one manager replica holds of active-active shards
// (issue 56) now: the slots it acts on, the MyDeployments and pods of
// their namespaces in its cache, and every pod its cache holds (Cached:
// the same as Pods where the API server filters by shard, every pod of the
// cluster where it does not).
type ShardCounts struct{ Slots, Objects, Pods, Cached int }

// shardCounts is read at each scrape; nil without shards (no series).
var shardCounts atomic.Pointer[func() ShardCounts]

// serverFiltered: the API server filters this replica's lists and watches
// by shard (a cache per slot held); false, it caches every namespace.
var serverFiltered atomic.Bool

// SetShardServerFiltered says whether the API server filters by shard
// (the manager with --shards, after its probe).
func SetShardServerFiltered(v bool) { serverFiltered.Store(v) }

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
	shardCachedDesc = prometheus.NewDesc("mydeployment_shard_cached_pods",
		"Pods this replica caches, in its slots' namespaces or not, with --shards.", nil, nil)
	shardFilteredDesc = prometheus.NewDesc("mydeployment_shard_server_filtered",
		"1 if the API server filters this replica's lists and watches by shard (it caches its slots' namespaces "+
			"only), 0 if it caches every namespace, with --shards.", nil, nil)
)

// shardCollector emits the shard series from SetShardCounts' function.
type shardCollector struct{}

func (shardCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- shardSlotsDesc
	ch <- shardObjectsDesc
	ch <- shardPodsDesc
	ch <- shardCachedDesc
	ch <- shardFilteredDesc
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
	ch <- prometheus.MustNewConstMetric(shardCachedDesc, prometheus.GaugeValue, float64(c.Cached))
	filtered := 0.0
	if serverFiltered.Load() {
		filtered = 1
	}
	ch <- prometheus.MustNewConstMetric(shardFilteredDesc, prometheus.GaugeValue, filtered)
}
