// Package shardcache is the manager's cache when shards are on (issue 56,
// docs/architecture.md "Active-active shards") and the API server filters
// lists and watches by shard (KEP-5866's ShardedListAndWatch; Honoured
// asks it): one controller-runtime cache per slot this replica holds, each
// informer of which lists and watches with that slot's shard selector, so
// a replica keeps the objects of its own namespaces and no others.
// Cluster-scoped kinds are in one cache of their own. Where the API server
// does not filter, the manager keeps its one cache of everything and the
// shard gate alone keeps the replicas apart (cmd/main.go).
//
// The Cache is a shard.Holder, told before the controllers: Taking starts
// the slots' caches and says ready those whose every informer has synced
// (the gate admits no sync of a slot before), Forget stops them.
package shardcache

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/mydeployment-io/mydeployment-operator/internal/shard"
)

// DefaultSyncWait is how long Taking waits for a slot's informers to sync
// before it says the slot not ready (told again at the next round).
const DefaultSyncWait = time.Second

// Options are the Cache's.
type Options struct {
	// Cache are the options of every slot's cache and of the cluster-scoped
	// kinds' cache: the manager's (its scheme, mapper, filters, transforms
	// and informer constructor).
	Cache cache.Options
	// New makes a cache of options (cache.New with the manager's config).
	New func(cache.Options) (cache.Cache, error)
	// SyncWait: DefaultSyncWait when 0.
	SyncWait time.Duration
	Log      logr.Logger
}

// Cache is the manager's cache of a replica of shards; New makes one.
type Cache struct {
	opts    Options
	cluster cache.Cache

	mu sync.Mutex
	// ctx is Start's: every slot's cache runs under it (nil before Start).
	ctx   context.Context
	slots map[int]*slotCache
	// kinds are the namespaced kinds asked of the cache, each of which
	// every slot's cache, now and to come, has an informer of.
	kinds map[schema.GroupVersionKind]*kind
}

// slotCache is one slot's cache.
type slotCache struct {
	slot   int
	cache  cache.Cache
	stop   context.CancelFunc
	synced atomic.Bool
	// informers are its informer of each kind.
	informers map[*kind]cache.Informer
}

// kind is one namespaced kind: what was asked of it, to ask again of each
// slot's cache as it starts.
type kind struct {
	gvk      schema.GroupVersionKind
	obj      client.Object
	fields   []fieldIndex
	indexers []toolscache.Indexers
	handlers map[*registration]struct{}
	informer *informer
}

type fieldIndex struct {
	field   string
	extract client.IndexerFunc
}

var _ cache.Cache = &Cache{}

// New makes the Cache; its slots' caches start as Taking is told.
func New(opts Options) (*Cache, error) {
	if opts.Cache.Scheme == nil || opts.Cache.Mapper == nil {
		return nil, errors.New("shardcache: the cache options need a scheme and a mapper")
	}
	if opts.SyncWait <= 0 {
		opts.SyncWait = DefaultSyncWait
	}
	cluster, err := opts.New(opts.Cache)
	if err != nil {
		return nil, err
	}
	return &Cache{opts: opts, cluster: cluster, slots: map[int]*slotCache{},
		kinds: map[schema.GroupVersionKind]*kind{}}, nil
}

// NewCacheFunc is a manager's NewCache: a Cache of the manager's cache
// options over cache.New with its config, handed to made once made (to be
// told of the slots' moves, shard.Membership.Tell).
func NewCacheFunc(log logr.Logger, made func(*Cache)) cache.NewCacheFunc {
	return func(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
		c, err := New(Options{Cache: opts, Log: log,
			New: func(o cache.Options) (cache.Cache, error) { return cache.New(cfg, o) }})
		if err != nil {
			return nil, err
		}
		made(c)
		return c, nil
	}
}

// NotHeldError is a read of a namespace whose slot this replica does not
// hold: its objects are in another replica's cache.
type NotHeldError struct {
	Namespace string
	Slot      int
}

func (e *NotHeldError) Error() string {
	return fmt.Sprintf("namespace %q is in shard slot %d, which this replica does not hold", e.Namespace, e.Slot)
}

// slotOf is namespace's slot cache, or a NotHeldError.
func (c *Cache) slotOf(namespace string) (*slotCache, error) {
	slot := shard.SlotOf(namespace)
	c.mu.Lock()
	sc := c.slots[slot]
	c.mu.Unlock()
	if sc == nil {
		return nil, &NotHeldError{Namespace: namespace, Slot: slot}
	}
	return sc, nil
}

// held are the slot caches now, in no order.
func (c *Cache) held() []*slotCache {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*slotCache, 0, len(c.slots))
	for _, sc := range c.slots {
		out = append(out, sc)
	}
	return out
}

