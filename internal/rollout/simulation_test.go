package rollout

import (
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// tick is how far the simulated clock moves per reconcile.
const tick = 2 * time.Second

// readiness decides how many of the scheduled, not-yet-ready pods (sorted by
// name) the fake kubelet marks Ready in a step.
type readiness struct {
	name string
	pick func(step, candidates int) int
}

var readinessPatterns = []readiness{
	{"all-ready", func(_, n int) int { return n }},
	{"one-per-step", func(_, n int) int { return min(n, 1) }},
	{"half-per-step", func(_, n int) int { return (n + 1) / 2 }},
	{"stall-every-third-step", func(step, n int) int {
		if step%3 == 2 {
			return 0
		}
		return n
	}}}

// cluster fakes the API server and kubelet for one MyDeployment. Created pods
// start Pending and unscheduled, are scheduled (Running, not Ready) one step
// later, then become Ready as the readiness pattern allows. Deleted pods stay
// terminating for exactly one reconcile, then vanish.
type cluster struct {
	t         testing.TB
	now       time.Time
	step      int
	pods      []*corev1.Pod
	created   int
	scheduled int
	ready     readiness
	// broken is a revision whose pods never become Ready ("" for none).
	broken string
	// avoid are nodes the scheduler places no pod on (cordoned); at most two.
	avoid map[string]bool
}

// newCluster starts with n available pods, split round-robin over revs.
func newCluster(t testing.TB, ready readiness, n int, revs ...string) *cluster {
	c := &cluster{t: t, now: t0, ready: ready}
	for i := range n {
		p := c.newPod(revs[i%len(revs)])
		c.schedule(p)
		setReady(p, t0.Add(-time.Hour))
		c.pods = append(c.pods, p)
	}
	return c
}

func (c *cluster) newPod(rev string) *corev1.Pod {
	c.created++
	name := fmt.Sprintf("p%04d", c.created)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "default", UID: types.UID("uid-" + name),
			Labels:            map[string]string{appsv1.ControllerRevisionHashLabelKey: rev},
			CreationTimestamp: metav1.NewTime(c.now),
		},
		Status: corev1.PodStatus{
			Phase:      corev1.PodPending,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}},
		},
	}
}

// schedule places pods on 3 nodes round-robin, so some end up doubled-up,
// skipping the nodes to avoid.
func (c *cluster) schedule(p *corev1.Pod) {
	for {
		c.scheduled++
		if p.Spec.NodeName = fmt.Sprintf("node-%d", c.scheduled%3); !c.avoid[p.Spec.NodeName] {
			break
		}
	}
	p.Status.Phase = corev1.PodRunning
}

func setReady(p *corev1.Pod, at time.Time) {
	p.Status.Conditions[0].Status = corev1.ConditionTrue
	p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(at)
}

// input completes in with the cluster's pods and clock.
func (c *cluster) input(in Input) Input {
	in.Pods = slices.Clone(c.pods)
	in.Now = c.now
	return in
}

// reconcile plans one step, checks the plan's promises, applies it, lets the
// kubelet act and advances the clock.
func (c *cluster) reconcile(in Input) Plan {
	c.t.Helper()
	in = c.input(in)
	p := Compute(in)
	checkPlan(c.t, in, p)

	// Pods this reconcile saw terminating are gone now.
	c.pods = slices.DeleteFunc(c.pods, func(p *corev1.Pod) bool { return p.DeletionTimestamp != nil })
	for _, d := range slices.Concat(p.Delete, p.Evict) {
		ts := metav1.NewTime(c.now)
		d.DeletionTimestamp = &ts
	}
	for _, cr := range p.Create {
		for range cr.Count {
			c.pods = append(c.pods, c.newPod(cr.Revision))
		}
	}

	var candidates []*corev1.Pod
	for _, pod := range c.pods {
		switch {
		case pod.DeletionTimestamp != nil || pod.CreationTimestamp.Time.Equal(c.now):
			// terminating, or created this step: the kubelet has not seen it yet
		case pod.Spec.NodeName == "":
			c.schedule(pod)
		case !isReady(pod) && (c.broken == "" || revisionOf(pod) != c.broken):
			candidates = append(candidates, pod)
		}
	}
	for _, pod := range candidates[:c.ready.pick(c.step, len(candidates))] {
		setReady(pod, c.now)
	}

	c.step++
	c.now = c.now.Add(tick)
	return p
}

// active returns the pods that are not terminating.
func (c *cluster) active() []*corev1.Pod {
	return slices.DeleteFunc(slices.Clone(c.pods), func(p *corev1.Pod) bool { return p.DeletionTimestamp != nil })
}

