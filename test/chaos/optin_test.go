package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// optinChange is a change that uses behaviour beyond Deployment (issue 17):
// a canary held at a partition, a pod chosen to go first. MyDeployments
// created with respect-pdb (see withPDB) roll through evictions under a
// PodDisruptionBudget whatever the change.
type optinChange int

const (
	// optinCanary: a new image under a partition; held there, then promoted.
	optinCanary optinChange = iota
	// optinCanaryRaised: the same, but the partition is raised to every
	// pod before the promotion, so the updated pods go back first.
	optinCanaryRaised
	// optinSpecifiedDelete: one pod labelled specified-delete is replaced.
	optinSpecifiedDelete
	// optinCanarySteps: a new image with canary steps (issue 32), sizes
	// and timed pauses, sometimes a pause promoted with --full.
	optinCanarySteps
	// optinAbort: an update whose pods never become Ready, with on-failure
	// Abort and a short progress deadline: back to the stable revision,
	// then the template reverted or fixed forward.
	optinAbort
	// optinDrain: drain SurgeFirst, and a node with some of its pods
	// cordoned until they have moved (one cordon at a time).
	optinDrain
	// optinConfigEdit: the data of the ConfigMap the pods read changes
	// (rollout-on-config-change): a rollout with no spec change.
	optinConfigEdit
	// optinAnalysis: a new image through canary steps under analysis
	// (issue 45): passing, failing at step 2 (aborted to stable), or with
	// Prometheus down at a step (held, then resumed).
	optinAnalysis
	// optinHooks: a new image with a rollout hook (issue 53): a pre hook
	// that succeeds, a slow step hook, a pre hook that fails and is
	// retried, or one that fails under onFailure Abort (hooks_test.go).
	optinHooks
	// optinWaves: a new image rolled one zone at a time with a bake
	// (issue 53; waves_test.go).
	optinWaves
	optinChanges
)

func (c optinChange) String() string {
	return [...]string{"canary held and promoted", "canary raised back and promoted", "specified delete",
		"canary steps", "abort to stable", "surge-first drain", "config edit", "canary analysis", "rollout hooks", "zone waves"}[c]
}

// pdbStrategy is the strategy of a respect-pdb MyDeployment: maxUnavailable
// 50% would let half the pods go at once; its budget (maxUnavailable 1)
// lets one, and the watcher holds the rollout to the budget.
var pdbStrategy = rolling(intstr.FromInt32(0), intstr.FromString("50%"))

// withPDB makes d a respect-pdb MyDeployment: the annotation on create, a
// PodDisruptionBudget over its pods.
func (e *env) withPDB(ctx context.Context, d *tracked) error {
	d.respectPDB, d.strategy = true, pdbStrategy
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: d.name, Namespace: d.ns},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptrTo(intstr.FromInt32(1)),
			// Only pods with a pod-template-hash: a pod the label-surgery
			// corner released keeps the app label, and a budget selecting a
			// pod no controller manages cannot be computed (the disruption
			// controller reports UnmanagedPods and allows no disruption).
			Selector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"app": d.name},
				MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: appsv1beta1.PodTemplateHashLabel, Operator: metav1.LabelSelectorOpExists},
				},
			},
		},
	}
	return e.c.Create(ctx, pdb)
}

func ptrTo[T any](v T) *T { return &v }

// optinOdds: one change in optinOdds is an opt-in change (one in two
// with -chaos.optin).
func optinOdds() int {
	if *optinFocus != "" {
		return 2
	}
	return 5
}

// pickOptin is the opt-in change for d now, or false if none applies.
func pickOptin(d *tracked, rng *rand.Rand) (optinChange, bool) {
	if d.cur.configMap != "" && (*optinFocus == optinConfigEdit.String() || *optinFocus == "" && rng.IntN(2) == 0) {
		return optinConfigEdit, true
	}
	if d.recreate() || d.cur.replicas < 2 || *optinFocus == "" && rng.IntN(3) == 0 {
		return optinSpecifiedDelete, d.cur.replicas > 0
	}
	if *optinFocus != "" {
		for c := range optinChanges {
			if c == optinConfigEdit && c.String() == *optinFocus || c == optinWaves && d.inPlace && c.String() == *optinFocus {
				// Only objects that read a ConfigMap have one to edit;
				// waves are checked by the pods they create.
				return optinSpecifiedDelete, d.cur.replicas > 0
			}
			if c.String() == *optinFocus {
				return c, true
			}
		}
		panic(fmt.Sprintf("-chaos.optin=%q names no opt-in change", *optinFocus))
	}
	switch rng.IntN(9) {
	case 5:
		return optinHooks, true
	case 6:
		// Not in place: pods updated in place were not created by the wave.
		if !d.inPlace {
			return optinWaves, true
		}
	case 4:
		return optinAnalysis, true
	case 0:
		return optinCanaryRaised, true
	case 1:
		return optinCanarySteps, true
	case 2:
		return optinAbort, true
	case 3:
		return optinDrain, true
	}
	return optinCanary, true
}

