// Package expectations remembers the pods a controller created or deleted
// and has not yet seen in its cache, so that it never acts twice on a stale
// view: a pod created a moment ago but not yet listed would otherwise be
// created again.
//
// Expectations are keyed by the owner (namespace/name) and, within it, by pod
// name. They are observed by comparing with a list of pods from the cache, not
// by counting watch events, so an expectation cannot be lost to a missed or
// coalesced event. An expectation that is not observed within the timeout has
// leaked: it is dropped and reported, so a rollout can never stall on it
// forever. A pod that came and went before a sync listed it (created, then
// deleted by someone else at once) is observed by its delete event, through
// Gone, as ReplicaSet's expectations count a create or delete event.
package expectations

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// DefaultTimeout is how long an expectation may stay unobserved before it is
// considered leaked; Kubernetes' controllers use the same five minutes.
const DefaultTimeout = 5 * time.Minute

// Store is safe for concurrent use by several workers.
type Store struct {
	timeout time.Duration
	mu      sync.Mutex
	owners  map[string]*pending
}

// pending is what one owner waits to observe.
type pending struct {
	creates map[string]struct{} // pod names that must appear
	deletes map[string]struct{} // pod names that must disappear or be terminating
	// changes are pods written in place (not created nor deleted): the
	// pod name and what the cache must show of it (or the pod be gone).
	changes map[string]func(*corev1.Pod) bool
	// gone are pods seen deleted before anything was expected of them: a
	// pod deleted between its create call returning and ExpectCreate.
	gone  map[string]struct{}
	since time.Time // when the oldest unobserved expectation was set
}

// New returns a Store whose expectations leak after timeout (DefaultTimeout if zero).
func New(timeout time.Duration) *Store {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &Store{timeout: timeout, owners: map[string]*pending{}}
}

// Open makes sure owner has a record from now until its next Observe, so
// that a delete event of a pod it is creating is not lost if it comes
// before ExpectCreate. Call it before creating pods.
func (s *Store) Open(owner string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.get(owner, now)
}

// ExpectCreate records that pod name was created for owner at now; a pod
// already seen gone (see Open) is observed at once.
func (s *Store) ExpectCreate(owner, name string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.get(owner, now)
	if _, gone := p.gone[name]; gone {
		delete(p.gone, name)
		return
	}
	p.creates[name] = struct{}{}
}

// ExpectDelete records that pod name was deleted for owner at now.
func (s *Store) ExpectDelete(owner, name string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.get(owner, now).deletes[name] = struct{}{}
}

// ExpectChange records that pod name of owner was written at now (an
// in-place update began): observed once the cache lists it with seen
// reporting true, or not at all, or terminating. seen must be cheap and
// must not keep the pod.
func (s *Store) ExpectChange(owner, name string, seen func(*corev1.Pod) bool, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.get(owner, now).changes[name] = seen
}

// Result says whether the cache has caught up with an owner's writes.
type Result struct {
	// Satisfied is true when every expectation was observed (or leaked):
	// the pods listed are a complete view and the owner may be synced.
	Satisfied bool
	// Leaked lists the pod names whose expectations timed out and were
	// dropped; the caller logs and counts them.
	Leaked []string
	// Waiting is the number of expectations still unobserved.
	Waiting int
	// Since is when the oldest unobserved expectation was set (zero when
	// Waiting is 0).
	Since time.Time
}

// Observe checks owner's expectations against pods, the owner's pods as the
// cache lists them now, and forgets the ones observed: a created pod is
// observed once listed, a deleted one once absent or terminating.
func (s *Store) Observe(owner string, pods []*corev1.Pod, now time.Time) Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.owners[owner]
	if !ok {
		return Result{Satisfied: true}
	}
	listed := make(map[string]*corev1.Pod, len(pods))
	for _, pod := range pods {
		listed[pod.Name] = pod
	}
	for name := range p.creates {
		if _, seen := listed[name]; seen {
			delete(p.creates, name)
		}
	}
	for name := range p.deletes {
		if pod, present := listed[name]; !present || pod.DeletionTimestamp != nil {
			delete(p.deletes, name)
		}
	}
	for name, seen := range p.changes {
		if pod, present := listed[name]; !present || pod.DeletionTimestamp != nil || seen(pod) {
			delete(p.changes, name)
		}
	}
	clear(p.gone) // an ExpectCreate after a sync listed the pods is for a newer pod
	waiting := len(p.creates) + len(p.deletes) + len(p.changes)
	if waiting == 0 {
		delete(s.owners, owner)
		return Result{Satisfied: true}
	}
	if now.Sub(p.since) < s.timeout {
		return Result{Waiting: waiting, Since: p.since}
	}
	leaked := make([]string, 0, waiting)
	for name := range p.creates {
		leaked = append(leaked, name)
	}
	for name := range p.deletes {
		leaked = append(leaked, name)
	}
	for name := range p.changes {
		leaked = append(leaked, name)
	}
	delete(s.owners, owner)
	return Result{Satisfied: true, Leaked: leaked}
}

// Gone records that the cache saw pod name of owner deleted: whatever was
// expected of it, creation or deletion, is observed. A pod created and
// deleted before a sync listed it is never listed; without this its
// creation would hold owner's syncs until the timeout.
func (s *Store) Gone(owner, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.owners[owner]
	if !ok {
		return
	}
	_, created := p.creates[name]
	_, deleted := p.deletes[name]
	delete(p.creates, name)
	delete(p.deletes, name)
	delete(p.changes, name)
	if !created && !deleted {
		p.gone[name] = struct{}{} // perhaps ours, its ExpectCreate still to come
	}
}

// Forget drops everything expected for owner (it was deleted).
func (s *Store) Forget(owner string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.owners, owner)
}

// Pending reports how many owners have unobserved expectations.
func (s *Store) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, p := range s.owners {
		if len(p.creates)+len(p.deletes)+len(p.changes) > 0 {
			n++ // a record opened for creates that all failed waits on nothing
		}
	}
	return n
}

func (s *Store) get(owner string, now time.Time) *pending {
	p, ok := s.owners[owner]
	if !ok {
		p = &pending{creates: map[string]struct{}{}, deletes: map[string]struct{}{}, changes: map[string]func(*corev1.Pod) bool{},
			gone: map[string]struct{}{}, since: now}
		s.owners[owner] = p
	}
	return p
}
