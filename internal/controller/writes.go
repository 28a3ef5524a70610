package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/inplace"
	"github.com/mydeployment-io/mydeployment-operator/internal/ownership"
)

// writeKind is one kind of pod write a sync makes. writeRules is the one
// place that tells the freshness record of our writes: for each kind, what
// the cache must show once it holds the write (expect), and how a write
// whose reply was lost is read back from the API server (landed). Every
// pod write of act goes through wrote; nothing else writes the record's
// expectations. Two writes keep theirs elsewhere by design: the
// MyDeployment's own annotations and status (object.Wrote, with the
// object as written: statuswrite.go, sync.go), and ControllerRevisions,
// which need none (a create that finds its name taken compares the data:
// revision.Store).
type writeKind int

const (
	writeCreate    writeKind = iota
	writeDelete              // a delete, or an eviction that went through
	writeGateStart           // an in-place update's start: its gate False
	writeStep                // a later in-place step: the spec patch (and resize), gate True, or failed
)

// writeRule is what a kind of write tells the record.
type writeRule struct {
	// expect records a write that took effect: the sync after waits until
	// the cache shows it (shown, for the kinds that change a pod).
	expect func(p *syncPlan, pod *corev1.Pod, shown func(*corev1.Pod) bool)
	// landed reads back a write whose reply was lost and says whether it
	// took effect (then it is expected as any other).
	landed func(ctx context.Context, r *MyDeploymentReconciler, p *syncPlan, out *outcome, pod *corev1.Pod,
		shown func(*corev1.Pod) bool) bool
}

var writeRules = [...]writeRule{
	writeCreate: {
		expect: func(p *syncPlan, pod *corev1.Pod, _ func(*corev1.Pod) bool) { p.obj.ExpectCreate(pod.Name, p.now) },
		// The name was the server's (generateName): expect every pod of
		// ours the API server lists instead, and count one pod uncertain.
		landed: func(ctx context.Context, r *MyDeploymentReconciler, p *syncPlan, out *outcome, _ *corev1.Pod, _ func(*corev1.Pod) bool) bool {
			r.expectUnlistedPods(ctx, p)
			out.uncertain.Add(1)
			return false
		},
	},
	writeDelete: {
		expect: func(p *syncPlan, pod *corev1.Pod, _ func(*corev1.Pod) bool) { p.obj.ExpectDelete(pod.Name, p.now) },
		landed: func(ctx context.Context, r *MyDeploymentReconciler, _ *syncPlan, _ *outcome, pod *corev1.Pod, _ func(*corev1.Pod) bool) bool {
			return r.deletedAfterAll(ctx, pod)
		},
	},
	writeGateStart: {
		expect: func(p *syncPlan, pod *corev1.Pod, _ func(*corev1.Pod) bool) {
			p.obj.ExpectChange(pod.Name, inplace.Updating, p.now)
			p.obj.ForgetSteps(pod) // its last step, gate True, is no longer what the cache will show
		},
		landed: func(ctx context.Context, r *MyDeploymentReconciler, _ *syncPlan, _ *outcome, pod *corev1.Pod, _ func(*corev1.Pod) bool) bool {
			return r.changedAfterAll(ctx, pod, inplace.Updating)
		},
	},
	writeStep: {
		expect: func(p *syncPlan, pod *corev1.Pod, shown func(*corev1.Pod) bool) { p.obj.StepWritten(pod, shown, p.now) },
		landed: func(ctx context.Context, r *MyDeploymentReconciler, _ *syncPlan, _ *outcome, pod *corev1.Pod, shown func(*corev1.Pod) bool) bool {
			return r.changedAfterAll(ctx, pod, shown)
		},
	},
}

// wrote tells p's record of a pod write that returned err: expected if it
// succeeded, or if its reply was lost and it landed after all. It says
// whether the write counts as made.
func (r *MyDeploymentReconciler) wrote(ctx context.Context, p *syncPlan, out *outcome, kind writeKind, pod *corev1.Pod,
	shown func(*corev1.Pod) bool, err error) bool {
	rule := writeRules[kind]
	if err != nil && !(outcomeUnknown(err) && rule.landed(ctx, r, p, out, pod, shown)) {
		return false
	}
	rule.expect(p, pod, shown)
	return true
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
// expects every pod of p.md the API server lists (expectListedPods), so
// the next sync waits until the cache lists them all, the pod of the lost
// reply among them if it was created. If the list fails, nothing is
// expected: the next sync plans as if the create had failed.
func (r *MyDeploymentReconciler) expectUnlistedPods(ctx context.Context, p *syncPlan) {
	if _, err := r.expectListedPods(ctx, p.md, p.selector, p.obj, p.now); err != nil {
		logf.FromContext(ctx).Error(err, "listing pods after a create timed out")
	}
}

// expectListedPods lists md's pods from the API server (a quorum read)
// and expects every one it controls that is not terminating and that the
// pod cache can hold (cachedPods: a pod without a revision label is a
// stray, released by the pod claim, and would be waited for in vain); pods
// the cache lists already are observed at once. It returns how many it
// expected.
// in obj's record (selector: md's; now: the sync's).
func (r *MyDeploymentReconciler) expectListedPods(ctx context.Context, md *appsv1beta1.MyDeployment, selector labels.Selector,
	obj *object, now time.Time) (int, error) {
	list := &corev1.PodList{}
	if err := r.APIReader.List(ctx, list, client.InNamespace(md.Namespace),
		client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return 0, err
	}
	n := 0
	for i := range list.Items {
		pod := &list.Items[i]
		if ref := metav1.GetControllerOfNoCopy(pod); ref != nil && ref.UID == md.UID && pod.DeletionTimestamp == nil &&
			cachedPods.Matches(labels.Set(pod.Labels)) {
			obj.ExpectCreate(pod.Name, now)
			n++
		}
	}
	return n, nil
}

// deletedAfterAll is called after a delete of pod timed out: it reads pod
// back from the API server and reports whether it is gone or terminating,
// i.e. whether the delete (or another) took effect.
func (r *MyDeploymentReconciler) deletedAfterAll(ctx context.Context, pod *corev1.Pod) bool {
	fresh, err := r.readBack(ctx, pod)
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
func (r *MyDeploymentReconciler) readBack(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	fresh := &corev1.Pod{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(pod), fresh); err != nil {
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
func (r *MyDeploymentReconciler) changedAfterAll(ctx context.Context, pod *corev1.Pod, changed func(*corev1.Pod) bool) bool {
	fresh, err := r.readBack(ctx, pod)
	if err != nil {
		logf.FromContext(ctx).Error(err, "reading a pod back after a write timed out", "pod", pod.Name)
		return false
	}
	return fresh != nil && fresh.UID == pod.UID && changed(fresh)
}

// adoptedAfterAll reads pod back after its adoption failed with adoptErr:
// nil if it is ours after all; adoptErr if still an orphan (retry);
// errChangedWhileClaiming if gone or another's (the plan counted it).
func (r *MyDeploymentReconciler) adoptedAfterAll(ctx context.Context, md *appsv1beta1.MyDeployment, pod *corev1.Pod, adoptErr error) error {
	fresh, err := r.readBack(ctx, pod)
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
