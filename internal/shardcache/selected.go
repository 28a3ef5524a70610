package shardcache

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/mydeployment-io/mydeployment-operator/internal/shard"
)

// selected is an informer's ListerWatcher whose every list and watch
// carries one slot's shard selector.
type selected struct {
	toolscache.ListerWatcher
	selector string
}

func (s selected) with(opts metav1.ListOptions) metav1.ListOptions {
	opts.ShardSelector = s.selector
	return opts
}

func (s selected) List(opts metav1.ListOptions) (runtime.Object, error) {
	return s.ListerWatcher.List(s.with(opts))
}

func (s selected) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return s.ListerWatcher.Watch(s.with(opts))
}

func (s selected) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	return toolscache.ToListerWithContext(s.ListerWatcher).ListWithContext(ctx, s.with(opts))
}

func (s selected) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return toolscache.ToWatcherWithContext(s.ListerWatcher).WatchWithContext(ctx, s.with(opts))
}

// Honoured says whether the API server filters lists by shard: a list of
// pods with the first half of the slots' selector comes back saying it was
// filtered (ListMeta.shardInfo) only where ShardedListAndWatch is on; a
// server without it ignores the selector and lists everything.
func Honoured(ctx context.Context, cs kubernetes.Interface) (bool, error) {
	half := shard.Slots(1<<(shard.Count/2) - 1).Selector().String()
	list, err := cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{Limit: 1, ShardSelector: half})
	if err != nil {
		return false, fmt.Errorf("asking whether the API server filters lists by shard: %w", err)
	}
	return list.ShardInfo != nil, nil
}
