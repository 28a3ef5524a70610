// Package waves is the waves opt-in (Annotation): a RollingUpdate updates
// the pods of one failure domain at a time, a domain being the value of a
// node label on the nodes of the object's pods (any key, e.g.
// topology.kubernetes.io/zone), the next domain only once the previous
// one's pods are all updated and available and its bake time has passed.
// The module parses the annotation, reads the nodes' labels through the
// node view it shares with the drain module (internal/optin/nodes: one
// informer started once an object opts in and the manager may list
// Nodes), hands the planner each pod's domain
// (rollout.Input.Waves; the waves themselves are the planner's,
// internal/rollout/waves.go), reads back the controller's wave record
// (rollout.WaveStateAnnotation) and reports the wave under way and a
// denial of Nodes (ReplicaFailure WavesAccessDenied).
package waves

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/nodes"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
	"github.com/mydeployment-io/mydeployment-operator/internal/status"
)

// Name is the module's name in an optin.Set.
const Name = "waves"

// Annotation opts into waves: a node label key, or JSON
// {"key": "<label key>", "order": ["<domain>", ...], "bake": "<duration>"}.
const Annotation = "apps.mydeployment.io/waves"

// ReasonWavesAccessDenied: ReplicaFailure=True, the object opts into
// waves and the manager may not list and watch Nodes: its rollout holds.
const ReasonWavesAccessDenied = "WavesAccessDenied"

// maxOrder bounds the order list (a list this long is a mistake).
const maxOrder = 100

// Module is the waves module.
var Module optin.Builder = module{}

type module struct{}

func (module) Name() string { return Name }

func (module) Keys() []string { return []string{Annotation, rollout.WaveStateAnnotation} }

// Parse reads Annotation and the wave record. Refused, each naming its
// annotation: a value that is neither a label key nor the JSON form, a key
// that is no valid label key, an order entry that is no valid label value
// or is listed twice, a bake that is no non-negative duration, unknown
// JSON fields; waves with strategy Recreate; a wave record that is not the
// controller's. Beside canary steps (or a partition) waves compose as two
// partitions, the larger holding (rollout.Waves).
func (module) Parse(md *appsv1beta1.MyDeployment) (optin.Spec, field.ErrorList) {
	var errs field.ErrorList
	var st rollout.WaveState
	if v, ok := md.Annotations[rollout.WaveStateAnnotation]; ok {
		var err error
		if st, err = rollout.ParseWaveState(v); err != nil {
			errs = append(errs, field.Invalid(optin.Path(rollout.WaveStateAnnotation), v, err.Error()))
		}
	}
	v, ok := md.Annotations[Annotation]
	if !ok {
		return nil, errs
	}
	path := optin.Path(Annotation)
	w, err := ParseValue(v)
	switch {
	case err != nil:
		errs = append(errs, field.Invalid(path, v, err.Error()))
	case md.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType:
		errs = append(errs, field.Forbidden(path, "waves need spec.strategy.type RollingUpdate: Recreate replaces every pod at once"))
	}
	if len(errs) > 0 {
		return nil, errs
	}
	w.state = st
	return w, nil
}

// value is Annotation's JSON form.
type value struct {
	Key   string   `json:"key"`
	Order []string `json:"order,omitempty"`
	Bake  string   `json:"bake,omitempty"`
}

// ParseValue parses an Annotation value: a label key, or the JSON form.
// The error says which field is wrong and why.
func ParseValue(v string) (*Waves, error) {
	s := strings.TrimSpace(v)
	val := value{Key: s}
	if strings.HasPrefix(s, "{") {
		dec := json.NewDecoder(bytes.NewReader([]byte(s)))
		dec.DisallowUnknownFields()
		val = value{}
		if err := dec.Decode(&val); err != nil {
			return nil, fmt.Errorf(`must be a node label key or {"key": "<label key>", "order": [...], "bake": "10m"}: %w`, err)
		}
	}
	if msgs := validation.IsQualifiedName(val.Key); len(msgs) > 0 {
		return nil, fmt.Errorf("key %q is not a node label key: %s", val.Key, strings.Join(msgs, "; "))
	}
	w := &Waves{key: val.Key}
	if err := w.setOrder(val.Order); err != nil {
		return nil, err
	}
	if val.Bake != "" {
		d, err := time.ParseDuration(val.Bake)
		if err != nil || d < 0 {
			return nil, fmt.Errorf(`bake %q must be a non-negative duration ("10m", "90s")`, val.Bake)
		}
		w.bake = d
	}
	return w, nil
}

// setOrder checks and keeps the order: label values, each once.
func (w *Waves) setOrder(order []string) error {
	if len(order) > maxOrder {
		return fmt.Errorf("order must list at most %d domains, not %d", maxOrder, len(order))
	}
	seen := map[string]bool{}
	for i, d := range order {
		if d == "" {
			return fmt.Errorf("order[%d] must not be empty: pods on nodes without the label go last anyway", i)
		}
		if msgs := validation.IsValidLabelValue(d); len(msgs) > 0 {
			return fmt.Errorf("order[%d] %q is not a label value: %s", i, d, strings.Join(msgs, "; "))
		}
		if seen[d] {
			return fmt.Errorf("order[%d] %q is listed twice", i, d)
		}
		seen[d] = true
	}
	w.order = order
	return nil
}

