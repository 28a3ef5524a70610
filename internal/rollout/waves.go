package rollout

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Waves (RollingUpdate, Input.Waves set, old pods to replace) roll the
// pods one failure domain at a time: a domain is the value of a node label
// (Waves.Key) on the node of a pod, and the waves are the domains of the
// object's pods, Waves.Order's first, then the others by name, then the
// pods on nodes without the label ("", NoDomain) last. Wave k is a
// partition per domain: the rolling step holds every old pod of the
// domains after k (Held, at least Input.Partition), and only old pods of
// domain k (or of an earlier one) leave their side (podSet.leaving), within
// maxSurge and maxUnavailable as resolved on spec.replicas. The update
// revision's pods the plan creates are pinned to domain k
// (Creation.Pin). Wave k is done once no old pod is left in domains up to
// k, every pod of the update revision in domain k is available, and
// Replicas-Held pods of the update revision are available; its bake
// (Waves.Bake) then begins, and wave k+1 starts once it has run. The
// caller records the wave under way and when its bake began
// (WaveProgress.Record, WaveStateAnnotation) before it carries out the
// plan: a restart reads it back, so it never starts the next wave early
// nor bakes again. A new update revision starts at the first wave. While
// paused no wave ends. With the domains unknown (Waves.Unknown: the
// caller cannot see Nodes) every old pod is held.
//
// Beside canary steps (Input.Canary) the step's partition and the wave's
// are two partitions and the larger holds: the update revision never has
// more pods than the step's size, nor any outside the domains up to the
// wave's. So a step ends only once the waves let its size through, and a
// wave only once the steps let its domain through; each waits only for
// the other's progress, a pause for its promote, a bake for its time.

// WaveStateAnnotation is the controller's record of the wave under way
// (WaveState.String), read back through the waves module.
const WaveStateAnnotation = "apps.mydeployment.io/wave-state"

// WavePodAnnotation names, on a pod created in a wave, the domain it is
// pinned to (the required node affinity it was created with): a pod not
// yet scheduled is of that domain.
const WavePodAnnotation = "apps.mydeployment.io/wave"

// NoDomain is the domain of the pods on nodes without the label: the last wave.
const NoDomain = ""

// Waves is the planner's waves input (Input.Waves), which the waves
// module sets from its annotation, its record and the Nodes it sees.
type Waves struct {
	// Key is the node label whose values are the domains.
	Key string
	// Order are the domains to roll first, in this order.
	Order []string
	// Domain is each pod's domain, by pod name: its node's value of Key,
	// or for a pod not yet scheduled the domain it is pinned to
	// (WavePodAnnotation); NoDomain for a pod absent.
	Domain map[string]string
	// Bake is how long a done wave's pods stay available before the next starts.
	Bake time.Duration
	// State is the record of the wave under way (zero: none).
	State WaveState
	// Unknown says the domains cannot be known (Nodes not seen): every old pod is held.
	Unknown bool
}

// WaveState is where a waves rollout is: wave Index (from 0) of Of, the
// domain Domain, of the rollout to Revision, and when its bake began
// (zero while its pods move). Index == Of once every wave is done.
type WaveState struct {
	Revision    string
	Index, Of   int
	Domain      string
	BakeStarted time.Time
}

// WaveStateRecord is WaveStateAnnotation's JSON: the wave counts from 1.
type WaveStateRecord struct {
	Revision    string `json:"revision"`
	Wave        int    `json:"wave"`
	Of          int    `json:"of"`
	Domain      string `json:"domain"`
	BakeStarted string `json:"bakeStarted,omitempty"`
}

// String is st as WaveStateAnnotation holds it.
func (st WaveState) String() string {
	w := WaveStateRecord{Revision: st.Revision, Wave: st.Index + 1, Of: st.Of, Domain: st.Domain}
	if !st.BakeStarted.IsZero() {
		w.BakeStarted = st.BakeStarted.UTC().Format(time.RFC3339)
	}
	b, _ := json.Marshal(w) // strings and ints: cannot fail
	return string(b)
}

