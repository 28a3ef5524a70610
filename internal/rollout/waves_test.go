package rollout

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// zoned are pods named <zone>-<rev>-<i> on nodes of that zone; zone "" is a
// node without the label.
func zoned(zone, rev string, n int, opts ...podOpt) []*corev1.Pod {
	out := pods(zone+"-"+rev, rev, n, opts...)
	for _, p := range out {
		if p.Spec.NodeName != "" {
			p.Spec.NodeName = "node-" + zone
		}
	}
	return out
}

// wavesOf is the waves input over ps: each pod's domain its name's zone.
func wavesOf(ps []*corev1.Pod, st WaveState, bake time.Duration, order ...string) *Waves {
	w := &Waves{Key: "zone", Order: order, Domain: map[string]string{}, Bake: bake, State: st}
	for _, p := range ps {
		w.Domain[p.Name] = strings.SplitN(p.Name, "-", 2)[0]
	}
	return w
}

func wavesInput(ps []*corev1.Pod, surge, unavailable int32, w *Waves) Input {
	return Input{Replicas: int32(len(ps)),
		MaxSurge: surge, MaxUnavailable: unavailable, UpdateRevision: revNew, CurrentRevision: revOld,
		Revisions: []string{revOld}, Pods: ps, Now: t0, Waves: w}
}

