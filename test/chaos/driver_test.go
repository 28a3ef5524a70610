package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// strategies the driver gives its MyDeployments, in turn.
var strategies = []appsv1.DeploymentStrategy{
	rolling(intstr.FromInt32(1), intstr.FromInt32(0)),
	rolling(intstr.FromInt32(0), intstr.FromInt32(1)),
	rolling(intstr.FromString("25%"), intstr.FromString("25%")),
	{Type: appsv1.RecreateDeploymentStrategyType},
	rolling(intstr.FromInt32(2), intstr.FromInt32(1)),
	rolling(intstr.FromString("50%"), intstr.FromString("0%")),
}

func rolling(surge, unavailable intstr.IntOrString) appsv1.DeploymentStrategy {
	return appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable}}
}

// spec is the part of a MyDeployment the driver changes.
type spec struct {
	replicas int
	image    int // the template's image tag: changing it is a rollout
	cpu      int // the container's cpu, in steps of 10m: changing it is a rollout (a resize in place)
	// configMap, when set, is the ConfigMap the container reads through
	// envFrom, under rollout-on-config-change: a change of its data is a
	// rollout (see configEdit).
	configMap string
}

// resources are the container's resources for s: Burstable whatever the
// step, so that a cpu change can be a resize in place.
func (s spec) resources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(int64(100+10*s.cpu), resource.DecimalSI),
			corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(int64(200+20*s.cpu), resource.DecimalSI),
			corev1.ResourceMemory: resource.MustParse("128Mi")},
	}
}

// containers is the template's container list for s, as JSON for a merge
// patch (which replaces the whole list).
func (s spec) containers() string {
	b, err := json.Marshal([]corev1.Container{s.container()})
	if err != nil {
		panic(err) // a fixed shape: cannot fail
	}
	return string(b)
}

// container is the template's one container for s.
func (s spec) container() corev1.Container {
	c := corev1.Container{Name: "app", Image: image(s.image), Resources: s.resources()}
	if s.configMap != "" {
		c.EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: s.configMap}}}}
	}
	return c
}

// tracked is one MyDeployment the driver owns.
type tracked struct {
	name, ns  string
	uid       types.UID
	strategy  appsv1.DeploymentStrategy
	cur       spec
	converged bool // once converged, availability is checked
	// respectPDB: created with the respect-pdb annotation and a
	// PodDisruptionBudget of maxUnavailable 1 (see withPDB).
	respectPDB bool
	// inPlace: created with update-mode InPlaceIfPossible; its rollouts
	// (an image or a cpu change) move the pods in place.
	inPlace bool
}

func (d *tracked) recreate() bool { return d.strategy.Type == appsv1.RecreateDeploymentStrategyType }

// fenceposts resolves maxSurge/maxUnavailable for replicas as Deployment
// documents it (surge rounds up, unavailable down; both 0 means 0/1),
// written here independently of the controller's own code.
func (d *tracked) fenceposts(replicas int) (surge, unavailable int) {
	if d.recreate() {
		return 0, 0
	}
	surge, _ = intstr.GetScaledValueFromIntOrPercent(d.strategy.RollingUpdate.MaxSurge, replicas, true)
	unavailable, _ = intstr.GetScaledValueFromIntOrPercent(d.strategy.RollingUpdate.MaxUnavailable, replicas, false)
	if surge == 0 && unavailable == 0 {
		unavailable = 1
	}
	return surge, min(unavailable, replicas)
}

// inFlight are the bounds while the MyDeployment moves from a to b.
func (d *tracked) inFlight(a, b spec) bounds {
	sa, ua := d.fenceposts(a.replicas)
	sb, ub := d.fenceposts(b.replicas)
	minAvailable := min(a.replicas, b.replicas) - max(ua, ub)
	if d.respectPDB && a.replicas == b.replicas {
		// A rollout evicts: the budget (maxUnavailable 1) holds, tighter
		// than the strategy's. A scale-down deletes, as for a Deployment.
		minAvailable = max(minAvailable, a.replicas-1)
	}
	perRevision := max(a.replicas, b.replicas)
	if d.inPlace && min(ua, ub) == 0 {
		perRevision++ // with maxUnavailable 0, one surge pod makes room
	}
	return bounds{
		name:           fmt.Sprintf("%s/%s (in flight %+v -> %+v)", d.ns, d.name, a, b),
		maxActive:      max(a.replicas, b.replicas) + max(sa, sb),
		maxPerRevision: perRevision,
		minAvailable:   minAvailable,
		checkAvailable: d.converged && !d.recreate(),
		recreate:       d.recreate(),
	}
}

