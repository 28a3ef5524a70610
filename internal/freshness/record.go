// Package freshness answers one question for each MyDeployment: is the
// informer cache at least as new as our own writes? Its Record, one per
// object (the controller keys it by the object's UID), holds every write of
// ours the cache may not show yet:
//
//   - pod writes: pods created, deleted and changed in place, by name, until
//     the cache lists them so (the ReplicaSet controller's expectations,
//     observed against the cache's list rather than counted from events, so
//     a missed or coalesced event cannot lose one); a pod that came and went
//     before a sync listed it is observed by its delete event (Gone);
//   - the object itself: as our last annotation or status patch left it,
//     with the resourceVersions it had before (KEP-5647's "the
//     resourceVersion of our last write"): a sync that reads an older copy
//     from the cache plans from ours instead (CatchUp);
//   - in-place steps written per pod, with what the cache must show of the
//     pod once it has the write: not written again until it does
//     (StepPending);
//
// Who writes it: the controller's act phase tells the record of every
// write it makes (one table, the controller's writeRules), and nothing else
// adds to it. What the cache shows retires entries: a sync's list of the
// pods (Observe), a pod's delete event (Gone), the object as the cache has
// it (CatchUp), as Kubernetes' informer handlers lower a controller's
// expectations.
//
// An expectation not observed within the timeout has leaked: it is dropped
// and reported, so a rollout never stalls on it forever.
package freshness

import (
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// DefaultTimeout is how long an expectation may stay unobserved before it is
// considered leaked; Kubernetes' controllers use the same five minutes.
const DefaultTimeout = 5 * time.Minute

// StepTTL is how long an in-place step written for a pod holds back the
// same step, should the pod's watch event never come.
const StepTTL = 30 * time.Second

// Record is what one MyDeployment's cache may not show yet. Safe for
// concurrent use: pod events and a sync's parallel writes reach it at once.
type Record struct {
	timeout time.Duration
	mu      sync.Mutex

	creates map[string]struct{} // pod names that must appear
	deletes map[string]struct{} // pod names that must disappear or be terminating
	// changes are pods written in place (not created nor deleted): the
	// pod name and what the cache must show of it (or the pod be gone).
	changes map[string]func(*corev1.Pod) bool
	// gone are pods seen deleted before anything was expected of them: a
	// pod deleted between its create call returning and ExpectCreate.
	gone  map[string]struct{}
	since time.Time // when the oldest unobserved expectation was set

	written *writtenObject
	steps   map[types.UID]writtenStep
}

// NewRecord returns an empty record whose expectations leak after timeout
// (DefaultTimeout if zero).
func NewRecord(timeout time.Duration) *Record {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &Record{timeout: timeout}
}

// Open marks the start of a batch of creates at now, so that a delete event
// of a pod being created is not lost if it comes before ExpectCreate.
func (r *Record) Open(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.open(now)
}

// ExpectCreate records that pod name was created at now; a pod already seen
// gone (see Open) is observed at once.
func (r *Record) ExpectCreate(name string, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.open(now)
	if _, gone := r.gone[name]; gone {
		delete(r.gone, name)
		return
	}
	r.creates[name] = struct{}{}
}

// ExpectDelete records that pod name was deleted (or evicted) at now.
func (r *Record) ExpectDelete(name string, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.open(now)
	r.deletes[name] = struct{}{}
}

// ExpectChange records that pod name was written at now (an in-place update
// began): observed once the cache lists it with seen reporting true, or not
// at all, or terminating. seen must be cheap and must not keep the pod.
func (r *Record) ExpectChange(name string, seen func(*corev1.Pod) bool, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.open(now)
	r.changes[name] = seen
}

// Result says whether the cache has caught up with the object's pod writes.
type Result struct {
	// Satisfied is true when every expectation was observed (or leaked):
	// the pods listed are a complete view and the object may be synced.
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

// Observe checks the expectations against pods, the object's pods as the
// cache lists them now, and forgets the ones observed: a created pod is
// observed once listed, a deleted one once absent or terminating.
func (r *Record) Observe(pods []*corev1.Pod, now time.Time) Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.creates == nil {
		return Result{Satisfied: true}
	}
	listed := make(map[string]*corev1.Pod, len(pods))
	for _, pod := range pods {
		listed[pod.Name] = pod
	}
	for name := range r.creates {
		if _, seen := listed[name]; seen {
			delete(r.creates, name)
		}
	}
	for name := range r.deletes {
		if pod, present := listed[name]; !present || pod.DeletionTimestamp != nil {
			delete(r.deletes, name)
		}
	}
	for name, seen := range r.changes {
		if pod, present := listed[name]; !present || pod.DeletionTimestamp != nil || seen(pod) {
			delete(r.changes, name)
		}
	}
	clear(r.gone) // an ExpectCreate after a sync listed the pods is for a newer pod
	waiting := r.waiting()
	if waiting == 0 {
		r.close()
		return Result{Satisfied: true}
	}
	if now.Sub(r.since) < r.timeout {
		return Result{Waiting: waiting, Since: r.since}
	}
	leaked := make([]string, 0, waiting)
	for _, m := range []map[string]struct{}{r.creates, r.deletes} {
		for name := range m {
			leaked = append(leaked, name)
		}
	}
	for name := range r.changes {
		leaked = append(leaked, name)
	}
	r.close()
	return Result{Satisfied: true, Leaked: leaked}
}

// Gone records that the cache saw pod name deleted: whatever was expected
// of it, creation or deletion, is observed. A pod created and deleted
// before a sync listed it is never listed; without this its creation would
// hold the object's syncs until the timeout.
func (r *Record) Gone(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.creates == nil {
		return
	}
	_, created := r.creates[name]
	_, deleted := r.deletes[name]
	delete(r.creates, name)
	delete(r.deletes, name)
	delete(r.changes, name)
	if !created && !deleted {
		r.gone[name] = struct{}{} // perhaps ours, its ExpectCreate still to come
	}
}

// Pending reports whether any pod write is not yet observed.
func (r *Record) Pending() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.waiting() > 0 // opened for creates that all failed: waits on nothing
}