// TestWavesStep: each row a domain layout and one step.
func TestWavesStep(t *testing.T) {
	abc := func(opts ...podOpt) []*corev1.Pod {
		return join(zoned("a", revOld, 2), zoned("b", revOld, 2, opts...), zoned("c", revOld, 2, opts...))
	}
	doneA := join(zoned("a", revNew, 2), zoned("b", revOld, 2), zoned("c", revOld, 2))
	recA := WaveState{Revision: revNew, Index: 0, Of: 3, Domain: "a"}
	baked := recA
	baked.BakeStarted = t0.Add(-10 * time.Minute)
	baking := recA
	baking.BakeStarted = t0.Add(-4 * time.Minute)
	cases := []struct {
		name string
		in   Input
		// want: the plan's creations (revision/count@domain), removals, the wave, held, baking, record
		create, remove string
		wave           string
		held           int
		baking, record bool
		requeue        time.Duration
	}{
		{name: "first step surges into the first zone only",
			in:     wavesInput(abc(), 1, 0, wavesOf(abc(), WaveState{}, 0)),
			create: "app-new/1@a", remove: "", wave: "wave 1 of 3: a", held: 4, record: true},
		{name: "maxUnavailable removes old pods of the first zone only",
			in:     wavesInput(abc(), 0, 2, wavesOf(abc(), WaveState{}, 0)),
			create: "", remove: "a-app-old-0,a-app-old-1", wave: "wave 1 of 3: a", held: 4, record: true},
		{name: "an unavailable old pod of a later zone is not taken first",
			in: func() Input {
				ps := abc()
				notReady(ps[5])
				return wavesInput(ps, 1, 0, wavesOf(ps, recA, 0))
			}(),
			create: "app-new/1@a", wave: "wave 1 of 3: a", held: 4},
		{name: "a done zone starts its bake; nothing moves",
			in:   wavesInput(doneA, 1, 0, wavesOf(doneA, recA, 10*time.Minute)),
			wave: "wave 1 of 3: a, baking until 2025-06-01T12:10:00Z", held: 4, baking: true, record: true, requeue: 10 * time.Minute},
		{name: "a bake begun between seconds is recorded from the next second, never shorter",
			in: func() Input {
				in := wavesInput(doneA, 1, 0, wavesOf(doneA, recA, 10*time.Minute))
				in.Now = t0.Add(300 * time.Millisecond)
				return in
			}(),
			wave: "wave 1 of 3: a, baking until 2025-06-01T12:10:01Z", held: 4, baking: true, record: true,
			requeue: 10*time.Minute + 700*time.Millisecond},
		{name: "a restart mid-bake bakes on, not again",
			in:   wavesInput(doneA, 1, 0, wavesOf(doneA, baking, 10*time.Minute)),
			wave: "wave 1 of 3: a, baking until 2025-06-01T12:06:00Z", held: 4, baking: true, requeue: 6 * time.Minute},
		{name: "a bake that has run starts the next zone",
			in:     wavesInput(doneA, 1, 0, wavesOf(doneA, baked, 10*time.Minute)),
			create: "app-new/1@b", wave: "wave 2 of 3: b", held: 2, record: true},
		{name: "no bake: the next zone at once",
			in:     wavesInput(doneA, 1, 0, wavesOf(doneA, recA, 0)),
			create: "app-new/1@b", wave: "wave 2 of 3: b", held: 2, record: true},
		{name: "a zone whose new pod is not ready is not done",
			in: func() Input {
				ps := join(zoned("a", revNew, 1), zoned("a", revNew, 1, notReady), zoned("b", revOld, 2), zoned("c", revOld, 2))
				ps[1].Name = "a-app-new-1"
				return wavesInput(ps, 1, 0, wavesOf(ps, recA, 0))
			}(),
			wave: "wave 1 of 3: a", held: 4},
		{name: "order first, then by name, unlabelled nodes last",
			in: func() Input {
				ps := join(zoned("a", revOld, 1), zoned("b", revOld, 1), zoned("c", revOld, 1))
				ps[0].Name = "-app-old-0" // zone "": no label
				return wavesInput(ps, 1, 0, wavesOf(ps, WaveState{}, 0, "c"))
			}(),
			create: "app-new/1@c", wave: "wave 1 of 3: c", held: 2, record: true},
		{name: "a record of another revision starts at the first zone",
			in: wavesInput(doneA, 1, 0, wavesOf(doneA, WaveState{Revision: "app-other", Index: 1, Of: 3, Domain: "b"}, 0)),
			// zone a is done already: the next zone at once
			create: "app-new/1@b", wave: "wave 2 of 3: b", held: 2, record: true},
		{name: "paused: no wave ends",
			in: func() Input {
				in := wavesInput(doneA, 0, 1, wavesOf(doneA, recA, 0))
				in.Paused = true
				return in
			}(),
			wave: "wave 1 of 3: a", held: 4},
		{name: "unknown domains hold every old pod",
			in: func() Input {
				w := wavesOf(abc(), WaveState{}, 0)
				w.Unknown = true
				return wavesInput(abc(), 1, 0, w)
			}(),
			wave: "waiting for the Nodes' zone labels: every pod holds", held: 6},
		{name: "a partition holds more than the waves",
			in: func() Input {
				in := wavesInput(abc(), 2, 0, wavesOf(abc(), recA, 0))
				in.Partition = 5
				return in
			}(),
			create: "app-new/1@a", wave: "wave 1 of 3: a", held: 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := Compute(tc.in)
			checkWavesPlan(t, tc.in, p)
			w := p.Waves
			if w == nil {
				t.Fatalf("no waves progress: %s", describe(p))
			}
			var creates []string
			for _, c := range p.Create {
				s := fmt.Sprintf("%s/%d", c.Revision, c.Count)
				if c.Pin != nil {
					s += "@" + c.Pin.Domain
				}
				creates = append(creates, s)
			}
			got := fmt.Sprintf("create=%s remove=%s wave=%q held=%d baking=%v record=%v requeue=%v",
				strings.Join(creates, ","), strings.Join(names(slices.Concat(p.Delete, p.Evict)), ","), w.Message, w.Held, w.Baking, w.Record, p.RequeueAfter)
			want := fmt.Sprintf("create=%s remove=%s wave=%q held=%d baking=%v record=%v requeue=%v",
				tc.create, tc.remove, tc.wave, tc.held, tc.baking, tc.record, tc.requeue)
			if got != want {
				t.Errorf("got  %s\nwant %s\n%s", got, want, describe(p))
			}
		})
	}
}