// ParseWaveState reads a WaveStateAnnotation value.
func ParseWaveState(v string) (WaveState, error) {
	var w WaveStateRecord
	if err := json.Unmarshal([]byte(v), &w); err != nil {
		return WaveState{}, fmt.Errorf("not a wave record: %w", err)
	}
	if w.Revision == "" || w.Wave < 1 || w.Of < 1 || w.Wave > w.Of+1 {
		return WaveState{}, fmt.Errorf(`must be {"revision","wave","of","domain"} with 1 <= wave <= of+1`)
	}
	st := WaveState{Revision: w.Revision, Index: w.Wave - 1, Of: w.Of, Domain: w.Domain}
	if w.BakeStarted != "" {
		t, err := time.Parse(time.RFC3339, w.BakeStarted)
		if err != nil {
			return WaveState{}, fmt.Errorf("bakeStarted: %w", err)
		}
		st.BakeStarted = t
	}
	return st, nil
}

// Describe is st as Progressing says it: "wave 2 of 3: zone-b", with
// ", baking until <time>" during its bake (bake is the wave's).
func (st WaveState) Describe(bake time.Duration) string {
	if st.Index >= st.Of {
		return fmt.Sprintf("all %d waves done", st.Of)
	}
	domain := st.Domain
	if domain == NoDomain {
		domain = "nodes without the label"
	}
	msg := fmt.Sprintf("wave %d of %d: %s", st.Index+1, st.Of, domain)
	if !st.BakeStarted.IsZero() {
		msg += ", baking until " + st.BakeStarted.Add(bake).UTC().Format(time.RFC3339)
	}
	return msg
}

// WaveProgress is where a waves rollout is once a plan is carried out.
type WaveProgress struct {
	// State is the wave under way: the caller records it
	// (WaveStateAnnotation) before it carries out the plan when Record
	// says it differs from Input.Waves.State.
	State  WaveState
	Record bool
	// Baking says State's wave is done and bakes.
	Baking bool
	// Held is how many old pods the wave holds: those of later domains.
	Held int
	// Message is State described (WaveState.Describe), or why every pod is held.
	Message string
	// later are the pods the wave holds (its old pods of later domains).
	later map[*corev1.Pod]bool
	// pin is the domain the update revision's new pods go to; nil for none.
	pin *Pin
	// wait, when positive, is when the bake under way ends.
	wait time.Duration
}

// Pin is the domain new pods are pinned to (Creation.Pin): a required node
// affinity on Key (its value Domain, or no Key for NoDomain), and
// WavePodAnnotation.
type Pin struct {
	Key, Domain string
}

