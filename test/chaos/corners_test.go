package chaos

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// corner is a change a user or another actor makes that the suite's
// random rollouts and scales never would: the corners of Deployment's
// semantics (issue 21). Each leaves the MyDeployment converged on its spec.
type corner int

const (
	// cornerFreshPodDeleted: the first pod a scale-up creates is deleted
	// the moment the watch shows it, before the controller's cache can.
	cornerFreshPodDeleted corner = iota
	// cornerLabelSurgery: one pod loses its pod-template-hash label, another
	// has all its labels replaced: both are released and replaced.
	cornerLabelSurgery
	// cornerOrphanRecreate: the MyDeployment is deleted with
	// --cascade=orphan and created again: it adopts its pods, none replaced.
	cornerOrphanRecreate
	// cornerRunawayScale: replicas set far too high, then corrected once
	// pods are being created: creation stops and it converges back.
	cornerRunawayScale
	corners
)

func (c corner) String() string {
	return [...]string{"fresh pod deleted", "label surgery", "orphan delete and re-create", "runaway scale corrected"}[c]
}

// pickCorner says whether the n-th change of the i-th MyDeployment of w is
// a corner, and which: its first change (in turn) and one in ten (at
// random), or with -chaos.corner one change in two, always that corner.
func pickCorner(w workload, i, n int, rng *rand.Rand) (corner, bool) {
	if !w.corners {
		return 0, false
	}
	if *focus != "" {
		for c := range corners {
			if c.String() == *focus {
				return c, n == 0 || rng.IntN(2) == 0
			}
		}
		panic(fmt.Sprintf("-chaos.corner=%q names no corner", *focus))
	}
	if n == 0 {
		return corner(i % int(corners)), true
	}
	if rng.IntN(10) != 0 {
		return 0, false
	}
	return corner(rng.IntN(int(corners))), true
}

// runawayReplicas is the typo; runawayStop is how many pods to let it make.
const (
	runawayReplicas = 100000
	runawayStop     = 60
)

// corner makes c on d (converged on d.cur) and waits until d has converged
// again on d.cur.
func (e *env) corner(ctx context.Context, d *tracked, c corner) error {
	e.inFlight.Add(1)
	defer e.inFlight.Add(-1)
	switch c {
	case cornerFreshPodDeleted:
		next := d.cur
		next.replicas++
		before := e.w.podUIDs(d.uid)
		// The delete is part of the change: d converges after it. (Run
		// beside the change, it could land after the change had converged
		// and its steady bounds were set, on a loaded machine: a dip in
		// availability the user made, counted against the controller.)
		return e.changeWith(ctx, d, next, func() error {
			stop := make(chan struct{})
			timer := time.AfterFunc(e.changeTimeout, func() { close(stop) })
			defer timer.Stop()
			return e.deleteFirstNewPod(ctx, d, before, stop)
		})
	case cornerLabelSurgery:
		return e.labelSurgery(ctx, d)
	case cornerOrphanRecreate:
		return e.orphanRecreate(ctx, d)
	case cornerRunawayScale:
		return e.runaway(ctx, d)
	}
	return fmt.Errorf("unknown corner %d", c)
}