// TestWavesStateRecord: the record reads back as written.
func TestWavesStateRecord(t *testing.T) {
	st := WaveState{Revision: "r-1", Index: 1, Of: 3, Domain: "zone-b", BakeStarted: t0}
	got, err := ParseWaveState(st.String())
	if err != nil || !got.BakeStarted.Equal(st.BakeStarted) || got.Index != 1 || got.Of != 3 || got.Domain != "zone-b" {
		t.Fatalf("ParseWaveState(%s) = %+v, %v", st, got, err)
	}
	for _, bad := range []string{"", "{}", `{"revision":"r","wave":0,"of":3}`, `{"revision":"r","wave":1,"of":3,"bakeStarted":"x"}`} {
		if _, err := ParseWaveState(bad); err == nil {
			t.Errorf("ParseWaveState(%q) accepted", bad)
		}
	}
}

// TestPinTemplate: the term is added to each required term, and the pod
// says its domain.
func TestPinTemplate(t *testing.T) {
	tpl := corev1.PodTemplateSpec{}
	tpl.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{
			{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "disk", Operator: corev1.NodeSelectorOpIn, Values: []string{"ssd"}}}},
			{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "gpu", Operator: corev1.NodeSelectorOpExists}}}}}}}
	PinTemplate(&tpl, Pin{Key: "zone", Domain: "b"})
	for i, term := range tpl.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		last := term.MatchExpressions[len(term.MatchExpressions)-1]
		if len(term.MatchExpressions) != 2 || last.Key != "zone" || last.Values[0] != "b" {
			t.Errorf("term %d: %+v", i, term)
		}
	}
	if tpl.Annotations[WavePodAnnotation] != "b" {
		t.Errorf("annotations %v", tpl.Annotations)
	}
	none := corev1.PodTemplateSpec{}
	PinTemplate(&none, Pin{Key: "zone", Domain: NoDomain})
	terms := none.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 1 || terms[0].MatchExpressions[0].Operator != corev1.NodeSelectorOpDoesNotExist {
		t.Errorf("no domain: %+v", terms)
	}
}

// checkWavesPlan is checkPlan with the partition the wave holds, and the
// waves' own promises: no old pod the wave holds (of a later domain) is
// removed or moved in place, and every pod of the update revision created
// is pinned to the wave's domain.
func checkWavesPlan(t testing.TB, in Input, p Plan) {
	t.Helper()
	w := p.Waves
	if w == nil {
		checkPlan(t, in, p)
		return
	}
	held := in
	held.Partition = max(in.Partition, int32(w.Held))
	held.Waves = nil // beside canary steps, checkPlan takes the larger of the step's and the wave's partition
	switch {
	case p.Reason == ReasonWaveBake:
		// A bake holds with nothing to do: checkPlan would want progress.
		if p.Creates() > 0 || p.Removes() > 0 || len(p.UpdateInPlace) > 0 || p.RequeueAfter <= 0 {
			t.Fatalf("a bake that acts, or does not requeue: %s", describe(p))
		}
	case in.CurrentRevision != "" && in.CurrentRevision != in.UpdateRevision:
		checkPlan(t, withWait(held, w.wait), p)
	}
	scale := slices.Contains([]Reason{ReasonScaleDown, ReasonProportionalScaleDown, ReasonPausedScaleDown, ReasonPartitionScaleDown}, p.Reason)
	for _, pod := range p.UpdateInPlace {
		if w.later[pod] {
			t.Fatalf("%s of a later wave than %q moved in place: %s", pod.Name, w.State.Domain, describe(p))
		}
	}
	for _, pod := range slices.Concat(p.Delete, p.Evict) {
		// A scale-down may take any pod, and a pod labelled
		// specified-delete or on a draining node is replaced where it is
		// (by one of the current revision, the held side's).
		doomed := pod.Labels[appsv1beta1.SpecifiedDeleteLabel] == "true" || in.DrainingNodes[pod.Spec.NodeName]
		beyond := w.Held > int(max(in.Replicas, 0)) // the held pods are more than Replicas: a scale-down
		if w.later[pod] && !scale && !doomed && !beyond {
			t.Fatalf("%s of a later wave than %q removed: %s", pod.Name, w.State.Domain, describe(p))
		}
	}
	for _, c := range p.Create {
		scaleUp := slices.Contains([]Reason{ReasonScaleUp, ReasonProportionalScaleUp, ReasonPausedScaleUp}, p.Reason)
		if in.Waves.Unknown && c.Revision == in.UpdateRevision && labelledUpdated(in) == 0 && !scaleUp {
			t.Fatalf("pods of the update revision created with the domains unknown: %s", describe(p))
		}
		allDone := w.State.Index >= w.State.Of // no old pod left: new pods go anywhere
		if !in.Waves.Unknown && !allDone && c.Revision == in.UpdateRevision && (c.Pin == nil || c.Pin.Domain != w.State.Domain) {
			t.Fatalf("pods of the update revision created outside wave %q: %+v (wave %+v, unknown %v): %s", w.State.Domain, c, *w, in.Waves.Unknown, describe(p))
		}
	}
}