// Get reads key from the cache of its namespace's slot.
func (c *Cache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if k, err := c.kindOf(obj); err != nil || k == nil {
		return c.orCluster(err, func() error { return c.cluster.Get(ctx, key, obj, opts...) })
	}
	sc, err := c.slotOf(key.Namespace)
	if err != nil {
		return err
	}
	return sc.cache.Get(ctx, key, obj, opts...)
}

// List lists one namespace from its slot's cache, or every namespace from
// every slot's cache held.
func (c *Cache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if k, err := c.kindOf(list); err != nil || k == nil {
		return c.orCluster(err, func() error { return c.cluster.List(ctx, list, opts...) })
	}
	listOpts := client.ListOptions{}
	listOpts.ApplyOptions(opts)
	if listOpts.Continue != "" || listOpts.Limit > 0 {
		return errors.New("shardcache: a list from the cache takes no limit or continue")
	}
	if listOpts.Namespace != "" {
		sc, err := c.slotOf(listOpts.Namespace)
		if err != nil {
			return err
		}
		return sc.cache.List(ctx, list, opts...)
	}
	var items []runtime.Object
	for _, sc := range c.held() {
		part, ok := list.DeepCopyObject().(client.ObjectList)
		if !ok {
			return fmt.Errorf("shardcache: %T is not a list", list)
		}
		if err := sc.cache.List(ctx, part, opts...); err != nil {
			return err
		}
		got, err := apimeta.ExtractList(part)
		if err != nil {
			return err
		}
		items = append(items, got...)
	}
	return apimeta.SetList(list, items)
}

// kindOf is the kind of obj (of a list's items, for a list) when it is
// namespaced, registered (an informer in every slot's cache) the first time
// it is asked; nil for a cluster-scoped kind, the cluster cache's.
func (c *Cache) kindOf(obj runtime.Object) (*kind, error) {
	gvk, err := apiutil.GVKForObject(obj, c.opts.Cache.Scheme)
	if err != nil {
		return nil, err
	}
	if _, isList := obj.(client.ObjectList); isList {
		gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	}
	namespaced, err := apiutil.IsGVKNamespaced(gvk, c.opts.Cache.Mapper)
	if err != nil || !namespaced {
		return nil, err
	}
	return c.kindOfGVK(gvk)
}

// orCluster is err, or what read of the cluster-scoped kinds' cache
// returns when there was none.
func (c *Cache) orCluster(err error, read func() error) error {
	if err != nil {
		return err
	}
	return read()
}

func (c *Cache) kindOfGVK(gvk schema.GroupVersionKind) (*kind, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if k := c.kinds[gvk]; k != nil {
		return k, nil
	}
	obj, err := c.newObject(gvk)
	if err != nil {
		return nil, err
	}
	k := &kind{gvk: gvk, obj: obj, handlers: map[*registration]struct{}{}}
	k.informer = &informer{c: c, k: k}
	for _, sc := range c.slots {
		if err := sc.add(k); err != nil {
			return nil, err
		}
	}
	c.kinds[gvk] = k
	return k, nil
}

// GetInformer is obj's informer over every slot held, now and to come.
func (c *Cache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	k, err := c.kindOf(obj)
	switch {
	case err != nil:
		return nil, err
	case k == nil:
		return c.cluster.GetInformer(ctx, obj, opts...)
	}
	return k.informer, nil
}

// GetInformerForKind is GetInformer of gvk.
func (c *Cache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	obj, err := c.newObject(gvk)
	if err != nil {
		return nil, err
	}
	return c.GetInformer(ctx, obj, opts...)
}

// newObject is a new object of gvk, from the scheme.
func (c *Cache) newObject(gvk schema.GroupVersionKind) (client.Object, error) {
	o, err := c.opts.Cache.Scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	obj, ok := o.(client.Object)
	if !ok {
		return nil, fmt.Errorf("shardcache: %s is not an object", gvk)
	}
	return obj, nil
}

// RemoveInformer is not done for a namespaced kind: the slots' caches
// keep it (nothing here removes one).
func (c *Cache) RemoveInformer(ctx context.Context, obj client.Object) error {
	namespaced, err := apiutil.IsObjectNamespaced(obj, c.opts.Cache.Scheme, c.opts.Cache.Mapper)
	if err != nil || !namespaced {
		return c.orCluster(err, func() error { return c.cluster.RemoveInformer(ctx, obj) })
	}
	return errors.New("shardcache: a namespaced kind's informer cannot be removed")
}

