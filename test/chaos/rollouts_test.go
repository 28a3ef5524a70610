package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// The opt-ins of issue 32 as random changes: canary steps, abort to
// stable, surge-first drains. Each runs under the watcher's bounds, with
// whatever kills and API faults its phase has.

// canaryStepLists are the step lists a canary-steps change picks from:
// sizes, timed pauses and pauses that wait for a promote.
var canaryStepLists = []string{
	"1, 50%, 100%",
	"1, pause 1s, 100%",
	"50%, pause, 100%",
	"1, pause, 50%, pause 1s, 100%",
}

// canarySteps rolls d to a new image through a random step list, promoting
// with --full (the annotation the plugin writes) when a step waits for it,
// and waits for the rollout to complete. The strategy's bounds hold
// throughout; the step list is removed once done.
func (e *env) canarySteps(ctx context.Context, d *tracked, rng *rand.Rand) error {
	steps := canaryStepLists[rng.IntN(len(canaryStepLists))]
	next := d.cur
	next.image++
	e.w.setBounds(d.uid, d.inFlight(d.cur, next))
	if err := e.patch(ctx, d, fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}},"spec":{"template":{"spec":{"containers":%s}}}}`,
		appsv1beta1.CanaryStepsAnnotation, steps, next.containers())); err != nil {
		return err
	}
	deadline := time.Now().Add(e.changeTimeout)
	for {
		md, err := e.get(ctx, d)
		if err != nil {
			return err
		}
		st := md.Status
		if c := progressing(md); c != nil && c.Reason == appsv1beta1.ReasonCanaryPaused &&
			md.Annotations[appsv1beta1.CanaryPromoteAnnotation] != st.UpdateRevision+"/full" {
			if err := e.patch(ctx, d, fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`,
				appsv1beta1.CanaryPromoteAnnotation, st.UpdateRevision+"/full")); err != nil {
				return err
			}
		}
		if st.ObservedGeneration == md.Generation && st.CurrentRevision == st.UpdateRevision && st.UpdatedReplicas == int32(next.replicas) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("steps %q: not complete within %v: %+v", steps, e.changeTimeout, st)
		}
		time.Sleep(150 * time.Millisecond)
	}
	if err := e.waitConverged(ctx, d, next); err != nil {
		return fmt.Errorf("steps %q: %w", steps, err)
	}
	d.cur = next
	e.w.setBounds(d.uid, d.steady(next))
	return e.patch(ctx, d, fmt.Sprintf(`{"metadata":{"annotations":{%q:null,%q:null}}}`,
		appsv1beta1.CanaryStepsAnnotation, appsv1beta1.CanaryPromoteAnnotation))
}

// neverReady is a readiness gate nobody sets: kwok reports such a pod not
// Ready, as a kubelet does.
const neverReady = "chaos.mydeployment.io/never"