// optin makes c on d (converged on d.cur) and leaves it converged again.
func (e *env) optin(ctx context.Context, d *tracked, c optinChange, rng *rand.Rand) error {
	e.inFlight.Add(1)
	defer e.inFlight.Add(-1)
	switch c {
	case optinSpecifiedDelete:
		return e.specifiedDelete(ctx, d, rng)
	case optinCanarySteps:
		return e.canarySteps(ctx, d, rng)
	case optinAbort:
		return e.abort(ctx, d, rng)
	case optinDrain:
		return e.drain(ctx, d, rng)
	case optinConfigEdit:
		return e.configEdit(ctx, d)
	case optinAnalysis:
		return e.analysis(ctx, d, rng)
	case optinHooks:
		return e.hooksChange(ctx, d)
	case optinWaves:
		return e.wavesChange(ctx, d)
	}
	return e.canary(ctx, d, c == optinCanaryRaised, rng)
}

// canary rolls d to a new image under a random partition (a count or a
// percentage), waits for the hold, checks nothing moves while held, then
// (raise) raises the partition to every pod and waits for the updated pods
// to go back, and finally removes the partition and waits for the rollout
// to complete. Once the hold is reached the watcher checks that never fewer
// than the held pods run the current revision.
func (e *env) canary(ctx context.Context, d *tracked, raise bool, rng *rand.Rand) error {
	replicas := d.cur.replicas
	value, held := fmt.Sprint(1+rng.IntN(replicas-1)), 0
	if rng.IntN(2) == 0 {
		pct := 10 * (1 + rng.IntN(9))
		if h := (pct*replicas + 99) / 100; h < replicas {
			value = fmt.Sprintf("%d%%", pct)
		}
	}
	if strings.HasSuffix(value, "%") {
		var pct int
		fmt.Sscanf(value, "%d%%", &pct)
		held = (pct*replicas + 99) / 100
	} else {
		fmt.Sscan(value, &held)
	}
	next := d.cur
	next.image++
	b := d.inFlight(d.cur, next)
	e.w.setBounds(d.uid, b)
	if err := e.patch(ctx, d, fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}},"spec":{"template":{"spec":{"containers":%s}}}}`,
		appsv1beta1.PartitionAnnotation, value, next.containers())); err != nil {
		return err
	}
	current, update, err := e.waitHeld(ctx, d, replicas-held)
	if err != nil {
		return fmt.Errorf("partition %s of %d: %w", value, replicas, err)
	}
	b.heldRevision, b.minHeld = current, held
	e.w.setBounds(d.uid, b)
	before := e.w.podUIDs(d.uid)
	time.Sleep(time.Second)
	if after := e.w.podUIDs(d.uid); len(after) != len(before) {
		return fmt.Errorf("partition %s of %d: pods moved while held (%d -> %d)", value, replicas, len(before), len(after))
	}
	if raise {
		if err := e.patch(ctx, d, fmt.Sprintf(`{"metadata":{"annotations":{%q:"%d"}}}`, appsv1beta1.PartitionAnnotation, replicas)); err != nil {
			return err
		}
		if _, _, err := e.waitHeld(ctx, d, 0); err != nil {
			return fmt.Errorf("partition raised to %d: %w", replicas, err)
		}
		if n := e.w.view(d.uid).perRevision[update]; n != 0 {
			return fmt.Errorf("partition raised to %d: %d pods still on %s", replicas, n, update)
		}
	}
	b.heldRevision, b.minHeld = "", 0
	e.w.setBounds(d.uid, b)
	if err := e.patch(ctx, d, fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, appsv1beta1.PartitionAnnotation)); err != nil {
		return err
	}
	if err := e.waitConverged(ctx, d, next); err != nil {
		return err
	}
	d.cur = next
	e.w.setBounds(d.uid, d.steady(next))
	return nil
}

func (e *env) patch(ctx context.Context, d *tracked, patch string) error {
	md := &appsv1beta1.MyDeployment{ObjectMeta: metav1.ObjectMeta{Name: d.name, Namespace: d.ns}}
	return e.c.Patch(ctx, md, client.RawPatch(types.MergePatchType, []byte(patch)))
}

// waitHeld waits until d's pods and status say the rollout is held with
// updated pods on the update revision and the rest on the current one, all
// Ready, and returns both revisions.
func (e *env) waitHeld(ctx context.Context, d *tracked, updated int) (current, update string, err error) {
	deadline := time.Now().Add(e.changeTimeout)
	var last string
	for time.Now().Before(deadline) {
		md := &appsv1beta1.MyDeployment{}
		if err := e.c.Get(ctx, client.ObjectKey{Namespace: d.ns, Name: d.name}, md); err == nil {
			st, v := md.Status, e.w.view(d.uid)
			reason := ""
			for _, c := range st.Conditions {
				if c.Type == appsv1beta1.ConditionProgressing {
					reason = c.Reason
				}
			}
			r := int32(d.cur.replicas)
			last = fmt.Sprintf("pods active=%d ready=%d terminating=%d per revision=%v; status gen=%d/%d updated=%d available=%d progressing=%s",
				v.active, v.ready, v.terminating, v.perRevision, st.ObservedGeneration, md.Generation, st.UpdatedReplicas, st.AvailableReplicas, reason)
			if v.active == d.cur.replicas && v.ready == d.cur.replicas && v.terminating == 0 &&
				v.perRevision[st.UpdateRevision] == updated && v.perRevision[st.CurrentRevision] == d.cur.replicas-updated &&
				st.ObservedGeneration == md.Generation && st.UpdatedReplicas == int32(updated) && st.AvailableReplicas == r &&
				reason == appsv1beta1.ReasonPartitionAvailable {
				return st.CurrentRevision, st.UpdateRevision, nil
			}
		}
		select {
		case <-ctx.Done():
			return "", "", ctx.Err()
		case <-time.After(150 * time.Millisecond):
		}
	}
	return "", "", fmt.Errorf("not held at %d updated within %v: %s", updated, e.changeTimeout, last)
}

// specifiedDelete labels one of d's pods specified-delete and waits until
// it is gone and d has converged again on d.cur (its replacement made).
func (e *env) specifiedDelete(ctx context.Context, d *tracked, rng *rand.Rand) error {
	names := e.w.podNames(d.uid)
	uids := make([]types.UID, 0, len(names))
	for uid := range names {
		uids = append(uids, uid)
	}
	if len(uids) == 0 {
		return nil
	}
	slices.Sort(uids)
	victim := uids[rng.IntN(len(uids))]
	b := d.steady(d.cur)
	surge, _ := d.fenceposts(d.cur.replicas)
	// The replacement may come first, within maxSurge.
	b.maxActive, b.maxPerRevision = d.cur.replicas+surge, d.cur.replicas+surge
	e.w.setBounds(d.uid, b)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: names[victim], Namespace: d.ns}}
	if err := e.c.Patch(ctx, pod, client.RawPatch(types.MergePatchType,
		fmt.Appendf(nil, `{"metadata":{"labels":{%q:"true"}}}`, appsv1beta1.SpecifiedDeleteLabel))); err != nil {
		return client.IgnoreNotFound(err)
	}
	deadline := time.Now().Add(e.changeTimeout)
	for e.w.podUIDs(d.uid)[victim] {
		if time.Now().After(deadline) {
			return fmt.Errorf("pod %s labelled specified-delete still there after %v", names[victim], e.changeTimeout)
		}
		time.Sleep(150 * time.Millisecond)
	}
	if err := e.waitConverged(ctx, d, d.cur); err != nil {
		return err
	}
	e.w.setBounds(d.uid, d.steady(d.cur))
	return nil
}

// configMapFor creates the ConfigMap d's pods read (named after it) and
// returns its name.
func (e *env) configMapFor(ctx context.Context, d *tracked) (string, error) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: d.name + "-config", Namespace: d.ns},
		Data: map[string]string{"GENERATION": "0"}}
	return cm.Name, e.c.Create(ctx, cm)
}

// configEdit changes the data of the ConfigMap d's pods read, and waits for
// the rollout it makes (a new update revision) to complete under d's
// strategy's in-flight bounds.
func (e *env) configEdit(ctx context.Context, d *tracked) error {
	md := &appsv1beta1.MyDeployment{}
	if err := e.c.Get(ctx, client.ObjectKey{Namespace: d.ns, Name: d.name}, md); err != nil {
		return err
	}
	before := md.Status.UpdateRevision
	e.w.setBounds(d.uid, d.inFlight(d.cur, d.cur))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: d.cur.configMap, Namespace: d.ns}}
	if err := e.c.Patch(ctx, cm, client.RawPatch(types.MergePatchType,
		fmt.Appendf(nil, `{"data":{"GENERATION":"%d"}}`, time.Now().UnixNano()))); err != nil {
		return err
	}
	deadline := time.Now().Add(e.changeTimeout)
	for md.Status.UpdateRevision == before {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s/%s: no new revision within %v of its ConfigMap's data change", d.ns, d.name, e.changeTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(150 * time.Millisecond):
		}
		if err := e.c.Get(ctx, client.ObjectKey{Namespace: d.ns, Name: d.name}, md); err != nil {
			return err
		}
	}
	if err := e.waitConverged(ctx, d, d.cur); err != nil {
		return err
	}
	e.w.setBounds(d.uid, d.steady(d.cur))
	return nil
}