func (r *Record) waiting() int { return len(r.creates) + len(r.deletes) + len(r.changes) }

func (r *Record) open(now time.Time) {
	if r.creates == nil {
		r.creates, r.deletes, r.gone = map[string]struct{}{}, map[string]struct{}{}, map[string]struct{}{}
		r.changes = map[string]func(*corev1.Pod) bool{}
		r.since = now
	}
}

func (r *Record) close() {
	r.creates, r.deletes, r.changes, r.gone, r.since = nil, nil, nil, nil, time.Time{}
}

// writtenObject is the object as our last write left it, and the versions
// our chain of writes started from, oldest first.
type writtenObject struct {
	before []string
	obj    *appsv1beta1.MyDeployment
}

// CatchUp brings md, read from the cache, up to our last write of it when
// the cache has not shown that write yet: a sync that read the object
// before then would plan from the annotations before the write (what the
// pods are sized for: a stale record makes a scaling event of a rollout
// step) and diff against the status before it (refused by the optimistic
// lock for nothing). Once the cache shows any version not of the chain,
// the written object is dropped: the cache has moved past it.
func (r *Record) CatchUp(md *appsv1beta1.MyDeployment) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.written == nil {
		return
	}
	if !slices.Contains(r.written.before, md.ResourceVersion) {
		r.written = nil // the cache shows our last write, or moved past it
		return
	}
	r.written.obj.DeepCopyInto(md)
}

// Wrote records obj, the object as a write that started from version before
// returned it.
func (r *Record) Wrote(before string, obj *appsv1beta1.MyDeployment) {
	if obj.ResourceVersion == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	w := &writtenObject{before: []string{before}, obj: obj.DeepCopy()}
	if prev := r.written; prev != nil && prev.obj.ResourceVersion == before {
		w.before = append(slices.Clip(prev.before), before) // a chain of our writes
	}
	r.written = w
}

type writtenStep struct {
	seen func(*corev1.Pod) bool
	at   time.Time
}

// StepPending says an in-place step (a gate mark, a patch) was written for
// pod less than StepTTL ago and the cache does not show it yet (its seen
// is false of pod as the cache has it): the step must not be written
// again. Under load a MyDeployment syncs many times between a write and
// its watch event, and each would repeat it.
//
// What the cache shows is asked of the pod itself, not read from its
// resourceVersion: a version newer than the one the step was written from
// need not hold the write. Our own two writes of one step (the spec patch,
// then the resize) leave a version in between, as does another writer (the
// kubelet's status) between our read and our write; either, taken for the
// write seen, had the step written twice.
func (r *Record) StepPending(pod *corev1.Pod, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.steps[pod.UID]
	if ok && now.Sub(s.at) < StepTTL && !s.seen(pod) {
		return true
	}
	if ok {
		delete(r.steps, pod.UID)
	}
	return false
}

// StepWritten records a step written for pod at now; seen says whether a
// later state of the pod shows it, and must be cheap and keep no pod. A
// step that failed is not recorded (the next sync retries it: a lost reply
// whose write landed is then seen, or written again to the same effect).
func (r *Record) StepWritten(pod *corev1.Pod, seen func(*corev1.Pod) bool, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.steps == nil {
		r.steps = map[types.UID]writtenStep{}
	}
	for uid, s := range r.steps {
		if now.Sub(s.at) >= StepTTL {
			delete(r.steps, uid) // pods deleted before their event leave entries behind
		}
	}
	r.steps[pod.UID] = writtenStep{seen: seen, at: now}
}

// ForgetSteps forgets the step written for pod: a new in-place update of
// it begins (its gate set False, which is no step), and the last step of
// the one before, its gate True, is false of the pod from now on; kept, it
// would hold back the new update's steps until StepTTL.
func (r *Record) ForgetSteps(pod *corev1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.steps, pod.UID)
}