// withWait lets checkPlan accept a requeue for the bake's end.
func withWait(in Input, wait time.Duration) Input {
	if s := int32(wait / time.Second); wait > 0 && s+1 > in.MinReadySeconds {
		in.MinReadySeconds = s + 1
	}
	return in
}

// zoneCluster fakes the scheduler and kubelet over zones of nodes: a pod
// pinned to a zone is scheduled there; an old pod stays where it is.
type zoneCluster struct {
	t       *testing.T
	now     time.Time
	pods    []*corev1.Pod
	zone    map[string]string // pod name -> zone
	created int
	r       *rand.Rand
}

func newZoneCluster(t *testing.T, r *rand.Rand, zones []string, counts []int) *zoneCluster {
	c := &zoneCluster{t: t, now: t0, zone: map[string]string{}, r: r}
	for z, n := range counts {
		for range n {
			p := c.add(revOld, zones[z])
			p.Status.Phase = corev1.PodRunning
			p.Spec.NodeName = "node-" + zones[z]
			setReady(p, t0.Add(-time.Hour))
		}
	}
	return c
}

func (c *zoneCluster) add(rev, zone string) *corev1.Pod {
	c.created++
	name := fmt.Sprintf("p%04d", c.created)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", CreationTimestamp: metav1.NewTime(c.now),
		Labels: map[string]string{"controller-revision-hash": rev}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}}}
	c.pods = append(c.pods, p)
	c.zone[name] = zone
	return p
}

// step plans with in, checks the plan and the waves' order, carries it out
// and lets the kubelet act; it returns the plan.
func (c *zoneCluster) step(in Input, ws *Waves) Plan {
	c.t.Helper()
	ws.Domain = c.zone
	in.Waves, in.Pods, in.Now = ws, slices.Clone(c.pods), c.now
	p := Compute(in)
	checkWavesPlan(c.t, in, p)
	c.pods = slices.DeleteFunc(c.pods, func(p *corev1.Pod) bool { return p.DeletionTimestamp != nil })
	for _, d := range slices.Concat(p.Delete, p.Evict) {
		ts := metav1.NewTime(c.now)
		d.DeletionTimestamp = &ts
	}
	for _, cr := range p.Create {
		for range cr.Count {
			zone := NoDomain
			if cr.Pin != nil {
				zone = cr.Pin.Domain
			}
			c.add(cr.Revision, zone)
		}
	}
	for _, pod := range c.pods {
		switch {
		case pod.DeletionTimestamp != nil || pod.CreationTimestamp.Time.Equal(c.now):
		case pod.Spec.NodeName == "":
			pod.Spec.NodeName, pod.Status.Phase = "node-"+c.zone[pod.Name], corev1.PodRunning
		case !isReady(pod) && c.r.IntN(3) > 0:
			setReady(pod, c.now)
		}
	}
	if p.Waves != nil && p.Waves.Record {
		ws.State = p.Waves.State
	}
	c.now = c.now.Add(tick)
	return p
}