// IndexField indexes obj's kind in every slot's cache, now and to come.
func (c *Cache) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	k, err := c.kindOf(obj)
	if err != nil || k == nil {
		return c.orCluster(err, func() error { return c.cluster.IndexField(ctx, obj, field, extract) })
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k.fields = append(k.fields, fieldIndex{field: field, extract: extract})
	for _, sc := range c.slots {
		if err := sc.cache.IndexField(ctx, k.obj, field, extract); err != nil {
			return err
		}
	}
	return nil
}

// Start runs the cluster-scoped kinds' cache; the slots' caches run under
// ctx from when they are taken until given up.
func (c *Cache) Start(ctx context.Context) error {
	c.mu.Lock()
	c.ctx = ctx
	c.mu.Unlock()
	err := c.cluster.Start(ctx)
	c.mu.Lock()
	for slot, sc := range c.slots {
		sc.stop()
		delete(c.slots, slot)
	}
	c.mu.Unlock()
	return err
}

// WaitForCacheSync waits for the cluster-scoped kinds and every slot held.
func (c *Cache) WaitForCacheSync(ctx context.Context) bool {
	if !c.cluster.WaitForCacheSync(ctx) {
		return false
	}
	for _, sc := range c.held() {
		if !sc.cache.WaitForCacheSync(ctx) {
			return false
		}
	}
	return true
}

// Taking starts the cache of each slot not yet held and says ready those
// whose every informer has synced within SyncWait (shard.Holder); a slot
// not ready keeps syncing and is told again at the next round.
func (c *Cache) Taking(ctx context.Context, slots shard.Slots) shard.Slots {
	var starting []*slotCache
	for _, slot := range slots.List() {
		sc, err := c.open(slot)
		if err != nil {
			c.opts.Log.Error(err, "starting the cache of a shard slot", "slot", slot)
			continue
		}
		starting = append(starting, sc)
	}
	wait, cancel := context.WithTimeout(ctx, c.opts.SyncWait)
	defer cancel()
	var ready shard.Slots
	for _, sc := range starting {
		if sc.synced.Load() || sc.cache.WaitForCacheSync(wait) {
			sc.synced.Store(true)
			ready |= shard.Of(sc.slot)
		}
	}
	return ready
}

// Taken: nothing to do once the gate admits the slots (shard.Holder).
func (c *Cache) Taken(context.Context, shard.Slots) {}

// Forget stops the caches of slots (shard.Holder): their syncs are over.
func (c *Cache) Forget(slots shard.Slots) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, slot := range slots.List() {
		if sc := c.slots[slot]; sc != nil {
			sc.stop()
			delete(c.slots, slot)
			for _, k := range c.kinds {
				for r := range k.handlers {
					r.drop(slot)
				}
			}
		}
	}
}

// open is slot's cache, made and started if it is not held yet: an
// informer of every kind asked so far, with its indexes and handlers, all
// before it starts, so that its initial list reaches every handler.
func (c *Cache) open(slot int) (*slotCache, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if sc := c.slots[slot]; sc != nil {
		return sc, nil
	}
	if c.ctx == nil {
		return nil, errors.New("the cache has not started")
	}
	opts := c.opts.Cache
	newInformer := opts.NewInformer
	if newInformer == nil {
		newInformer = toolscache.NewSharedIndexInformer
	}
	selector := shard.Of(slot).Selector().String()
	opts.NewInformer = func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration,
		indexers toolscache.Indexers) toolscache.SharedIndexInformer {
		return newInformer(selected{ListerWatcher: lw, selector: selector}, obj, resync, indexers)
	}
	made, err := c.opts.New(opts)
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(c.ctx)
	sc := &slotCache{slot: slot, cache: made, stop: stop, informers: map[*kind]cache.Informer{}}
	for _, k := range c.kinds {
		if err := sc.add(k); err != nil {
			stop()
			return nil, err
		}
	}
	go func() {
		if err := made.Start(ctx); err != nil && ctx.Err() == nil {
			c.opts.Log.Error(err, "the cache of a shard slot stopped", "slot", slot)
		}
	}()
	c.slots[slot] = sc
	return sc, nil
}

// add makes sc's informer of k, with k's indexes and handlers (c.mu held).
func (sc *slotCache) add(k *kind) error {
	ctx := context.Background() // not started, or BlockUntilSynced(false): returns at once
	inf, err := sc.cache.GetInformer(ctx, k.obj, cache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("the informer of %s in shard slot %d: %w", k.gvk.Kind, sc.slot, err)
	}
	for _, f := range k.fields {
		if err := sc.cache.IndexField(ctx, k.obj, f.field, f.extract); err != nil {
			return err
		}
	}
	for _, idx := range k.indexers {
		if err := inf.AddIndexers(idx); err != nil {
			return err
		}
	}
	for r := range k.handlers {
		if err := r.add(sc.slot, inf); err != nil {
			return err
		}
	}
	sc.informers[k] = inf
	return nil
}