// deleteFirstNewPod deletes the first pod of d not in before, as soon as the
// watch delivers it.
func (e *env) deleteFirstNewPod(ctx context.Context, d *tracked, before map[types.UID]bool, stop <-chan struct{}) error {
	for {
		for uid, name := range e.w.podNames(d.uid) {
			if !before[uid] {
				pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: d.ns, UID: uid}}
				if err := e.c.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil && !apierrors.IsNotFound(err) {
					return fmt.Errorf("deleting fresh pod %s: %w", name, err)
				}
				return e.waitGone(d, uid, stop)
			}
		}
		select {
		case <-stop:
			return fmt.Errorf("%s/%s: no new pod appeared to delete", d.ns, d.name)
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// waitGone waits until the watcher no longer sees pod uid of d active: the
// change the delete belongs to must not be judged converged on a view that
// still holds the pod (a full run did: the next change began, and the
// delete's dip in availability was counted against it).
func (e *env) waitGone(d *tracked, uid types.UID, stop <-chan struct{}) error {
	for {
		if _, active := e.w.podNames(d.uid)[uid]; !active {
			return nil
		}
		select {
		case <-stop:
			return fmt.Errorf("%s/%s: the watcher never saw the fresh pod deleted", d.ns, d.name)
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// labelSurgery strips one pod's pod-template-hash and replaces another's
// labels; availability may dip by those two (a user took them away), and a
// stripped pod looks like another revision, so neither is checked until d
// has converged again.
func (e *env) labelSurgery(ctx context.Context, d *tracked) error {
	b := d.inFlight(d.cur, d.cur)
	b.name += " label surgery"
	// Until released, the pods the user took away still count as d's: an
	// unavailable one, or one of "another revision" (its label removed).
	b.checkAvailable, b.recreate = false, false
	names := slices.Sorted(maps.Values(e.w.podNames(d.uid)))
	if len(names) == 0 {
		return nil // scaled to 0: nothing to cut (seen with -chaos.corner, where corners come often)
	}
	e.w.setBounds(d.uid, b)
	surgery := []string{
		`{"metadata":{"labels":{"` + appsv1beta1.PodTemplateHashLabel + `":null}}}`,
		`{"metadata":{"labels":{"app":"elsewhere","` + appsv1beta1.RevisionLabel + `":null,"` + appsv1beta1.PodTemplateHashLabel + `":null}}}`,
	}
	cut := names[:min(len(names), len(surgery))]
	for i, name := range cut {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: d.ns}}
		if err := e.c.Patch(ctx, pod, client.RawPatch(types.MergePatchType, []byte(surgery[i]))); err != nil {
			return fmt.Errorf("label surgery on %s: %w", name, err)
		}
	}
	// Each must be released (a ReplicaSet releases what its selector, which
	// includes pod-template-hash, stops matching), then d converges again.
	deadline := time.Now().Add(e.changeTimeout)
	for _, name := range cut {
		for {
			pod := &corev1.Pod{}
			if err := e.c.Get(ctx, client.ObjectKey{Namespace: d.ns, Name: name}, pod); err != nil {
				return fmt.Errorf("reading released pod %s: %w", name, err)
			}
			ref := metav1.GetControllerOfNoCopy(pod)
			if ref == nil || ref.UID != d.uid {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s/%s: pod %s no longer matches but is still controlled", d.ns, d.name, name)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// The watcher must have seen them released too: converged on its view
	// from before the release (and a status from before it), the corner
	// ended, and its loose bounds with it, before the replacements were
	// ready (a single-replica object "had no available pod").
	for {
		counted := slices.Collect(maps.Values(e.w.podNames(d.uid)))
		if !slices.ContainsFunc(cut, func(n string) bool { return slices.Contains(counted, n) }) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s/%s: the watcher still counts the released pods", d.ns, d.name)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := e.waitConverged(ctx, d, d.cur); err != nil {
		return err
	}
	for _, name := range cut {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: d.ns}}
		if err := e.c.Delete(ctx, pod); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	e.w.setBounds(d.uid, d.steady(d.cur))
	return nil
}

// orphanRecreate deletes d with --cascade=orphan and creates it again: the
// new object must adopt every pod and create none.
func (e *env) orphanRecreate(ctx context.Context, d *tracked) error {
	before := e.w.podUIDs(d.uid)
	md := &appsv1beta1.MyDeployment{ObjectMeta: metav1.ObjectMeta{Name: d.name, Namespace: d.ns}}
	e.w.untrack(d.uid)
	if err := e.c.Delete(ctx, md, client.PropagationPolicy(metav1.DeletePropagationOrphan)); err != nil {
		return err
	}
	deadline := time.Now().Add(e.changeTimeout)
	for {
		err := e.c.Get(ctx, client.ObjectKeyFromObject(md), md)
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s/%s: not gone after an orphan delete: %v", d.ns, d.name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := e.create(ctx, d, d.cur); err != nil {
		return err
	}
	after := e.w.podUIDs(d.uid)
	if !maps.Equal(before, after) {
		return fmt.Errorf("%s/%s: re-created over its orphans, its pods went from %v to %v", d.ns, d.name,
			slices.Collect(maps.Keys(before)), slices.Collect(maps.Keys(after)))
	}
	return nil
}

// runaway sets a typo of a replica count, then corrects it once pods are
// being created: the controller must stop creating within its sync and
// converge back.
func (e *env) runaway(ctx context.Context, d *tracked) error {
	typo := spec{replicas: runawayReplicas, image: d.cur.image}
	e.w.setBounds(d.uid, d.inFlight(d.cur, typo))
	patch := func(n int) error {
		md := &appsv1beta1.MyDeployment{ObjectMeta: metav1.ObjectMeta{Name: d.name, Namespace: d.ns}}
		return e.c.Patch(ctx, md, client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, n)))
	}
	if err := patch(runawayReplicas); err != nil {
		return err
	}
	deadline := time.Now().Add(e.changeTimeout)
	for len(e.w.podNames(d.uid)) < d.cur.replicas+runawayStop {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s/%s: the runaway scale created fewer than %d pods", d.ns, d.name, runawayStop)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := patch(d.cur.replicas); err != nil {
		return err
	}
	if err := e.waitConverged(ctx, d, d.cur); err != nil {
		return err
	}
	e.w.setBounds(d.uid, d.steady(d.cur))
	return nil
}