// domains are the waves of w over pods: Order's domains that pods (or
// the record's wave under way, whose pods may all be on their way) are
// in, then the others by name, then NoDomain if any pod is in it.
func (w *Waves) domains(pods []*corev1.Pod, update string) []string {
	seen := map[string]bool{}
	for _, p := range pods {
		if p != nil {
			seen[w.Domain[p.Name]] = true
		}
	}
	if w.State.Revision == update && w.State.Index < w.State.Of {
		seen[w.State.Domain] = true
	}
	var out []string
	for _, d := range w.Order {
		if seen[d] && d != NoDomain && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	var rest []string
	for d := range seen {
		if d != NoDomain && !slices.Contains(out, d) {
			rest = append(rest, d)
		}
	}
	slices.Sort(rest)
	out = append(out, rest...)
	if seen[NoDomain] {
		out = append(out, NoDomain)
	}
	return out
}

// waveStep is where the waves rollout of in is, given the pods of s
// (classified, not yet held): nil when none is under way (no waves, no
// old pod left, Recreate).
func (s podSet) waveStep(in Input) *WaveProgress {
	w := in.Waves
	recorded := w != nil && w.State.Revision == in.UpdateRevision && w.State.Index < w.State.Of
	switch {
	case w == nil || in.Strategy == Recreate || len(s.old) == 0 && !recorded:
		return nil
	case w.Unknown:
		return heldByUnknown(s, w, max(int(in.Replicas), 0))
	}
	domains := w.domains(slices.Concat(s.updated, s.old), in.UpdateRevision)
	if len(domains) == 0 {
		return nil
	}
	index := make(map[string]int, len(domains))
	for i, d := range domains {
		index[d] = i
	}
	wv := waveView{s: s, w: w, index: index, n: len(domains), replicas: max(int(in.Replicas), 0)}
	st := wv.start(in.UpdateRevision, domains)
	var wait time.Duration
	for !in.Paused && st.Index < wv.n && wv.done(st.Index) {
		if st.Index == wv.n-1 {
			st = WaveState{Revision: st.Revision, Index: wv.n, Of: wv.n} // the last wave bakes before nothing
			break
		}
		if w.Bake > 0 {
			if st.BakeStarted.IsZero() {
				st.BakeStarted = ceilSecond(in.Now) // as the record keeps it, never shortening the bake
			}
			if wait = st.BakeStarted.Add(w.Bake).Sub(in.Now); wait > 0 {
				break
			}
			wait = 0
		}
		st = WaveState{Revision: st.Revision, Index: st.Index + 1, Of: wv.n, Domain: domains[st.Index+1]}
	}
	return wv.progress(st, wait)
}

// heldByUnknown holds every old pod, and every pod a scale-up adds (of
// the current revision, as a partition's held side): without the domains
// no wave can start, and a new pod of the update revision could not be
// pinned. Pods already updated stay (the watch may have just started,
// mid-rollout).
func heldByUnknown(s podSet, w *Waves, replicas int) *WaveProgress {
	later := make(map[*corev1.Pod]bool, len(s.old))
	for _, p := range s.old {
		later[p] = true
	}
	return &WaveProgress{Held: max(len(s.old), replicas-len(s.updated)), later: later, State: w.State,
		Message: "waiting for the Nodes' " + w.Key + " labels: every pod holds"}
}

// waveView reads the pods of a podSet by domain.
type waveView struct {
	s        podSet
	w        *Waves
	index    map[string]int // a domain's wave
	n        int            // how many waves
	replicas int
}

// wave is the wave of pod's domain.
func (v waveView) wave(p *corev1.Pod) int {
	return v.index[v.w.Domain[p.Name]]
}

// start is the wave the record names, if it is of the rollout to update
// and its domain is still a wave; otherwise the first wave.
func (v waveView) start(update string, domains []string) WaveState {
	st := v.w.State
	if i, ok := v.index[st.Domain]; ok && st.Revision == update && st.Index < st.Of {
		return WaveState{Revision: update, Index: i, Of: v.n, Domain: st.Domain, BakeStarted: st.BakeStarted}
	}
	return WaveState{Revision: update, Index: 0, Of: v.n, Domain: domains[0]}
}

// later counts the old pods of the waves after k.
func (v waveView) later(k int) int {
	n := 0
	for _, p := range v.s.old {
		if v.wave(p) > k {
			n++
		}
	}
	return n
}

// done says wave k is done: no old pod left up to it, every pod of the
// update revision in it available, and at least Replicas less the later
// waves' old pods of the update revision available in all.
func (v waveView) done(k int) bool {
	if len(v.s.old)-v.later(k) > 0 {
		return false
	}
	available := 0
	for _, p := range v.s.updated {
		ok := IsAvailable(p, v.s.minReadySeconds, v.s.now)
		if !ok && v.wave(p) == k {
			return false
		}
		if ok {
			available++
		}
	}
	return available >= v.replicas-v.later(k)
}

// progress is the rollout at st, compared with the record.
func (v waveView) progress(st WaveState, wait time.Duration) *WaveProgress {
	rec := v.w.State
	p := &WaveProgress{State: st, Baking: !st.BakeStarted.IsZero(), wait: wait,
		Record: rec.Revision != st.Revision || rec.Index != st.Index || rec.Of != st.Of || rec.Domain != st.Domain ||
			!rec.BakeStarted.Equal(st.BakeStarted),
		Message: st.Describe(v.w.Bake), later: map[*corev1.Pod]bool{}}
	for _, pod := range v.s.old {
		if v.wave(pod) > st.Index {
			p.later[pod] = true
		}
	}
	p.Held = len(p.later)
	if st.Index < v.n {
		p.pin = &Pin{Key: v.w.Key, Domain: st.Domain}
	}
	return p
}

// leaving are the old pods of keep (unlabelled) beyond the held share
// that leave their side in a rolling step, in leavingOrder; with a wave
// under way its own (or an earlier wave's) first, and one it holds only
// when Replicas are fewer than the pods it holds (a scale-down: s.held is
// at most Replicas).
func (s podSet) leaving(l limits, keep []*corev1.Pod) []*corev1.Pod {
	n := max(0, len(keep)-s.held)
	if l.waves == nil {
		return s.leavingOrder(keep, s.held > 0)[:n]
	}
	later := func(p *corev1.Pod) bool { return l.waves.later[p] }
	inWave := slices.DeleteFunc(slices.Clone(keep), later)
	held := slices.DeleteFunc(slices.Clone(keep), func(p *corev1.Pod) bool { return !later(p) })
	return slices.Concat(s.leavingOrder(inWave, s.held > 0), s.leavingOrder(held, s.held > 0))[:n]
}

// withWaves is p with the wave's pin on the update revision's creations
// and the bake's end as a requeue.
func (w *WaveProgress) withWaves(p Plan, update string) Plan {
	if w == nil {
		return p
	}
	for i := range p.Create {
		if p.Create[i].Revision == update {
			p.Create[i].Pin = w.pin
		}
	}
	if w.wait > 0 && (p.RequeueAfter == 0 || w.wait < p.RequeueAfter) {
		p.RequeueAfter = w.wait
	}
	if acts := len(p.Create) > 0 || p.Removes() > 0 || len(p.UpdateInPlace) > 0; w.Baking && w.wait > 0 && !acts {
		p.Reason = ReasonWaveBake // held for the bake, whatever else waits
	}
	p.Waves = w
	return p
}

// PinTemplate pins a pod template to pin's domain: a required node
// affinity term (Key In [Domain], or Key DoesNotExist for NoDomain)
// added to each of its required terms (one term if it has none), and
// WavePodAnnotation. The revision's template is not changed: the caller
// pins the copy it creates a pod from.
func PinTemplate(t *corev1.PodTemplateSpec, pin Pin) {
	req := corev1.NodeSelectorRequirement{Key: pin.Key, Operator: corev1.NodeSelectorOpIn, Values: []string{pin.Domain}}
	if pin.Domain == NoDomain {
		req = corev1.NodeSelectorRequirement{Key: pin.Key, Operator: corev1.NodeSelectorOpDoesNotExist}
	}
	spec := &t.Spec
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{}
	}
	if spec.Affinity.NodeAffinity == nil {
		spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{}
	}
	sel := na.RequiredDuringSchedulingIgnoredDuringExecution
	if len(sel.NodeSelectorTerms) == 0 {
		sel.NodeSelectorTerms = []corev1.NodeSelectorTerm{{}}
	}
	for i := range sel.NodeSelectorTerms {
		sel.NodeSelectorTerms[i].MatchExpressions = append(sel.NodeSelectorTerms[i].MatchExpressions, req)
	}
	if t.Annotations == nil {
		t.Annotations = map[string]string{}
	}
	t.Annotations[WavePodAnnotation] = pin.Domain
}

// ceilSecond is t in UTC rounded up to the second: the record keeps
// seconds, and a bake recorded as begun before it did would end early.
func ceilSecond(t time.Time) time.Time {
	c := t.UTC().Truncate(time.Second)
	if c.Before(t) {
		c = c.Add(time.Second)
	}
	return c
}