// Build implements optin.Builder: the module's part is the shared node
// view (nodes.Watch); a node whose labels change syncs the opted-in
// objects with pods on it.
func (module) Build(_ context.Context, env optin.BuildEnv) (optin.Part, error) {
	return nodes.For(env, Module, nodes.LabelsChanged), nil
}

// Waves is the Spec of an object that opts in: its key, order and bake,
// the controller's record of the wave under way, and once observed what
// the node view knows of the nodes' labels.
type Waves struct {
	key   string
	order []string
	bake  time.Duration
	state rollout.WaveState
	// nodes reads the view once observed (nil: no view, or not synced).
	nodes nodeView
	// denied: the manager may not list and watch Nodes.
	denied bool
}

// nodeView reads a node's label: ok is false for a node not seen.
type nodeView func(node, key string) (value string, hasKey, ok bool)

// Of is the waves s opts into; nil without.
func Of(s optin.Set) *Waves {
	w, _ := optin.Get[*Waves](s, Name)
	return w
}

// Key is the node label whose values are the domains.
func (w *Waves) Key() string { return w.key }

// Bake is how long a done wave bakes.
func (w *Waves) Bake() time.Duration { return w.bake }

// Module implements optin.Spec.
func (*Waves) Module() string { return Name }

// Observe implements optin.Observer: what p (a *nodes.Watch; nil: no
// view, the domains unknown) knows now.
func (w *Waves) Observe(p optin.Part) optin.Spec {
	nw, _ := p.(*nodes.Watch)
	seen := nw.Seen()
	out := *w
	out.nodes, out.denied = nil, seen.Denied
	if seen.Synced() {
		out.nodes = seen.Label
	}
	return &out
}

// PlanInput implements rollout.Planner: each pod's domain, from the node
// it runs on, or for a pod not yet scheduled the domain it is pinned to.
func (w *Waves) PlanInput(in *rollout.Input) {
	rw := &rollout.Waves{Key: w.key, Order: w.order, Bake: w.bake, State: w.state, Unknown: w.nodes == nil,
		Domain: make(map[string]string, len(in.Pods))}
	for _, p := range in.Pods {
		if p != nil {
			rw.Domain[p.Name] = w.domainOf(p)
		}
	}
	in.Waves = rw
}

// domainOf is pod's domain: its node's value of the key (NoDomain on a
// node without it), or the domain it was pinned to while it is not
// scheduled or its node is not seen (NoDomain if it was not pinned).
func (w *Waves) domainOf(p *corev1.Pod) string {
	if p.Spec.NodeName != "" && w.nodes != nil {
		if v, has, ok := w.nodes(p.Spec.NodeName, w.key); ok {
			if !has {
				return rollout.NoDomain
			}
			return v
		}
	}
	return p.Annotations[rollout.WavePodAnnotation]
}

// ErrAccessDenied is the ReplicaFailure message of an opted-in object
// whose manager may not list and watch Nodes.
var ErrAccessDenied = fmt.Errorf("%s: the manager may not list and watch Nodes, so it does not know the pods' domains "+
	"(grant it the ClusterRole of config/rbac/node_reader_role.yaml); the rollout holds", Annotation)

// ReportInput implements status.Reporter: while a rollout is under way,
// the wave the record names (Progressing: "wave 2 of 3: zone-b", a hold
// while it bakes); with no other failure to report, that the manager may
// not see Nodes, and the rollout holds.
func (w *Waves) ReportInput(in *status.Input) {
	if in.Failure == nil && w.denied {
		in.Failure = &status.Failure{Reason: ReasonWavesAccessDenied, Message: ErrAccessDenied.Error()}
	}
	st := w.state
	wave := &status.Wave{Message: st.Describe(w.bake), Baking: !st.BakeStarted.IsZero()}
	if in.Plan != nil && in.Plan.Waves != nil {
		// Where the plan moved on to: a bake that ended starts the next
		// wave in the same sync, and the status says so now.
		p := in.Plan.Waves
		st, wave = p.State, &status.Wave{Message: p.Message, Baking: p.Baking}
	}
	if in.UpdateRevision != "" && in.CurrentRevision != in.UpdateRevision && st.Revision == in.UpdateRevision && st.Index < st.Of {
		in.Wave = wave
	}
}

// Recorded is the wave record md holds; ok is false without a valid one.
func Recorded(md *appsv1beta1.MyDeployment) (rollout.WaveState, bool) {
	st, err := rollout.ParseWaveState(md.Annotations[rollout.WaveStateAnnotation])
	return st, err == nil
}

var (
	_ optin.Observer  = (*Waves)(nil)
	_ rollout.Planner = (*Waves)(nil)
	_ status.Reporter = (*Waves)(nil)
)