// converged reports whether exactly replicas pods exist, all of the update
// revision, active and available.
func (c *cluster) converged(in Input) bool {
	if len(c.pods) != int(in.Replicas) {
		return false
	}
	for _, p := range c.pods {
		if revisionOf(p) != in.UpdateRevision || !IsAvailable(p, in.MinReadySeconds, c.now) {
			return false
		}
	}
	return true
}

// stepBudget bounds convergence. The slowest setting, one pod at a time
// (maxSurge=1 maxUnavailable=0) with minReadySeconds=5, needs 6 steps per pod:
// create, schedule, ready, two ticks inside minReadySeconds, delete the old
// pod; the next pod is created while that one terminates.
func stepBudget(replicas int32) int { return 10 + 7*int(replicas) }

// fence is a RollingUpdate maxSurge/maxUnavailable pair as a user writes it.
type fence struct{ surge, unavailable intstr.IntOrString }

func (f fence) String() string { return f.surge.String() + "/" + f.unavailable.String() }

var fences = []fence{
	{intstr.FromInt32(0), intstr.FromInt32(1)},
	{intstr.FromInt32(1), intstr.FromInt32(0)},
	{intstr.FromString("25%"), intstr.FromString("25%")},
	{intstr.FromString("100%"), intstr.FromInt32(0)},
	{intstr.FromInt32(0), intstr.FromString("100%")},
	{intstr.FromInt32(2), intstr.FromInt32(3)},
	{intstr.FromString("0%"), intstr.FromString("10%")}, // rounds to 0/0, resolved to 0/1
}

var simReplicas = []int32{0, 1, 2, 3, 5, 10, 25}

// TestRollingUpdateSimulation rolls a MyDeployment from one or two old
// revisions to a new one for many settings and asserts, at every step, the
// surge and availability bounds, and convergence within the step budget.
func TestRollingUpdateSimulation(t *testing.T) {
	for _, replicas := range simReplicas {
		for _, f := range fences {
			for _, minReady := range []int32{0, 5} {
				for i, ready := range readinessPatterns {
					oldRevs := []string{revOld, revOld2}[:1+i%2] // alternate plain and roll-over starts
					name := fmt.Sprintf("replicas=%d/fence=%s/minReady=%d/%s/oldRevisions=%d", replicas, f, minReady, ready.name, len(oldRevs))
					t.Run(name, func(t *testing.T) {
						surge, unavailable, err := ResolveFenceposts(&f.surge, &f.unavailable, replicas)
						if err != nil {
							t.Fatal(err)
						}
						in := Input{Replicas: replicas, MaxSurge: surge, MaxUnavailable: unavailable,
							MinReadySeconds: minReady, UpdateRevision: revNew}
						runRollingUpdate(t, newCluster(t, ready, int(replicas), oldRevs...), in)
					})
				}
			}
		}
	}
}

func runRollingUpdate(t *testing.T, c *cluster, in Input) {
	t.Helper()
	maxActive := int(in.Replicas + in.MaxSurge)
	minAvailable := int(in.Replicas - min(in.MaxUnavailable, in.Replicas))
	for !c.converged(in) {
		if c.step > stepBudget(in.Replicas) {
			t.Fatalf("no convergence after %d steps: %+v", c.step, Count(c.pods, in.UpdateRevision, in.MinReadySeconds, c.now))
		}
		o := observe(c.input(in))
		if o.active > maxActive {
			t.Fatalf("step %d: %d active pods > replicas+maxSurge=%d", c.step, o.active, maxActive)
		}
		if o.available < minAvailable {
			t.Fatalf("step %d: %d available pods < replicas-maxUnavailable=%d", c.step, o.available, minAvailable)
		}
		c.reconcile(in)
	}
	assertSettled(t, c, in)
}

// assertSettled checks that a converged MyDeployment is left alone.
func assertSettled(t *testing.T, c *cluster, in Input) {
	t.Helper()
	p := Compute(c.input(in))
	if len(p.Create) != 0 || len(p.Delete) != 0 || p.RequeueAfter != 0 || p.Reason != ReasonInSync {
		t.Fatalf("converged but plan is %s", describe(p))
	}
	want := Counts{Replicas: in.Replicas, Ready: in.Replicas, Available: in.Replicas, Updated: in.Replicas}
	if got := Count(c.pods, in.UpdateRevision, in.MinReadySeconds, c.now); got != want {
		t.Fatalf("converged counts %+v, want %+v", got, want)
	}
}