// steady are the bounds once it has converged on b: nothing may be created.
func (d *tracked) steady(b spec) bounds {
	_, ub := d.fenceposts(b.replicas)
	return bounds{
		name: fmt.Sprintf("%s/%s (steady at %+v)", d.ns, d.name, b), maxActive: b.replicas, maxPerRevision: b.replicas,
		minAvailable: b.replicas - ub, checkAvailable: !d.recreate(), recreate: d.recreate(),
	}
}

func image(gen int) string { return fmt.Sprintf("registry.chaos.local/app:v%d", gen) }

func (d *tracked) object(s spec) *appsv1beta1.MyDeployment {
	labels := map[string]string{"app": d.name, suiteLabel: "true"}
	annotations := map[string]string{}
	if d.respectPDB {
		annotations[appsv1beta1.RespectPDBAnnotation] = "true"
	}
	if d.inPlace {
		annotations[appsv1beta1.UpdateModeAnnotation] = appsv1beta1.UpdateModeInPlaceIfPossible
	}
	if s.configMap != "" {
		annotations[appsv1beta1.RolloutOnConfigChangeAnnotation] = "true"
	}
	return &appsv1beta1.MyDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: d.name, Namespace: d.ns, Annotations: annotations},
		Spec: appsv1beta1.MyDeploymentSpec{
			Replicas: ptr.To(int32(s.replicas)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": d.name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{s.container()},
					// kwok deletes pods at once; keep a real grace period out of the way.
					TerminationGracePeriodSeconds: ptr.To[int64](0),
				},
			},
			RolloutSpec: appsv1beta1.RolloutSpec{Strategy: d.strategy},
		},
	}
}

// create creates the MyDeployment and waits until it has converged.
func (e *env) create(ctx context.Context, d *tracked, s spec) error {
	md := d.object(s)
	if err := e.c.Create(ctx, md); err != nil {
		return err
	}
	d.uid = md.UID
	e.w.setBounds(d.uid, d.inFlight(spec{}, s))
	if err := e.waitConverged(ctx, d, s); err != nil {
		return err
	}
	d.cur, d.converged = s, true
	e.w.setBounds(d.uid, d.steady(s))
	return nil
}

// change moves the MyDeployment to s and waits for the change to complete:
// bounds loosen before the write and tighten once converged.
func (e *env) change(ctx context.Context, d *tracked, s spec) error {
	return e.changeWith(ctx, d, s, nil)
}

// changeWith is change, calling during (when not nil) after the patch and
// before waiting for convergence: what it does to the pods is part of the
// change, under its in-flight bounds, never after d has converged.
func (e *env) changeWith(ctx context.Context, d *tracked, s spec, during func() error) error {
	e.inFlight.Add(1)
	defer e.inFlight.Add(-1)
	e.w.setBounds(d.uid, d.inFlight(d.cur, s))
	md := &appsv1beta1.MyDeployment{ObjectMeta: metav1.ObjectMeta{Name: d.name, Namespace: d.ns}}
	patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil,
		`{"spec":{"replicas":%d,"template":{"spec":{"containers":%s}}}}`, s.replicas, s.containers()))
	if err := e.c.Patch(ctx, md, patch); err != nil {
		return err
	}
	if during != nil {
		if err := during(); err != nil {
			return err
		}
	}
	if err := e.waitConverged(ctx, d, s); err != nil {
		return err
	}
	d.cur = s
	e.w.setBounds(d.uid, d.steady(s))
	return nil
}

