package controller

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/inplace"
	"github.com/mydeployment-io/mydeployment-operator/internal/ownership"
	"github.com/mydeployment-io/mydeployment-operator/internal/podcontrol"
	"github.com/mydeployment-io/mydeployment-operator/internal/podwatch"
	"github.com/mydeployment-io/mydeployment-operator/internal/revision"
	"github.com/mydeployment-io/mydeployment-operator/internal/status"
)

// writeKind is one kind of write a sync makes. writeRules is the one place
// that tells the freshness record of our writes: for each kind, what the
// cache must show once it holds the write (expect), and how a write whose
// reply was lost is read back from the API server (landed). Every pod
// write of act goes through wrote, and the object's own annotation and
// status writes through wroteObject; nothing else adds to the record (what
// the cache shows retires its entries: freshness.Record).
type writeKind int

const (
	writeCreate      writeKind = iota
	writeDelete                // a delete
	writeEvict                 // an eviction the disruption budget let through
	writeGateStart             // an in-place update's start: its gate False
	writeStep                  // a later in-place step: the spec patch with its resize, the gate True, or failed
	writeAnnotations           // the MyDeployment's annotations (the records a plan writes)
	writeStatus                // the MyDeployment's status
	writeRevision              // a ControllerRevision created, renumbered or deleted
)

// made is one write that took effect, as its kind's rule reads it: a pod
// write's pod and what the cache must show of it (the kinds that change a
// pod), or an object write's object as it returned and the version it
// started from.
type made struct {
	pod    *corev1.Pod
	shown  func(*corev1.Pod) bool
	before string
	object *appsv1beta1.MyDeployment
}

// writeRule is what a kind of write tells the record.
type writeRule struct {
	// expect records a write that took effect at now: the sync after waits
	// until the cache shows it. nil: the cache need not show it first.
	expect func(obj *object, w made, now time.Time)
	// landed reads back a write whose reply was lost and says whether it
	// took effect (then it is expected as any other). nil: a lost reply is
	// taken as no write (the row says why that is safe).
	landed func(ctx context.Context, a actor, p *syncPlan, out *outcome, w made) bool
}

var writeRules = [...]writeRule{
	writeCreate: {
		expect: func(obj *object, w made, now time.Time) { obj.ExpectCreate(w.pod.Name, now) },
		// The name was the server's (generateName): expect every pod of
		// ours the API server lists instead, and count one pod uncertain.
		landed: func(ctx context.Context, a actor, p *syncPlan, out *outcome, _ made) bool {
			a.expectUnlistedPods(ctx, p)
			out.uncertain.Add(1)
			return false
		},
	},
	writeDelete: {
		expect: expectGone,
		landed: func(ctx context.Context, a actor, _ *syncPlan, _ *outcome, w made) bool {
			return a.deletedAfterAll(ctx, w.pod)
		},
	},
	writeEvict: {
		expect: expectGone,
		landed: func(ctx context.Context, a actor, _ *syncPlan, _ *outcome, w made) bool {
			return a.deletedAfterAll(ctx, w.pod)
		},
	},
	writeGateStart: {
		expect: func(obj *object, w made, now time.Time) {
			obj.ExpectChange(w.pod.Name, inplace.Updating, now)
			obj.ForgetSteps(w.pod) // its last step, gate True, is no longer what the cache will show
		},
		landed: func(ctx context.Context, a actor, _ *syncPlan, _ *outcome, w made) bool {
			return a.changedAfterAll(ctx, w.pod, inplace.Updating)
		},
	},
	writeStep: {
		expect: func(obj *object, w made, now time.Time) { obj.StepWritten(w.pod, w.shown, now) },
		landed: func(ctx context.Context, a actor, _ *syncPlan, _ *outcome, w made) bool {
			return a.changedAfterAll(ctx, w.pod, w.shown)
		},
	},
	// The object as written, until the cache shows it or moves past it
	// (CatchUp). A lost reply is no write: the next sync plans from the
	// cache's copy, and writes the same records again (a merge patch of
	// the same values) or, for a status, is refused by its precondition
	// if the first landed.
	writeAnnotations: {expect: expectObject},
	writeStatus:      {expect: expectObject},
	// Nothing: revisions are read from the cache only to find the history,
	// and a create that finds its name taken (a lost reply's write among
	// others) compares the data (revision.Store).
	writeRevision: {},
}