// TestRecreateSimulation asserts that Recreate never runs a new pod while an
// old one may still run, and converges.
func TestRecreateSimulation(t *testing.T) {
	for _, replicas := range simReplicas {
		for _, minReady := range []int32{0, 5} {
			for i, ready := range readinessPatterns {
				oldRevs := []string{revOld, revOld2}[:1+i%2]
				t.Run(fmt.Sprintf("replicas=%d/minReady=%d/%s/oldRevisions=%d", replicas, minReady, ready.name, len(oldRevs)), func(t *testing.T) {
					c := newCluster(t, ready, int(replicas), oldRevs...)
					in := Input{Replicas: replicas, Strategy: Recreate, MinReadySeconds: minReady, UpdateRevision: revNew}
					for !c.converged(in) {
						if c.step > stepBudget(replicas) {
							t.Fatalf("no convergence after %d steps", c.step)
						}
						var oldAlive, updated int
						for _, p := range c.pods {
							if revisionOf(p) == revNew {
								updated++
							} else {
								oldAlive++
							}
						}
						if oldAlive > 0 && updated > 0 {
							t.Fatalf("step %d: %d old and %d new pods side by side", c.step, oldAlive, updated)
						}
						c.reconcile(in)
					}
					assertSettled(t, c, in)
				})
			}
		}
	}
}

// TestScaleDuringRolloutSimulation changes replicas mid-rollout; every plan
// must still keep its promises (checked by reconcile) and the rollout converge.
func TestScaleDuringRolloutSimulation(t *testing.T) {
	for _, tc := range []struct{ from, to int32 }{{10, 3}, {3, 10}, {5, 0}, {0, 4}, {25, 24}, {1, 25}} {
		for _, f := range fences {
			for _, ready := range readinessPatterns {
				t.Run(fmt.Sprintf("%d->%d/fence=%s/%s", tc.from, tc.to, f, ready.name), func(t *testing.T) {
					resolve := func(replicas int32) Input {
						surge, unavailable, err := ResolveFenceposts(&f.surge, &f.unavailable, replicas)
						if err != nil {
							t.Fatal(err)
						}
						return Input{Replicas: replicas, MaxSurge: surge, MaxUnavailable: unavailable, MinReadySeconds: 5, UpdateRevision: revNew}
					}
					c := newCluster(t, ready, int(tc.from), revOld)
					in := resolve(tc.from)
					for range 4 {
						c.reconcile(in)
					}
					in = resolve(tc.to)
					for !c.converged(in) {
						if c.step > 4+stepBudget(max(tc.from, tc.to)) {
							t.Fatalf("no convergence after %d steps", c.step)
						}
						c.reconcile(in)
					}
					assertSettled(t, c, in)
				})
			}
		}
	}
}

// TestPauseDuringRolloutSimulation pauses a rollout mid-way: while paused no
// pod is created or deleted (the count is right), and after resuming the
// rollout converges with the usual bounds.
func TestPauseDuringRolloutSimulation(t *testing.T) {
	for _, replicas := range []int32{1, 3, 10} {
		for _, f := range fences {
			t.Run(fmt.Sprintf("replicas=%d/fence=%s", replicas, f), func(t *testing.T) {
				surge, unavailable, err := ResolveFenceposts(&f.surge, &f.unavailable, replicas)
				if err != nil {
					t.Fatal(err)
				}
				in := Input{Replicas: replicas, MaxSurge: surge, MaxUnavailable: unavailable, UpdateRevision: revNew}
				c := newCluster(t, readinessPatterns[0], int(replicas), revOld)
				for range 3 {
					c.reconcile(in)
				}
				paused := in
				paused.Paused = true
				// The first paused step may still refill places of pods deleted
				// before the pause, or retire old pods of a saturated revision.
				c.reconcile(paused)
				frozen := names(c.active())
				for range 5 {
					if p := c.reconcile(paused); len(p.Create) != 0 || len(p.Delete) != 0 {
						t.Fatalf("step %d: paused rollout acted: %s", c.step, describe(p))
					}
				}
				if got := names(c.active()); !slices.Equal(got, frozen) {
					t.Fatalf("pods changed while paused: %v -> %v", frozen, got)
				}
				runRollingUpdate(t, c, in)
			})
		}
	}
}

// neverReady is a kubelet that makes no pod of revNew Ready: the reported
// rollout whose new template never starts.
var neverReady = readiness{"new-never-ready", func(int, int) int { return 0 }}

// TestScaleEventDuringRolloutSimulation scales a rollout mid-way with the
// record of what the pods were sized for kept as the controller keeps it
// (written when the plan says so), so scaling is proportional. At every
// step no plan takes the active pods above replicas+maxSurge nor the
// available ones below replicas-maxUnavailable (unless they already were),
// and the rollout converges; a MaxBurst of 7 cuts the big scales into steps.
func TestScaleEventDuringRolloutSimulation(t *testing.T) {
	for _, tc := range []struct{ from, to int32 }{{10, 30}, {30, 10}, {10, 1}, {3, 25}, {25, 2}, {10, 0}, {4, 100}} {
		for _, f := range fences {
			for _, ready := range readinessPatterns {
				t.Run(fmt.Sprintf("%d->%d/fence=%s/%s", tc.from, tc.to, f, ready.name), func(t *testing.T) {
					c := newCluster(t, ready, int(tc.from), revOld)
					in := scaledInput(t, f, tc.from)
					for range 2 {
						in = c.reconcileRecorded(in)
					}
					next := scaledInput(t, f, tc.to)
					next.SizedFor = in.SizedFor
					in = next
					for !c.converged(in) {
						if c.step > 2+stepBudget(max(tc.from, tc.to)) {
							t.Fatalf("no convergence after %d steps: %+v", c.step, Count(c.pods, in.UpdateRevision, in.MinReadySeconds, c.now))
						}
						in = c.reconcileRecorded(in)
					}
					assertSettled(t, c, in)
				})
			}
		}
	}
}