// TestWavesSimulation rolls random zone layouts under random fenceposts,
// bakes and readiness, and checks at every step the plan's promises, that
// at most one zone moves, that no zone moves before every earlier one is
// done and baked, and that the rollout converges.
func TestWavesSimulation(t *testing.T) {
	r := rand.New(rand.NewPCG(53, 0))
	runs := 300
	if testing.Short() {
		runs = 60
	}
	for run := range runs {
		zones, counts, replicas := randomZones(r, 0)
		if replicas == 0 {
			continue
		}
		surge, unavailable, bake := int32(r.IntN(3)), int32(r.IntN(3)), time.Duration(r.IntN(3))*5*time.Second
		t.Run(fmt.Sprintf("run %d zones %v %v surge %d unavailable %d bake %v", run, zones, counts, surge, unavailable, bake), func(t *testing.T) {
			runWaves(t, newZoneCluster(t, r, zones, counts), int32(replicas), surge, unavailable, bake, nil)
		})
	}
}

// TestWavesCanarySimulation rolls random zone layouts as
// TestWavesSimulation does, beside random canary steps (sizes that grow,
// timed pauses, pauses a promote ends a few reconciles after they hold):
// the waves' promises as there, the steps' as checkCanary says, never more
// pods of the update revision than the step under way lets through, and
// the rollout converges (neither waits on the other for ever).
func TestWavesCanarySimulation(t *testing.T) {
	r := rand.New(rand.NewPCG(53, 1))
	runs := 300
	if testing.Short() {
		runs = 60
	}
	for run := range runs {
		zones, counts, replicas := randomZones(r, 1)
		steps := randomGrowingSteps(r)
		surge, unavailable, bake := int32(r.IntN(3)), int32(r.IntN(3)), time.Duration(r.IntN(3))*5*time.Second
		t.Run(fmt.Sprintf("run %d zones %v %v steps %q surge %d unavailable %d bake %v", run, zones, counts, steps,
			surge, unavailable, bake), func(t *testing.T) {
			list, err := parseSteps(steps)
			if err != nil {
				t.Fatal(err)
			}
			runWaves(t, newZoneCluster(t, r, zones, counts), int32(replicas), surge, unavailable, bake, list)
		})
	}
}

// randomGrowingSteps is a canary step list whose sizes grow: counts and
// percentages, timed pauses and pauses until promote between them.
func randomGrowingSteps(r *rand.Rand) string {
	var steps []string
	pct := 0
	for range 1 + r.IntN(4) {
		switch r.IntN(3) {
		case 0:
			steps = append(steps, "pause")
		case 1:
			steps = append(steps, "pause 10s")
		}
		if pct >= 100 {
			break
		}
		if pct == 0 && r.IntN(3) == 0 {
			steps, pct = append(steps, "1"), 1
			continue
		}
		pct = min(100, pct+10+r.IntN(60))
		steps = append(steps, fmt.Sprintf("%d%%", pct))
	}
	return strings.Join(steps, ", ")
}

// randomZones is a random layout of 1 to 4 zones of least to least+3
// pods each and, one time in four, 1 or 2 pods on nodes without the
// label; replicas is their sum.
func randomZones(r *rand.Rand, least int) (zones []string, counts []int, replicas int) {
	for z := range 1 + r.IntN(4) {
		zones, counts = append(zones, fmt.Sprintf("z%d", z)), append(counts, least+r.IntN(4))
		replicas += counts[z]
	}
	if r.IntN(4) == 0 { // pods on nodes without the label
		zones, counts = append(zones, NoDomain), append(counts, 1+r.IntN(2))
		replicas += counts[len(counts)-1]
	}
	return zones, counts, replicas
}

