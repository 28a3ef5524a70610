package controller

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/freshness"
	"github.com/mydeployment-io/mydeployment-operator/internal/ownership"
	"github.com/mydeployment-io/mydeployment-operator/internal/revision"
)

// objects is the controller's one store of what it knows of each
// MyDeployment beyond the informer cache: an object per MyDeployment, keyed
// by its UID, so an object re-created under a name never inherits its
// namesake's state. The name index only finds the UID to forget: forget,
// called when a sync finds the object gone, is the one place that drops
// an object (a namesake's is dropped when the new object is first seen).
// Safe for concurrent use.
type objects struct {
	timeout time.Duration
	mu      sync.Mutex
	byUID   map[types.UID]*object
	byName  map[types.NamespacedName]types.UID
	// sweeps are the lists of possible strays, one per namespace per
	// manager run (see claimer.sweep).
	sweeps map[string]*namespaceSweep
}

// object is what the controller keeps of one MyDeployment between syncs:
// its freshness record and watch notes, concurrent structures written as
// the writes and events happen, and its memory, a value the object's own
// sync reads once and commits once.
type object struct {
	*freshness.Record
	// watchNotes are the watches' news for its next sync (strays, vetting).
	watchNotes
	// mem is committed by the object's own sync only (Reconcile's
	// commit), which the work queue never runs twice at once.
	mem memory
}

// memory is what one sync of a MyDeployment leaves to its next, beyond the
// freshness record and the watch notes: a value. Reconcile copies it into
// the observation (observe's, with the canary step's measurements it took);
// claim returns it in claimed with what the claim changed (the revision
// data, swept), act in outcome (the eviction backoff), and Reconcile
// commits the last one, with the status write's time, once, on every path
// that observed. No phase writes an earlier phase's value.
//
// The freshness record is not part of it: its entries are raised before a
// write is sent, or the pod's event could reach the handler before the
// entry does and the entry would wait its whole timeout (as Kubernetes'
// expectations, pkg/controller/controller_utils.go ExpectDeletions).
type memory struct {
	// swept: its possible strays were listed once since the start (sweep).
	swept bool
	// statusWrittenAt is when its status was last written, for pacing
	// progress-only writes (see paceStatus).
	statusWrittenAt time.Time
	// evictionDelay is the next retry's delay in a spell of evictions a
	// disruption budget refuses; 0 outside one.
	evictionDelay time.Duration
	// revision is its template's revision data, encoded once per template.
	revision revisionData
	// modules is each opt-in module's own memory of the object, by module
	// name (optin.Keeper: the analysis module's measurements of the canary
	// step under way, which live nowhere else), handed back to the module
	// at the next sync's read.
	modules map[string]any
}

// revisionData is [revision.Patch] of a template at generation and
// config: a template changes only with a new generation (or new config
// hashes), and encoding it on every sync was 3% of the manager's CPU.
type revisionData struct {
	data       []byte
	generation int64
	// config is the config hashes data's template carries.
	config string
}

// commit keeps m as what the object's next sync starts from.
func (obj *object) commit(m memory) { obj.mem = m }

func newObjects(timeout time.Duration) *objects {
	return &objects{timeout: timeout, byUID: map[types.UID]*object{}, byName: map[types.NamespacedName]types.UID{},
		sweeps: map[string]*namespaceSweep{}}
}

// get returns md's object, made on first sight; a namesake's is dropped.
func (o *objects) get(md *appsv1beta1.MyDeployment) *object {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.claimName(client.ObjectKeyFromObject(md), md.UID)
}

// claimName returns uid's object, made if absent, and names key after it,
// dropping the object of a namesake key named before. o.mu is held.
func (o *objects) claimName(key types.NamespacedName, uid types.UID) *object {
	if prev, ok := o.byName[key]; ok && prev != uid {
		delete(o.byUID, prev)
	}
	o.byName[key] = uid
	obj := o.byUID[uid]
	if obj == nil {
		obj = &object{Record: freshness.NewRecord(o.timeout)}
		o.byUID[uid] = obj
	}
	return obj
}

// ofPod returns the object of the MyDeployment key with uid, made if absent,
// for a pod event that names it as controller; nil if key now names another
// object (uid is a deleted namesake: its pods are the garbage collector's).
func (o *objects) ofPod(key types.NamespacedName, uid types.UID) *object {
	o.mu.Lock()
	defer o.mu.Unlock()
	if cur, ok := o.byName[key]; ok && cur != uid {
		return nil
	}
	return o.claimName(key, uid)
}

// lookup returns uid's object, nil if none.
func (o *objects) lookup(uid types.UID) *object {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.byUID[uid]
}

// forget drops what is kept of the object named key: it is gone.
func (o *objects) forget(key types.NamespacedName) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if uid, ok := o.byName[key]; ok {
		delete(o.byUID, uid)
		delete(o.byName, key)
	}
}

// forgetNamespaces drops what is kept of every object in a namespace in
// (their shard slot was given up or is being taken: shards.go), and the
// namespaces' sweeps, and returns the names dropped.
func (o *objects) forgetNamespaces(in func(namespace string) bool) []types.NamespacedName {
	o.mu.Lock()
	defer o.mu.Unlock()
	var gone []types.NamespacedName
	for key, uid := range o.byName {
		if in(key.Namespace) {
			delete(o.byUID, uid)
			delete(o.byName, key)
			gone = append(gone, key)
		}
	}
	for ns := range o.sweeps {
		if in(ns) {
			delete(o.sweeps, ns)
		}
	}
	return gone
}