func expectGone(obj *object, w made, now time.Time) { obj.ExpectDelete(w.pod.Name, now) }

func expectObject(obj *object, w made, _ time.Time) { obj.Wrote(w.before, w.object) }

// wrote tells p's record of a pod write that returned err: expected if it
// succeeded, or if its reply was lost and it landed after all. It says
// whether the write counts as made.
func (a actor) wrote(ctx context.Context, p *syncPlan, out *outcome, kind writeKind, pod *corev1.Pod,
	shown func(*corev1.Pod) bool, err error) bool {
	rule, w := writeRules[kind], made{pod: pod, shown: shown}
	if err != nil && !(outcomeUnknown(err) && rule.landed != nil && rule.landed(ctx, a, p, out, w)) {
		return false
	}
	if rule.expect != nil {
		rule.expect(p.obj, w, p.now)
	}
	return true
}

// wroteObject tells obj's record that a write of kind (annotations or
// status) that started from version before returned written.
func wroteObject(obj *object, kind writeKind, before string, written *appsv1beta1.MyDeployment) {
	writeRules[kind].expect(obj, made{before: before, object: written}, time.Time{})
}

// A write whose reply is lost (the API server or the connection timed out)
// may have taken effect. Counting it as not done is how a controller
// creates a pod twice: the next sync plans from a cache that does not list
// the pod yet, and no expectation holds it back. The ReplicaSet controller
// keeps its count-based expectation for a timed-out create for the same
// reason. Ours are by name, and a created pod's name is server-assigned
// (generateName), so the outcome is read back from the API server instead.

// outcomeUnknown reports whether err leaves open whether the write happened.
func outcomeUnknown(err error) bool {
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err)
}

// expectUnlistedPods is called after a create of p.md's pod timed out: it
// expects every pod of p.md the API server lists (listedPods), so the next
// sync waits until the cache lists them all, the pod of the lost reply
// among them if it was created. If the list fails, nothing is expected:
// the next sync plans as if the create had failed.
func (a actor) expectUnlistedPods(ctx context.Context, p *syncPlan) {
	names, err := listedPods(ctx, a.apiReader, p.md, p.selector)
	if err != nil {
		logf.FromContext(ctx).Error(err, "listing pods after a create timed out")
		return
	}
	for _, name := range names {
		p.obj.ExpectCreate(name, p.now) // one the cache lists already is observed at once
	}
}

// listedPods lists md's pods from the API server (a quorum read) and names
// every one it controls that is not terminating and that the pod cache can
// hold (podwatch.Cached: a pod without a revision label is a stray, released by
// the pod claim, and would be waited for in vain). selector is md's.
func listedPods(ctx context.Context, reader client.Reader, md *appsv1beta1.MyDeployment, selector labels.Selector) ([]string, error) {
	list := &corev1.PodList{}
	if err := reader.List(ctx, list, client.InNamespace(md.Namespace),
		client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return nil, err
	}
	var names []string
	for i := range list.Items {
		pod := &list.Items[i]
		if ref := metav1.GetControllerOfNoCopy(pod); ref != nil && ref.UID == md.UID && pod.DeletionTimestamp == nil &&
			podwatch.Cached.Matches(labels.Set(pod.Labels)) {
			names = append(names, pod.Name)
		}
	}
	return names, nil
}

// deletedAfterAll is called after a delete of pod timed out: it reads pod
// back from the API server and reports whether it is gone or terminating,
// i.e. whether the delete (or another) took effect.
func (a actor) deletedAfterAll(ctx context.Context, pod *corev1.Pod) bool {
	fresh, err := a.readBack(ctx, pod)
	switch {
	case err != nil:
		logf.FromContext(ctx).Error(err, "reading a pod back after its delete timed out", "pod", pod.Name)
		return false
	case fresh == nil:
		return true
	default:
		return fresh.UID != pod.UID || fresh.DeletionTimestamp != nil
	}
}

// readBack reads pod from the API server: nil, nil if it is gone.
func (a actor) readBack(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	fresh := &corev1.Pod{}
	if err := a.apiReader.Get(ctx, client.ObjectKeyFromObject(pod), fresh); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return fresh, nil
}

