package scorecard

import (
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/modules"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
)

// The two template revisions the simulation rolls through.
const (
	firstRevision  = "example-1"
	secondRevision = "example-2"
)

// tick is the least the simulated clock moves per reconcile.
const tick = time.Second

// simulateRollout runs the controller's planner (rollout.Compute) on a fake
// cluster for md: from no pods to spec.replicas available pods of a first
// revision, then to the same of a second revision (a template edit). Created
// pods are scheduled and marked Ready by the same reconcile's kubelet step;
// deleted pods stay terminating for one reconcile. At every step it checks
// the planner's promises a user relies on: never more than replicas+maxSurge
// active pods, never an available pod deleted below
// replicas-maxUnavailable (RollingUpdate), never old and new pods running
// together (Recreate). It returns a one-line summary, or the problems found.
// plan is the planner under test: rollout.Compute, or a broken one in tests.
func simulateRollout(md *appsv1beta1.MyDeployment, plan func(rollout.Input) rollout.Plan) (string, []string) {
	// The controller's own mapping of the spec: replicas default 1, Recreate
	// 0/0, RollingUpdate values default 25%/25%.
	opts, errs := modules.Parse(md)
	if len(errs) > 0 {
		return "", []string{errs.ToAggregate().Error()}
	}
	in, err := rollout.NewInput(md, opts, "", "", nil, nil, time.Time{})
	if err != nil {
		return "", []string{err.Error()}
	}
	if in.Paused {
		// The controller records no revision for a paused MyDeployment it never ran.
		return "", []string{"spec.paused is true: a new paused MyDeployment creates no pod"}
	}
	c := &fakeCluster{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), plan: plan}
	up, problems := c.rollTo(in, firstRevision)
	if problems != nil {
		return "", prefixed("from 0 pods: ", problems)
	}
	// The first revision is current while the second rolls out: a
	// partition holds its pods there.
	in.CurrentRevision, in.Revisions = firstRevision, []string{firstRevision}
	roll, problems := c.rollTo(in, secondRevision)
	if problems != nil {
		return "", prefixed("rolling out a new template: ", problems)
	}
	strategy := fmt.Sprintf("RollingUpdate maxSurge=%d maxUnavailable=%d", in.MaxSurge, in.MaxUnavailable)
	if in.Strategy == rollout.Recreate {
		strategy = "Recreate"
	}
	held := ""
	if in.Partition > 0 {
		held = fmt.Sprintf(", held at %d of %d updated (partition %d)", in.Replicas-in.Partition, in.Replicas, in.Partition)
	}
	return fmt.Sprintf("%d replicas, %s, minReadySeconds=%d: all available from 0 pods in %d reconcile(s) (peak %d pods); new template rolled out in %d more (peak %d pods, at least %d available%s)",
		in.Replicas, strategy, in.MinReadySeconds, up.steps, up.peak, roll.steps, roll.peak, roll.minAvailable, held), nil
}

func prefixed(p string, list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = p + s
	}
	return out
}

// fakeCluster is the API server and kubelet for one MyDeployment's pods.
type fakeCluster struct {
	plan    func(rollout.Input) rollout.Plan
	now     time.Time
	pods    []*corev1.Pod
	created int
}

// progress is what one rollTo saw.
type progress struct {
	steps, peak, minAvailable int
}

