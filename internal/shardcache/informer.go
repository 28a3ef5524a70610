package shardcache

import (
	"errors"
	"fmt"
	"sync"
	"time"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// informer is one namespaced kind's informer over every slot held: a
// handler or index added to it is added to the kind's informer in each
// slot's cache, and in each slot's cache to come.
type informer struct {
	c *Cache
	k *kind
}

var _ cache.Informer = &informer{}

func (i *informer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.AddEventHandlerWithOptions(h, toolscache.HandlerOptions{})
}

func (i *informer) AddEventHandlerWithResyncPeriod(h toolscache.ResourceEventHandler, resync time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.AddEventHandlerWithOptions(h, toolscache.HandlerOptions{ResyncPeriod: &resync})
}

func (i *informer) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, opts toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	r := &registration{h: h, opts: opts, regs: map[int]toolscache.ResourceEventHandlerRegistration{}}
	i.c.mu.Lock()
	defer i.c.mu.Unlock()
	for _, sc := range i.c.slots {
		if err := r.add(sc.slot, sc.informers[i.k]); err != nil {
			return nil, err
		}
	}
	i.k.handlers[r] = struct{}{}
	return r, nil
}

func (i *informer) RemoveEventHandler(handle toolscache.ResourceEventHandlerRegistration) error {
	r, ok := handle.(*registration)
	if !ok {
		return fmt.Errorf("shardcache: a registration of %T is not this informer's", handle)
	}
	i.c.mu.Lock()
	defer i.c.mu.Unlock()
	delete(i.k.handlers, r)
	var errs []error
	for slot, reg := range r.take() {
		if sc := i.c.slots[slot]; sc != nil {
			errs = append(errs, sc.informers[i.k].RemoveEventHandler(reg))
		}
	}
	return errors.Join(errs...)
}

func (i *informer) AddIndexers(indexers toolscache.Indexers) error {
	i.c.mu.Lock()
	defer i.c.mu.Unlock()
	i.k.indexers = append(i.k.indexers, indexers)
	for _, sc := range i.c.slots {
		if err := sc.informers[i.k].AddIndexers(indexers); err != nil {
			return err
		}
	}
	return nil
}

// HasSynced: the kind's informer of every slot held has (none held: true).
func (i *informer) HasSynced() bool {
	i.c.mu.Lock()
	defer i.c.mu.Unlock()
	for _, sc := range i.c.slots {
		if !sc.informers[i.k].HasSynced() {
			return false
		}
	}
	return true
}

func (i *informer) HasSyncedChecker() toolscache.DoneChecker {
	return polled(i.k.gvk.Kind+" in the shard slots held", i.HasSynced)
}

// IsStopped: the informer of a kind outlives every slot's.
func (i *informer) IsStopped() bool { return false }

// registration is a handler added to a kind's informer: its registration
// in each slot's cache it was added to.
type registration struct {
	h    toolscache.ResourceEventHandler
	opts toolscache.HandlerOptions

	mu   sync.Mutex
	regs map[int]toolscache.ResourceEventHandlerRegistration
}

// add adds the handler to slot's informer inf.
func (r *registration) add(slot int, inf cache.Informer) error {
	reg, err := inf.AddEventHandlerWithOptions(r.h, r.opts)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.regs[slot] = reg
	r.mu.Unlock()
	return nil
}

// drop forgets slot's registration: its informer stopped.
func (r *registration) drop(slot int) {
	r.mu.Lock()
	delete(r.regs, slot)
	r.mu.Unlock()
}

// take returns every slot's registration and forgets them.
func (r *registration) take() map[int]toolscache.ResourceEventHandlerRegistration {
	r.mu.Lock()
	defer r.mu.Unlock()
	regs := r.regs
	r.regs = map[int]toolscache.ResourceEventHandlerRegistration{}
	return regs
}

// HasSynced: every slot's informer has synced and handed this handler its
// initial list.
func (r *registration) HasSynced() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, reg := range r.regs {
		if !reg.HasSynced() {
			return false
		}
	}
	return true
}

func (r *registration) HasSyncedChecker() toolscache.DoneChecker {
	return polled("a handler in the shard slots held", r.HasSynced)
}

// polled is a DoneChecker of done, asked every 100ms until true: the slots
// it covers change over time, so no channel of one informer says it.
func polled(name string, done func() bool) toolscache.DoneChecker {
	ch := make(chan struct{})
	go func() {
		for !done() {
			time.Sleep(100 * time.Millisecond)
		}
		close(ch)
	}()
	return doneChecker{name: name, done: ch}
}

type doneChecker struct {
	name string
	done chan struct{}
}

func (d doneChecker) Name() string          { return d.name }
func (d doneChecker) Done() <-chan struct{} { return d.done }