// runWaves rolls c's pods to revNew with waves (and canary steps, when
// steps are set, promoting a pause until promote once it held for three
// reconciles), checking every plan, the waves' order and bakes, and the
// steps' sizes, until every pod is updated and available.
func runWaves(t *testing.T, c *zoneCluster, replicas, surge, unavailable int32, bake time.Duration, steps []CanaryStep) {
	ws := &Waves{Key: "zone", Bake: bake}
	in := Input{Replicas: replicas, MaxSurge: surge, MaxUnavailable: unavailable, UpdateRevision: revNew,
		CurrentRevision: revOld, Revisions: []string{revOld}}
	if steps != nil {
		in.Canary = &Canary{Steps: steps}
	}
	pausedFor := 0     // reconciles the pause until promote under way has held
	var order []string // the zones in the order they moved
	doneAt := map[string]time.Time{}
	for i := 0; i < 40*int(replicas)+40+10*len(steps); i++ {
		at := c.now
		for z, s := range c.zoneState() {
			if _, ok := doneAt[z]; !ok && s == "done" && slices.Contains(order, z) {
				doneAt[z] = at
			}
		}
		p := c.step(in, ws)
		if cp := p.Canary; cp != nil {
			cn := *in.Canary
			cn.State = cp.State
			if cp.State.Index < len(steps) && steps[cp.State.Index].Pause && steps[cp.State.Index].Duration == 0 {
				if pausedFor++; pausedFor > 3 {
					cn.Promote, pausedFor = CanaryPromote{Revision: revNew, Index: cp.State.Index}, 0
				}
			}
			in.Canary = &cn
			if n, most := c.active(revNew), int(replicas-min(cp.Held, replicas)); n > most {
				t.Fatalf("step %d: %d pods of the update revision at canary step %d, which lets %d through", i, n, cp.State.Index+1, most)
			}
		}
		moved := c.movedZones(p)
		if len(moved) > 1 {
			t.Fatalf("step %d: zones %q move at once", i, moved)
		}
		for _, z := range moved {
			switch {
			case len(order) > 0 && z == order[len(order)-1]:
			case slices.Contains(order, z):
				t.Fatalf("step %d: zone %q moves again after %q", i, z, order)
			default:
				for _, prev := range order {
					if d, ok := doneAt[prev]; !ok || at.Sub(d) < bake {
						t.Fatalf("step %d: zone %q moves before zone %q is done and baked (done %v, bake %v)", i, z, prev, d, bake)
					}
				}
				order = append(order, z)
			}
		}
		if c.converged(replicas) {
			return
		}
	}
	t.Fatalf("not converged: %v", c.zoneState())
}

// zoneState says of each zone whether all its pods are updated and available ("done").
func (c *zoneCluster) zoneState() map[string]string {
	out := map[string]string{}
	for _, p := range c.pods {
		z := c.zone[p.Name]
		if p.DeletionTimestamp != nil {
			continue // the planner counts terminating pods nowhere
		}
		if _, ok := out[z]; !ok {
			out[z] = "done"
		}
		if revisionOf(p) != revNew || !IsAvailable(p, 0, c.now) {
			out[z] = "moving"
		}
	}
	return out
}

// movedZones are the zones whose pods p changes.
func (c *zoneCluster) movedZones(p Plan) []string {
	var zones []string
	add := func(z string) {
		if !slices.Contains(zones, z) {
			zones = append(zones, z)
		}
	}
	for _, d := range slices.Concat(p.Delete, p.Evict, p.UpdateInPlace) {
		add(c.zone[d.Name])
	}
	for _, cr := range p.Create {
		if cr.Pin != nil {
			add(cr.Pin.Domain)
		}
	}
	return zones
}

// active counts the pods of rev not terminating.
func (c *zoneCluster) active(rev string) int {
	n := 0
	for _, p := range c.pods {
		if p.DeletionTimestamp == nil && revisionOf(p) == rev {
			n++
		}
	}
	return n
}

func (c *zoneCluster) converged(replicas int32) bool {
	n := 0
	for _, p := range c.pods {
		if p.DeletionTimestamp != nil || revisionOf(p) != revNew || !IsAvailable(p, 0, c.now) {
			return false
		}
		n++
	}
	return n == int(replicas)
}

// TestWavesRandomInputs plans single steps from random waves inputs
// (zones and their pods of either revision, ready or not, terminating,
// labelled, unscheduled; a random record, bake, partition, pause,
// in-place gate, draining node) and checks each plan's promises: those of
// every plan with the partition the wave holds, and that no pod the wave
// holds is removed or moved, and every new pod goes to the wave's zone.
func TestWavesRandomInputs(t *testing.T) {
	r := rand.New(rand.NewPCG(530, 0))
	inputs := 20_000
	if testing.Short() {
		inputs = 2_000
	}
	for i := range inputs {
		in := randomWavesInput(r)
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("input %d: panic %v", i, p)
				}
			}()
			checkWavesPlan(t, in, Compute(in))
		}()
	}
}