// changedAfterAll is called after a write to pod timed out (an in-place
// update's start): it reads the pod back and reports whether changed says
// the write landed (then the caller expects it, so the next plan waits
// for the cache instead of counting the pod as it was).
func (a actor) changedAfterAll(ctx context.Context, pod *corev1.Pod, changed func(*corev1.Pod) bool) bool {
	fresh, err := a.readBack(ctx, pod)
	if err != nil {
		logf.FromContext(ctx).Error(err, "reading a pod back after a write timed out", "pod", pod.Name)
		return false
	}
	return fresh != nil && fresh.UID == pod.UID && changed(fresh)
}

// adoptedAfterAll reads pod back after its adoption failed with adoptErr:
// nil if it is ours after all; adoptErr if still an orphan (retry);
// errChangedWhileClaiming if gone or another's (the plan counted it).
func (a actor) adoptedAfterAll(ctx context.Context, md *appsv1beta1.MyDeployment, pod *corev1.Pod, adoptErr error) error {
	fresh, err := a.readBack(ctx, pod)
	switch {
	case err != nil:
		return fmt.Errorf("reading pod %s back after adopting it failed: %w", pod.Name, err)
	case fresh == nil:
		return errChangedWhileClaiming
	}
	switch adopted, orphan := ownership.AdoptedAfterAll(pod, fresh, md.UID); {
	case adopted != nil:
		return nil
	case orphan:
		return adoptErr
	}
	return errChangedWhileClaiming
}

// outcome is what act did that the status and the next look need: what
// the cache cannot show yet (the pods it created, the in-place updates it
// began), the writes that failed, and when to look again.
type outcome struct {
	// planned: a plan was made and its claims written, so the status
	// counts what it keeps and creates.
	planned bool
	// revisionsFailed: a revision write failed before the pods were
	// claimed: the status counts the pods as cached against the revisions
	// status names. unclaimed: adopting or releasing pods failed, so the
	// claimed pods lack some that are ours or about to be: no status is
	// written.
	revisionsFailed, unclaimed bool
	// update is the update revision as written (nil: not written by this
	// sync); collisionCount the count it was written under.
	update         *appsv1.ControllerRevision
	collisionCount int32
	// written are the revisions a hand-over's plan named, each as written
	// (a name found taken: under the next collision count), for the
	// record's names and the status's revisions (asWritten).
	written map[*appsv1.ControllerRevision]*appsv1.ControllerRevision
	// created counts the pods this sync created, and createdUpdated those
	// of the update revision: they exist when the status is written.
	created, createdUpdated int32
	// startedInPlace are the pods whose in-place update this sync began
	// (their gate False written, or a lost reply that landed): counted in
	// the status it writes as the next sync's cache will show them, on
	// their way and not ready. Otherwise the status a sync writes after
	// one batch became Ready and the next began is written again once the
	// cache shows the gates (issue 31: a status write a batch).
	startedInPlace []*corev1.Pod
	// uncertain counts creates whose reply was lost (they may exist).
	uncertain atomic.Int32
	failure   *status.Failure
	// retryAfter, when positive, is when to try evictions a budget refused
	// again, to look again at a revision an opt-in holds (config access
	// denied: revision.Input.RetryAfter), or
	// at a hand-over (handover.go).
	retryAfter time.Duration
	// handOver is what a hand-over sync (adopt-from, handover.go) tells
	// the status.
	handOver handOverState
	// What the metrics count once act returns (countOutcome): an abort
	// recorded, pods removed from draining nodes, in-place updates
	// started, completed, and failed (their pods replaced).
	abortRecorded                                     bool
	drainReplaced                                     atomic.Int32
	inPlaceStarted, inPlaceCompleted, inPlaceFallback int
	// mem is what the sync leaves to the next (memory): the claim's, with
	// what act changed (the eviction backoff).
	mem memory
	// md is the MyDeployment as this sync's annotation writes left it (its
	// records, its resourceVersion: what the status write must see); nil
	// when it wrote none. The observation's object is never modified.
	md *appsv1beta1.MyDeployment
}

// actor is the act phase: the one writer of a sync's pods, revisions,
// records and events, through these seams only.
type actor struct {
	pods      podcontrol.Interface
	revisions *revision.Store
	// writer patches the object's records (its annotations).
	writer client.Writer
	// apiReader reads a write's outcome back when its reply was lost.
	apiReader client.Reader
	recorder  events.EventRecorder
	// inPlaceTimeout is how long an in-place update may take before its
	// pod is replaced.
	inPlaceTimeout time.Duration
}