// rollTo reconciles until exactly in.Replicas pods of rev exist, all
// available and none terminating, with nothing left to do; it fails on a
// broken promise or when that takes more than a generous number of steps.
func (c *fakeCluster) rollTo(in rollout.Input, rev string) (progress, []string) {
	in.UpdateRevision = rev
	replicas := int(in.Replicas)
	limit := replicas + int(in.MaxSurge)
	minAvailable := replicas - min(int(in.MaxUnavailable), replicas) // ResolveFenceposts made 0/0 into 0/1
	pr := progress{minAvailable: c.available(in)}
	maxSteps := 20 + 4*replicas
	for step := range maxSteps {
		in.Pods = slices.Clone(c.pods)
		in.Now = c.now
		availableBefore := c.available(in)
		activeBefore := len(c.active())
		plan := c.plan(in)
		if len(plan.Create) == 0 && plan.Removes() == 0 && c.converged(in) {
			pr.steps = step
			return pr, nil
		}

		// Pods seen terminating by this reconcile are gone; then the plan.
		c.pods = slices.DeleteFunc(c.pods, func(p *corev1.Pod) bool { return p.DeletionTimestamp != nil })
		for _, p := range slices.Concat(plan.Delete, plan.Evict) {
			if p.DeletionTimestamp != nil || !slices.Contains(c.pods, p) {
				return pr, []string{fmt.Sprintf("step %d: the plan deletes pod %s, which is not an active pod", step, p.Name)}
			}
			p.DeletionTimestamp = ptr.To(metav1.NewTime(c.now))
		}
		for _, cr := range plan.Create {
			for range cr.Count {
				c.pods = append(c.pods, c.newPod(cr.Revision))
			}
		}

		active := c.active()
		if len(active) > limit && len(active) > activeBefore {
			return pr, []string{fmt.Sprintf("step %d (%s): %d active pods, more than replicas+maxSurge=%d", step, plan.Reason, len(active), limit)}
		}
		available := c.available(in)
		if in.Strategy != rollout.Recreate && available < min(availableBefore, minAvailable) {
			return pr, []string{fmt.Sprintf("step %d (%s): deleting left %d available pods, below replicas-maxUnavailable=%d",
				step, plan.Reason, available, minAvailable)}
		}
		if in.Strategy == rollout.Recreate && slices.ContainsFunc(active, isRev(rev)) &&
			slices.ContainsFunc(c.pods, func(p *corev1.Pod) bool { return !isRev(rev)(p) }) {
			return pr, []string{fmt.Sprintf("step %d (%s): Recreate runs new pods while old ones still exist", step, plan.Reason)}
		}
		pr.peak = max(pr.peak, len(active))
		pr.minAvailable = min(pr.minAvailable, available)

		// The kubelet: every active pod is scheduled, running and Ready.
		for _, p := range active {
			markReady(p, c.now)
		}
		c.now = c.now.Add(max(tick, plan.RequeueAfter))
	}
	return pr, []string{fmt.Sprintf("not converged to %d available pods of the new revision after %d reconciles (%d pods, %d available)",
		replicas, maxSteps, len(c.pods), c.available(in))}
}

// available counts the active pods available at the cluster's clock.
func (c *fakeCluster) available(in rollout.Input) int {
	n := 0
	for _, p := range c.pods {
		if rollout.IsAvailable(p, in.MinReadySeconds, c.now) {
			n++
		}
	}
	return n
}

func (c *fakeCluster) active() []*corev1.Pod {
	return slices.DeleteFunc(slices.Clone(c.pods), func(p *corev1.Pod) bool { return p.DeletionTimestamp != nil })
}

// converged: exactly replicas pods, all available, all of the update
// revision but those a partition holds on the current one.
func (c *fakeCluster) converged(in rollout.Input) bool {
	held := 0
	if in.CurrentRevision != "" && in.CurrentRevision != in.UpdateRevision {
		held = int(min(in.Partition, in.Replicas))
	}
	updated := len(slices.DeleteFunc(slices.Clone(c.pods), func(p *corev1.Pod) bool { return !isRev(in.UpdateRevision)(p) }))
	current := len(slices.DeleteFunc(slices.Clone(c.pods), func(p *corev1.Pod) bool { return !isRev(in.CurrentRevision)(p) }))
	if len(c.pods) != int(in.Replicas) || updated != int(in.Replicas)-held || held > 0 && current != held {
		return false
	}
	return c.available(in) == int(in.Replicas)
}

// newPod is a pod as the API server returns it on create: Pending, unscheduled.
func (c *fakeCluster) newPod(rev string) *corev1.Pod {
	c.created++
	name := fmt.Sprintf("example-%d", c.created)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "default", UID: types.UID("uid-" + name),
			Labels:            map[string]string{appsv1.ControllerRevisionHashLabelKey: rev},
			CreationTimestamp: metav1.NewTime(c.now),
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
}

func markReady(p *corev1.Pod, now time.Time) {
	if p.Spec.NodeName != "" {
		return // already running and Ready
	}
	p.Spec.NodeName = "node-0"
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now)}}
}

func isRev(rev string) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool { return p.Labels[appsv1.ControllerRevisionHashLabelKey] == rev }
}