// pending counts the objects with pod writes the cache does not show yet.
func (o *objects) pending() int {
	o.mu.Lock()
	objs := make([]*object, 0, len(o.byUID))
	for _, obj := range o.byUID {
		objs = append(objs, obj)
	}
	o.mu.Unlock()
	n := 0
	for _, obj := range objs {
		if obj.Pending() {
			n++
		}
	}
	return n
}

// namespaceSweep returns ns's sweep, made on first use.
func (o *objects) namespaceSweep(ns string) *namespaceSweep {
	o.mu.Lock()
	defer o.mu.Unlock()
	sw := o.sweeps[ns]
	if sw == nil {
		sw = &namespaceSweep{}
		o.sweeps[ns] = sw
	}
	return sw
}

// paceStatus returns how long a progress-only status write must wait, 0
// when it may go now: at most one such write per period (0: no pacing).
// Every status patch of a CRD costs the API server several times a pod
// write (whole-object schema validation, managedFields, JSON); a rollout
// of 50 pods would otherwise write its status for nearly every pod event.
// kube-controller-manager's Job and EndpointSlice controllers batch their
// pod-driven updates the same way. The deferred write is requeued, never lost.
func (m memory) paceStatus(now time.Time, period time.Duration) time.Duration {
	if period <= 0 || m.statusWrittenAt.IsZero() {
		return 0
	}
	return max(0, m.statusWrittenAt.Add(period).Sub(now))
}

// Backoff of a MyDeployment whose evictions a PodDisruptionBudget refuses:
// the first retry after evictionRetryMin, each next one twice as late, up
// to evictionRetryMax; an eviction that succeeds starts over.
const (
	evictionRetryMin = time.Second
	evictionRetryMax = 30 * time.Second
)

// evictionsRefused records a refusal in m and returns when to retry, and
// whether it starts a spell (the one to report).
func (m *memory) evictionsRefused() (retry time.Duration, first bool) {
	if m.evictionDelay == 0 {
		m.evictionDelay = evictionRetryMin
		return evictionRetryMin, true
	}
	m.evictionDelay = min(2*m.evictionDelay, evictionRetryMax)
	return m.evictionDelay, false
}

// evictionsEnd ends a spell in m: an eviction succeeded, or nothing is
// left to replace.
func (m *memory) evictionsEnd() { m.evictionDelay = 0 }

// revisionDataOf returns [revision.Patch] of template, md's template as
// its revision records it (with config, the config hashes it carries),
// computed once per generation and config and kept in m. The bytes are
// shared between the memories that hold them: callers must not modify them.
func (m *memory) revisionDataOf(md *appsv1beta1.MyDeployment, template *corev1.PodTemplateSpec, config string) ([]byte, error) {
	if r := m.revision; r.data != nil && r.generation == md.Generation && r.config == config {
		return r.data, nil
	}
	data, err := revision.Patch(template)
	if err != nil {
		return nil, err
	}
	m.revision = revisionData{data: data, generation: md.Generation, config: config}
	return data, nil
}

// watchNotes are what the watches saw of one MyDeployment that its next
// sync must read around the cache. They are not the freshness record: that
// holds our own writes, these are news of others' (a pod's labels changed,
// a manager before us wrote pods). The watch handlers note; observe and
// claim take. Safe for concurrent use: pod events and the initial list
// reach it beside the object's sync.
type watchNotes struct {
	mu     sync.Mutex
	strays map[types.UID]ownership.Stray
	// vetSince is when the object was marked for vetting (zero: none
	// needed); see vetStart.
	vetSince time.Time
}

// NoteStray remembers a pod that left the cache while it may still exist
// and be ours, for the next sync to read around the cache.
func (n *watchNotes) NoteStray(uid types.UID, s ownership.Stray) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.strays == nil {
		n.strays = map[types.UID]ownership.Stray{}
	}
	n.strays[uid] = s
}

// TakeStrays removes and returns the strays remembered; one a sync could
// not deal with is noted again.
func (n *watchNotes) TakeStrays() map[types.UID]ownership.Stray {
	n.mu.Lock()
	defer n.mu.Unlock()
	s := n.strays
	n.strays = nil
	return s
}

// MarkVet records, at now, that the object existed when the controller
// started watching (its initial list): its pods may have been written by a
// manager before this one, which no expectation of ours covers.
func (n *watchNotes) MarkVet(now time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.vetSince = now
}

// NeedsVet reports whether the object's pods must be listed from the API
// server and found in the cache before its sync may plan, and since when.
func (n *watchNotes) NeedsVet() (bool, time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return !n.vetSince.IsZero(), n.vetSince
}

// Vetted records that the cache showed every pod the API server listed.
func (n *watchNotes) Vetted() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.vetSince = time.Time{}
}

// namespaceSweep is one namespace's listing of possible strays.
type namespaceSweep struct {
	mu    sync.Mutex
	done  bool
	found map[types.UID]map[types.UID]ownership.Stray // by controller UID, then pod UID
}