// abort opts d into on-failure Abort with a progress deadline of 3s and
// rolls it to a template whose pods never become Ready: past the deadline
// every pod must be back on the stable revision, within the strategy's
// bounds, and no status may claim the aborted revision (statusWatcher).
// Then the template is reverted or fixed forward (a new image, no gate),
// the opt-in removed, and d converges again.
func (e *env) abort(ctx context.Context, d *tracked, rng *rand.Rand) error {
	bad := d.cur
	bad.image++
	e.w.setBounds(d.uid, d.inFlight(d.cur, bad))
	if err := e.patch(ctx, d, fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}},"spec":{"progressDeadlineSeconds":3,`+
		`"template":{"spec":{"readinessGates":[{"conditionType":%q}],"containers":%s}}}}`,
		appsv1beta1.OnFailureAnnotation, appsv1beta1.OnFailureAbort, neverReady, bad.containers())); err != nil {
		return err
	}
	if err := e.waitAborted(ctx, d); err != nil {
		return err
	}
	next := d.cur // reverted: the stable revision's template again
	if rng.IntN(2) == 0 {
		next.image = bad.image + 1 // fixed forward
	}
	e.w.setBounds(d.uid, d.inFlight(d.cur, next))
	if err := e.patch(ctx, d, fmt.Sprintf(`{"metadata":{"annotations":{%q:null}},"spec":{"progressDeadlineSeconds":null,`+
		`"template":{"spec":{"readinessGates":null,"containers":%s}}}}`, appsv1beta1.OnFailureAnnotation, next.containers())); err != nil {
		return err
	}
	if err := e.waitConverged(ctx, d, next); err != nil {
		return fmt.Errorf("after the abort: %w", err)
	}
	d.cur = next
	e.w.setBounds(d.uid, d.steady(next))
	return nil
}

// waitAborted waits until d says its rollout is aborted (Progressing False,
// RolloutAborted, the aborted-revision annotation naming the update
// revision) and every one of its pods runs the stable revision, Ready.
func (e *env) waitAborted(ctx context.Context, d *tracked) error {
	deadline := time.Now().Add(e.changeTimeout)
	var last string
	for time.Now().Before(deadline) {
		md, err := e.get(ctx, d)
		if err == nil {
			st, v, c := md.Status, e.w.view(d.uid), progressing(md)
			last = fmt.Sprintf("pods active=%d ready=%d terminating=%d per revision=%v; status update=%s current=%s progressing=%+v aborted=%q",
				v.active, v.ready, v.terminating, v.perRevision, st.UpdateRevision, st.CurrentRevision, c,
				md.Annotations[appsv1beta1.AbortedRevisionAnnotation])
			if c != nil && c.Status == corev1.ConditionFalse && c.Reason == appsv1beta1.ReasonRolloutAborted &&
				md.Annotations[appsv1beta1.AbortedRevisionAnnotation] == st.UpdateRevision &&
				v.active == d.cur.replicas && v.ready == d.cur.replicas && v.terminating == 0 &&
				v.perRevision[st.CurrentRevision] == d.cur.replicas {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(150 * time.Millisecond):
		}
	}
	return fmt.Errorf("not aborted to the stable revision within %v: %s", e.changeTimeout, last)
}

// drain opts d into drain SurgeFirst and cordons a node that runs some of
// its pods, until they have moved: the replacement first (at least one pod
// of surge), the old pod once it is available, so never fewer available
// pods than replicas. Then the node is uncordoned and the opt-in removed.
// One drain at a time: a cordon narrows every MyDeployment's room.
func (e *env) drain(ctx context.Context, d *tracked, rng *rand.Rand) error {
	e.cordon.Lock()
	defer e.cordon.Unlock()
	if err := e.patch(ctx, d, fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`,
		appsv1beta1.DrainAnnotation, appsv1beta1.DrainSurgeFirst)); err != nil {
		return err
	}
	nodes := e.w.nodesOf(d.uid)
	if len(nodes) == 0 {
		return fmt.Errorf("no pod of %s/%s on a node", d.ns, d.name)
	}
	node := nodes[rng.IntN(len(nodes))]
	surge, _ := d.fenceposts(d.cur.replicas)
	b := d.steady(d.cur)
	b.name = fmt.Sprintf("%s/%s (drain of %s at %+v)", d.ns, d.name, node, d.cur)
	b.maxActive, b.maxPerRevision = d.cur.replicas+max(surge, 1), d.cur.replicas+max(surge, 1)
	b.minAvailable = d.cur.replicas
	e.w.setBounds(d.uid, b)
	if err := e.setUnschedulable(ctx, node, true); err != nil {
		return err
	}
	defer func() { _ = e.setUnschedulable(context.WithoutCancel(ctx), node, false) }()
	deadline := time.Now().Add(e.changeTimeout)
	for slices.Contains(e.w.nodesOf(d.uid), node) {
		if time.Now().After(deadline) {
			return fmt.Errorf("drain of %s: pods of %s/%s still there after %v", node, d.ns, d.name, e.changeTimeout)
		}
		time.Sleep(150 * time.Millisecond)
	}
	if err := e.waitConverged(ctx, d, d.cur); err != nil {
		return fmt.Errorf("drain of %s: %w", node, err)
	}
	if err := e.setUnschedulable(ctx, node, false); err != nil {
		return err
	}
	e.w.setBounds(d.uid, d.steady(d.cur))
	return e.patch(ctx, d, fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, appsv1beta1.DrainAnnotation))
}

func (e *env) setUnschedulable(ctx context.Context, node string, on bool) error {
	n := &corev1.Node{}
	n.Name = node
	return e.c.Patch(ctx, n, client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"unschedulable":%t}}`, on)))
}

func (e *env) get(ctx context.Context, d *tracked) (*appsv1beta1.MyDeployment, error) {
	md := &appsv1beta1.MyDeployment{}
	return md, e.c.Get(ctx, client.ObjectKey{Namespace: d.ns, Name: d.name}, md)
}

func progressing(md *appsv1beta1.MyDeployment) *appsv1.DeploymentCondition {
	for i := range md.Status.Conditions {
		if md.Status.Conditions[i].Type == appsv1beta1.ConditionProgressing {
			return &md.Status.Conditions[i]
		}
	}
	return nil
}

// nodesOf are the nodes owner's active pods run on, sorted, each once.
func (w *watcher) nodesOf(owner types.UID) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, p := range w.ownedLocked(owner) {
		if active(p) && p.Spec.NodeName != "" && !seen[p.Spec.NodeName] {
			seen[p.Spec.NodeName] = true
			out = append(out, p.Spec.NodeName)
		}
	}
	slices.Sort(out)
	return out
}
