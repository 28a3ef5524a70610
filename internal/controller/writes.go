package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/mydeployment-io/mydeployment-operator/internal/inplace"
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
	expect func(s *scope, pod *corev1.Pod, shown func(*corev1.Pod) bool)
	// landed reads back a write whose reply was lost and says whether it
	// took effect (then it is expected as any other).
	landed func(ctx context.Context, r *MyDeploymentReconciler, s *scope, pod *corev1.Pod, shown func(*corev1.Pod) bool) bool
}

var writeRules = [...]writeRule{
	writeCreate: {
		expect: func(s *scope, pod *corev1.Pod, _ func(*corev1.Pod) bool) { s.obj.ExpectCreate(pod.Name, s.now) },
		// The name was the server's (generateName): expect every pod of
		// ours the API server lists instead, and count one pod uncertain.
		landed: func(ctx context.Context, r *MyDeploymentReconciler, s *scope, _ *corev1.Pod, _ func(*corev1.Pod) bool) bool {
			r.expectUnlistedPods(ctx, s)
			s.uncertain.Add(1)
			return false
		},
	},
	writeDelete: {
		expect: func(s *scope, pod *corev1.Pod, _ func(*corev1.Pod) bool) { s.obj.ExpectDelete(pod.Name, s.now) },
		landed: func(ctx context.Context, r *MyDeploymentReconciler, _ *scope, pod *corev1.Pod, _ func(*corev1.Pod) bool) bool {
			return r.deletedAfterAll(ctx, pod)
		},
	},
	writeGateStart: {
		expect: func(s *scope, pod *corev1.Pod, _ func(*corev1.Pod) bool) {
			s.obj.ExpectChange(pod.Name, inplace.Updating, s.now)
			s.obj.ForgetSteps(pod) // its last step, gate True, is no longer what the cache will show
		},
		landed: func(ctx context.Context, r *MyDeploymentReconciler, _ *scope, pod *corev1.Pod, _ func(*corev1.Pod) bool) bool {
			return r.changedAfterAll(ctx, pod, inplace.Updating)
		},
	},
	writeStep: {
		expect: func(s *scope, pod *corev1.Pod, shown func(*corev1.Pod) bool) { s.obj.StepWritten(pod, shown, s.now) },
		landed: func(ctx context.Context, r *MyDeploymentReconciler, _ *scope, pod *corev1.Pod, shown func(*corev1.Pod) bool) bool {
			return r.changedAfterAll(ctx, pod, shown)
		},
	},
}

// wrote tells the record of a pod write that returned err: expected if it
// succeeded, or if its reply was lost and it landed after all. It says
// whether the write counts as made.
func (r *MyDeploymentReconciler) wrote(ctx context.Context, s *scope, kind writeKind, pod *corev1.Pod,
	shown func(*corev1.Pod) bool, err error) bool {
	rule := writeRules[kind]
	if err != nil && !(outcomeUnknown(err) && rule.landed(ctx, r, s, pod, shown)) {
		return false
	}
	rule.expect(s, pod, shown)
	return true
}