// waitConverged waits until the pods (as the watcher sees them) and the
// status both say the MyDeployment runs s and nothing else.
func (e *env) waitConverged(ctx context.Context, d *tracked, s spec) error {
	deadline := time.Now().Add(e.changeTimeout)
	var last string
	for time.Now().Before(deadline) {
		v := e.w.view(d.uid)
		md := &appsv1beta1.MyDeployment{}
		if err := e.c.Get(ctx, client.ObjectKey{Namespace: d.ns, Name: d.name}, md); err == nil {
			st := md.Status
			r := int32(s.replicas)
			wantRevs := 1
			if s.replicas == 0 {
				wantRevs = 0
			}
			last = fmt.Sprintf("pods active=%d ready=%d terminating=%d revisions=%v; status gen=%d/%d replicas=%d updated=%d available=%d update=%s current=%s",
				v.active, v.ready, v.terminating, v.revisions, st.ObservedGeneration, md.Generation,
				st.Replicas, st.UpdatedReplicas, st.AvailableReplicas, st.UpdateRevision, st.CurrentRevision)
			if v.active == s.replicas && v.ready == s.replicas && v.terminating == 0 && len(v.revisions) == wantRevs &&
				(wantRevs == 0 || v.revisions[0] == st.UpdateRevision) &&
				st.ObservedGeneration == md.Generation && st.Replicas == r && st.UpdatedReplicas == r &&
				st.AvailableReplicas == r && st.ReadyReplicas == r && st.CurrentRevision == st.UpdateRevision &&
				md.Spec.Template.Spec.Containers[0].Image == image(s.image) &&
				md.Spec.Template.Spec.Containers[0].Resources.Requests.Cpu().Equal(s.resources().Requests[corev1.ResourceCPU]) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(150 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s/%s did not converge on %+v within %v: %s", d.ns, d.name, s, e.changeTimeout, last)
}

// workload is a phase's set of MyDeployments and how many changes to make.
type workload struct {
	ns       string
	count    int // MyDeployments
	changes  int // rollouts + scale changes to complete, over all of them
	moreWhen func() bool
	// corners: each MyDeployment starts with one corner (in turn), and
	// one change in ten is a random corner.
	corners bool
	// optins: one change in five is an opt-in change (canary, specified
	// delete, a config edit); one MyDeployment in three reads a ConfigMap
	// under rollout-on-config-change.
	optins bool
	// opening are opt-in changes the first MyDeployment makes before any
	// other (it reads a ConfigMap when optins is set), each timed as a
	// change: the API-faults phase opens with a config edit and a drain,
	// the opt-ins whose watches start behind an access check (issue 57).
	opening []optinChange
	// pdb: one MyDeployment in three has respect-pdb and a budget. Not in
	// the phases that SIGKILL the manager: a kill in the middle of an
	// eviction can leave the budget spent on a pod that was not deleted
	// (the API server updates the budget, then the cancelled request
	// stops before the delete) until the API server's 2-minute timeout
	// for disrupted pods, Kubernetes' own behaviour for any client; those
	// phases would time that timeout, not the operator.
	pdb bool
}

// workloadResult are its figures.
type workloadResult struct {
	rollouts, scales int64
	// slowest is the longest a rollout, a scale change, a create or an
	// opening opt-in change took to converge.
	slowest  time.Duration
	total    time.Duration
	failures []string
	corners  [corners]int
	optins   [optinChanges]int
	withPDB  int
	// withConfig counts the MyDeployments reading a ConfigMap under
	// rollout-on-config-change.
	withConfig int
	// inPlace counts the MyDeployments in update-mode InPlaceIfPossible,
	// inPlaceRollouts their rollouts, recreated the pods those replaced
	// (only a surge pod's worth where maxUnavailable is 0).
	inPlace, inPlaceRollouts, recreated int
}

// cornersNote says how many corners of each kind a phase made.
func (r workloadResult) cornersNote() string {
	var parts []string
	for c := range corners {
		parts = append(parts, fmt.Sprintf("%s %d", c, r.corners[c]))
	}
	return strings.Join(parts, ", ")
}

// optinsNote says how many opt-in changes of each kind a phase made.
func (r workloadResult) optinsNote() string {
	parts := []string{fmt.Sprintf("%d with respect-pdb", r.withPDB),
		fmt.Sprintf("%d with rollout-on-config-change", r.withConfig),
		fmt.Sprintf("%d in place (%d in-place rollouts, %d pods recreated by them)", r.inPlace, r.inPlaceRollouts, r.recreated)}
	for c := range optinChanges {
		parts = append(parts, fmt.Sprintf("%s %d", c, r.optins[c]))
	}
	return strings.Join(parts, ", ")
}

// runWorkload creates the MyDeployments, then has each make random changes
// (60% rollouts, 40% scale changes) one after another, waiting for each to
// complete, until w.changes are done and w.moreWhen (if any) says stop.
func (e *env) runWorkload(ctx context.Context, t *testing.T, w workload) workloadResult {
	t.Helper()
	var res workloadResult
	var mu sync.Mutex
	var claimed atomic.Int64
	claim := func() bool {
		if int(claimed.Load()) < w.changes || (w.moreWhen != nil && w.moreWhen()) {
			claimed.Add(1)
			return true
		}
		return false
	}
	var wg sync.WaitGroup
	for i := range w.count {
		d := &tracked{name: fmt.Sprintf("md-%02d", i), ns: w.ns, strategy: strategies[i%len(strategies)]}
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano())))
			var err error
			fail := func(err error) {
				mu.Lock()
				defer mu.Unlock()
				res.failures = append(res.failures, err.Error())
			}
			if w.pdb && i%3 == 2 {
				if err := e.withPDB(ctx, d); err != nil {
					fail(err)
					return
				}
				mu.Lock()
				res.withPDB++
				mu.Unlock()
			}
			if w.optins && i%3 == 1 && !d.recreate() {
				d.inPlace = true
				mu.Lock()
				res.inPlace++
				mu.Unlock()
			}
			first := spec{replicas: 2 + i%4, image: 1}
			if w.optins && i%3 == 0 {
				// Reads a ConfigMap of its own, with rollout-on-config-change.
				if first.configMap, err = e.configMapFor(ctx, d); err != nil {
					fail(err)
					return
				}
				mu.Lock()
				res.withConfig++
				mu.Unlock()
			}
			created := time.Now()
			if err := e.create(ctx, d, first); err != nil {
				fail(err)
				return
			}
			timed := func(start time.Time) {
				mu.Lock()
				res.slowest = max(res.slowest, time.Since(start))
				mu.Unlock()
			}
			timed(created)
			for _, c := range w.opening {
				if i > 0 {
					break
				}
				start := time.Now()
				if err := e.optin(ctx, d, c, rng); err != nil {
					fail(fmt.Errorf("%s: %w", c, err))
					return
				}
				timed(start)
				mu.Lock()
				res.optins[c]++
				mu.Unlock()
			}
			for n := 0; claim(); n++ {
				if c, ok := pickCorner(w, i, n, rng); ok {
					if err := e.corner(ctx, d, c); err != nil {
						fail(fmt.Errorf("%s: %w", c, err))
						return
					}
					mu.Lock()
					res.corners[c]++
					mu.Unlock()
					continue
				}
				if w.optins && rng.IntN(optinOdds()) == 0 {
					if c, ok := pickOptin(d, rng); ok {
						if err := e.optin(ctx, d, c, rng); err != nil {
							fail(fmt.Errorf("%s: %w", c, err))
							return
						}
						mu.Lock()
						res.optins[c]++
						mu.Unlock()
						continue
					}
				}
				next := d.cur
				rollout := rng.IntN(10) < 6
				switch {
				case rollout && d.inPlace && rng.IntN(2) == 0:
					next.cpu++ // a resize
				case rollout:
					next.image++
				default:
					for next.replicas == d.cur.replicas {
						next.replicas = 1 + rng.IntN(6)
					}
				}
				start, prev, before := time.Now(), d.cur, e.w.podUIDs(d.uid)
				if err := e.change(ctx, d, next); err != nil {
					fail(err)
					return
				}
				if rollout && d.inPlace {
					// In place: the same pods, but for the one surge pod that
					// makes room where maxUnavailable is 0.
					recreated := 0
					for uid := range before {
						if !e.w.podUIDs(d.uid)[uid] {
							recreated++
						}
					}
					allowed := 0
					if _, unavailable := d.fenceposts(next.replicas); unavailable == 0 {
						allowed = 1
					}
					mu.Lock()
					res.inPlaceRollouts++
					res.recreated += recreated
					mu.Unlock()
					if recreated > allowed {
						fail(fmt.Errorf("%s/%s: an in-place rollout %+v -> %+v recreated %d of %d pods", d.ns, d.name, prev, next, recreated, len(before)))
						return
					}
				}
				took := time.Since(start)
				if took > 8*time.Second {
					t.Logf("slow change: %s/%s %+v -> %+v took %v (from %s)", d.ns, d.name, prev, next, took, start.Format("15:04:05.000"))
				}
				mu.Lock()
				if rollout {
					res.rollouts++
				} else {
					res.scales++
				}
				res.total += took
				res.slowest = max(res.slowest, took)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return res
}