// TestScaleEventStuckRolloutSimulation is the reported case: replicas 10
// (25%/25%), new pods that never become Ready, 8 old/5 new; scaled to 30 the
// old revision grows too, as Deployment's proportional scaling does: 23
// old/15 new, and none of the old pods is deleted while the new ones are
// unavailable. A MaxBurst of 10 reaches the same numbers in three steps
// (each step rounds on its own: a smaller burst can end a pod or two off).
func TestScaleEventStuckRolloutSimulation(t *testing.T) {
	quarter := intstr.FromString("25%")
	f := fence{quarter, quarter}
	for _, burst := range []int32{0, 10} {
		t.Run(fmt.Sprintf("maxBurst=%d", burst), func(t *testing.T) {
			c := newCluster(t, neverReady, 10, revOld)
			in := scaledInput(t, f, 10)
			in.MaxBurst = burst
			for range 4 {
				in = c.reconcileRecorded(in)
			}
			if old, updated := c.activeOf(revOld), c.activeOf(revNew); old != 8 || updated != 5 {
				t.Fatalf("before the scale: %d old/%d new pods, want 8/5", old, updated)
			}
			next := scaledInput(t, f, 30)
			next.SizedFor, next.MaxBurst = in.SizedFor, burst
			in = next
			for range 20 {
				in = c.reconcileRecorded(in)
			}
			if old, updated := c.activeOf(revOld), c.activeOf(revNew); old != 23 || updated != 15 {
				t.Fatalf("after scaling to 30: %d old/%d new pods, want 23/15", old, updated)
			}
		})
	}
}

// scaledInput is the planner input for replicas under fence f, rolling out
// revNew from revOld, with nothing recorded yet but the start.
func scaledInput(t *testing.T, f fence, replicas int32) Input {
	t.Helper()
	surge, unavailable, err := ResolveFenceposts(&f.surge, &f.unavailable, replicas)
	if err != nil {
		t.Fatal(err)
	}
	return Input{Replicas: replicas, MaxSurge: surge, MaxUnavailable: unavailable, MinReadySeconds: 5,
		UpdateRevision: revNew, Revisions: []string{revOld2, revOld}, MaxBurst: 7,
		SizedFor: &Size{Replicas: replicas, MaxReplicas: replicas + surge}}
}

// reconcileRecorded is reconcile with the invariants of one step checked
// and Plan.SizedFor recorded when the plan says it must be; it returns the
// input for the next step.
func (c *cluster) reconcileRecorded(in Input) Input {
	c.t.Helper()
	o := observe(c.input(in))
	p := c.reconcile(in)
	c.checkStep(in, o, p)
	if p.RecordSize {
		sized := p.SizedFor
		in.SizedFor = &sized
	}
	return in
}

// checkStep asserts that the plan p, made from what o observed, made
// neither bound worse: no more active pods than replicas+maxSurge (or than
// before), no fewer available than replicas-maxUnavailable (or than before).
func (c *cluster) checkStep(in Input, o observed, p Plan) {
	c.t.Helper()
	maxActive := o.replicas + o.maxSurge
	deletedAvailable := 0
	for _, d := range slices.Concat(p.Delete, p.Evict) {
		if IsAvailable(d, in.MinReadySeconds, c.now.Add(-tick)) {
			deletedAvailable++
		}
	}
	if active := o.active + int(p.Creates()) - p.Removes(); active > max(o.active, maxActive) {
		c.t.Fatalf("step %d (%s): %d active pods, more than replicas+maxSurge=%d", c.step, p.Reason, active, maxActive)
	}
	if available := o.available - deletedAvailable; available < min(o.available, o.minAvailable) {
		c.t.Fatalf("step %d (%s): %d available pods left, fewer than replicas-maxUnavailable=%d", c.step, p.Reason, available, o.minAvailable)
	}
}

// activeOf counts the active pods of rev.
func (c *cluster) activeOf(rev string) int {
	n := 0
	for _, p := range c.active() {
		if revisionOf(p) == rev {
			n++
		}
	}
	return n
}