func randomWavesInput(r *rand.Rand) Input {
	zones := []string{"a", "b", "c", NoDomain}[:1+r.IntN(4)]
	w := &Waves{Key: "zone", Domain: map[string]string{}, Bake: time.Duration(r.IntN(3)) * time.Minute}
	if r.IntN(3) == 0 {
		w.Order = []string{zones[r.IntN(len(zones))]}
	}
	var ps []*corev1.Pod
	for i := range r.IntN(9) {
		rev := []string{revOld, revNew, revOld2}[r.IntN(3)]
		p := mkPod(fmt.Sprintf("p%d", i), rev)
		switch r.IntN(8) {
		case 0:
			notReady(p)
		case 1:
			terminating(p)
		case 2:
			labelled(p)
		case 3:
			pending(p)
		}
		if r.IntN(4) == 0 { // may move in place (Input.InPlace below)
			p.Spec.ReadinessGates = append(p.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: appsv1beta1.InPlaceUpdateReadyCondition})
		}
		w.Domain[p.Name] = zones[r.IntN(len(zones))]
		ps = append(ps, p)
	}
	if r.IntN(2) == 0 {
		w.State = WaveState{Revision: revNew, Index: r.IntN(len(zones)), Of: len(zones), Domain: zones[r.IntN(len(zones))]}
		if r.IntN(2) == 0 {
			w.State.BakeStarted = t0.Add(-time.Duration(r.IntN(4)) * time.Minute)
		}
	}
	w.Unknown = r.IntN(10) == 0
	in := Input{Replicas: int32(r.IntN(8)), MaxSurge: int32(r.IntN(3)), MaxUnavailable: int32(r.IntN(3)),
		UpdateRevision: revNew, CurrentRevision: revOld, Revisions: []string{revOld2, revOld}, Pods: ps, Now: t0, Waves: w,
		Partition: int32(r.IntN(3)) * int32(r.IntN(2)), Paused: r.IntN(10) == 0}
	if r.IntN(3) == 0 {
		in.SizedFor = &Size{Replicas: int32(r.IntN(8)), MaxReplicas: int32(r.IntN(10))}
	}
	if r.IntN(3) == 0 {
		in.InPlace = []string{revOld}
	}
	if r.IntN(3) == 0 { // canary steps beside the waves, at a random step of the rollout
		steps, _ := parseSteps(randomGrowingSteps(r))
		in.Canary = &Canary{Steps: steps}
		if r.IntN(2) == 0 {
			in.Canary.State = CanaryState{Revision: revNew, Index: r.IntN(len(steps) + 1)}
		}
		in.Partition = 0
	}
	if r.IntN(5) == 0 && len(ps) > 0 {
		in.DrainingNodes = map[string]bool{ps[0].Spec.NodeName: true}
	}
	return in
}

// labelledUpdated counts the active pods of the update revision labelled
// specified-delete: with the domains unknown, their replacements are the
// only new pods of the update revision (not pinned).
func labelledUpdated(in Input) int {
	n := 0
	for _, p := range in.Pods {
		if isActive(p) && revisionOf(p) == in.UpdateRevision && (p.Labels[appsv1beta1.SpecifiedDeleteLabel] == "true" || in.DrainingNodes[p.Spec.NodeName]) {
			n++
		}
	}
	return n
}

// FuzzWaves is TestWavesRandomInputs for the coverage-guided fuzzer
// (go test -fuzz FuzzWaves): the seed draws one input.
func FuzzWaves(f *testing.F) {
	for _, seed := range []uint64{0, 1, 53, 530} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		in := randomWavesInput(rand.New(rand.NewPCG(seed, 0)))
		checkWavesPlan(t, in, Compute(in))
	})
}
