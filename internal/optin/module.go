package optin

import (
	"context"
	"iter"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// A Module is one opt-in: the annotations (or labels) it owns and how it
// reads them. Its package, internal/optin/<module>, is the only one that
// parses them; internal/optin/modules lists every module and parses an
// object's opt-ins for the controller, the webhook and the kubectl plugin.
type Module interface {
	// Name is the module's key in a Set.
	Name() string
	// Keys are the annotations and labels it owns.
	Keys() []string
	// Parse reads md's keys: a nil Spec when md does not opt in, and an
	// error naming its key for each value that can never work (the webhook
	// refuses them with these errors; the controller reports them in its
	// InvalidAnnotation condition). A Spec returned beside errors holds
	// what could be parsed.
	Parse(md *appsv1beta1.MyDeployment) (Spec, field.ErrorList)
}

// A Spec is one module's parsed opt-in of one object, never modified once
// parsed. Beside Module it implements the extension points of the phases
// its module takes part in; each phase declares its own in its package
// (rollout.Planner: the planner's input; status.Reporter: the status's),
// so that a module imports the phases it serves and no phase imports a
// module.
type Spec interface {
	// Module is the Name of the module that parsed it.
	Module() string
}

// Set is one object's opt-ins: the Spec of each module it opts into, in
// the registry's order.
type Set struct {
	specs []Spec
}

// NewSet is the Set of specs (none nil), which it keeps.
func NewSet(specs ...Spec) Set {
	return Set{specs: specs}
}

// Specs are s's specs in the registry's order.
func (s Set) Specs() []Spec {
	return s.specs
}

// Get is the spec module parsed in s, as its package's type S; false when
// s does not opt into module. A module's package exports it typed:
//
//	func Of(s optin.Set) *Partition { p, _ := optin.Get[*Partition](s, Name); return p }
func Get[S Spec](s Set, module string) (S, bool) {
	for _, sp := range s.specs {
		if sp.Module() == module {
			v, ok := sp.(S)
			return v, ok
		}
	}
	var zero S
	return zero, false
}

// Each yields the specs of s that implement the extension point T, in the
// registry's order.
func Each[T any](s Set) iter.Seq[T] {
	return func(yield func(T) bool) {
		for _, sp := range s.specs {
			if t, ok := sp.(T); ok && !yield(t) {
				return
			}
		}
	}
}

// A Builder is a Module with a long-lived part (a Part), built once at
// setup and kept for the manager's life: the drain module's Node watch,
// the config-rollout module's config watch, the update-mode module's memo
// of in-place diffs, the analysis module's Prometheus client.
type Builder interface {
	Module
	// Build makes the module's part; ctx is the setup's (for the indexes
	// it adds to the manager's cache).
	Build(ctx context.Context, env BuildEnv) (Part, error)
}

// A Part is a module's long-lived part (Builder). The controller runs a
// Part that is a manager.Runnable in the manager, and enqueues what a
// Watch's Events name; a sync hands each module's part to its Observer
// specs (Set.Observe), and a part every object needs, opted in or not (the
// update-mode module's memo: a pod made with the in-place gate steps on
// after its object opts out), is read through its package's accessor.
type Part any

// A Watch is a Part that watches something beside the object: run by the
// manager (with the leader, or with every replica), and a source of
// MyDeployments to sync again.
type Watch interface {
	manager.Runnable
	manager.LeaderElectionRunnable
	// Events are the MyDeployments to sync again.
	Events() <-chan event.GenericEvent
}

// BuildEnv is what a module's Build may use.
type BuildEnv struct {
	// Reader is the manager's cache: MyDeployments, their pods and revisions.
	Reader client.Reader
	// Indexer adds indexes of MyDeployments to the manager's cache
	// (before it starts): a watch's Events find the objects to sync
	// again with them.
	Indexer client.FieldIndexer
	// Writer writes through the API server (access reviews).
	Writer client.Client
	// Pods reads the cache's pods by owner (podwatch.Index).
	Pods OwnedPods
	// Config reaches the API server for informers of the module's own.
	Config *rest.Config
	Log    logr.Logger
	// Shared are the parts several modules share, one of each per setup
	// (the node view the drain and waves modules read); nil shares none.
	Shared *Shared
	// EveryReplica: every replica reconciles (active-active shards, issue
	// 56), so a module's watch runs on each, not on the leader alone.
	EveryReplica bool
}

// Shared holds the parts that several modules' parts share, one of each
// per setup: the first Build that asks for one builds it (Share), the
// others get the same. So two modules that read one kind (drain and
// waves: Nodes) run one informer and ask for access once, not one of each
// per module. The lock closes the race of two Builds asking at once;
// setup builds one module after another today.
type Shared struct {
	mu    sync.Mutex
	parts map[string]any
}

// NewShared is an empty Shared, for one setup.
func NewShared() *Shared {
	return &Shared{parts: map[string]any{}}
}

// Share is s's part named name, built by build if no Build asked for it
// before; a nil s shares nothing and builds a new part each time. A part
// of another type under name is a programming error: it panics.
func Share[T any](s *Shared, name string, build func() T) T {
	if s == nil {
		return build()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.parts[name]; ok {
		return p.(T)
	}
	p := build()
	s.parts[name] = p
	return p
}

// OwnedPods reads the pods an object controls from the manager's cache,
// without copies (podwatch.Index): read only.
type OwnedPods interface {
	Owned(owner types.UID) ([]*corev1.Pod, error)
}

// An Observer is a Spec that reads its module's Part once per sync,
// before the plan (the draining nodes): Observe returns the Spec the sync's
// later points see, itself with what it read, and never modifies the one
// it is called on. p is nil when the controller runs no part of its
// module (a reconciler built without one).
type Observer interface {
	Spec
	Observe(p Part) Spec
}

// Observe is s with each Observer's spec replaced by what it observed
// through its module's part in parts (by module name); s is not modified.
func (s Set) Observe(parts map[string]Part) Set {
	out, _ := s.replaced(func(sp Spec) (Spec, bool, error) {
		o, ok := sp.(Observer)
		if !ok {
			return nil, false, nil
		}
		return o.Observe(parts[sp.Module()]), true, nil
	})
	return out
}

// replaced is s with the spec replace returns for each spec it replaces
// (ok); s is not modified. The spec list is copied at the first
// replacement only: most objects opt into no module that replaces its
// spec. The first error ends it.
func (s Set) replaced(replace func(Spec) (Spec, bool, error)) (Set, error) {
	cloned := false
	for i, sp := range s.specs {
		next, ok, err := replace(sp)
		if err != nil {
			return s, err
		}
		if !ok {
			continue
		}
		if !cloned {
			s.specs, cloned = slices.Clone(s.specs), true // s is a copy; its specs are not yet
		}
		s.specs[i] = next
	}
	return s, nil
}

// A Reader is a Spec that reads, once per sync and only once the cache
// has caught up with the controller's writes, what its module needs from
// the API server beside the cache (the config-rollout module: the data of
// the config the template references). Read returns the Spec the sync's
// later points see, itself with what it read, and never modifies the one
// it is called on; an error ends the sync, which is tried again.
type Reader interface {
	Spec
	Read(ctx context.Context, md *appsv1beta1.MyDeployment, env ReadEnv) (Spec, error)
}

// ReadEnv is what a module's Read may use.
type ReadEnv struct {
	// APIReader reads around the cache.
	APIReader client.Reader
	// RecordsRevision says the sync may record a new revision of the
	// template: the object is not paused, or a hand-over records one.
	RecordsRevision bool
	// Now is the sync's clock.
	Now time.Time
	// Parts are the modules' long-lived parts, by module name (the
	// analysis module's Prometheus client).
	Parts map[string]Part
	// Set is the object's opt-ins as observed so far: a module reads
	// another's view only through the points of this package (StepOf,
	// RetriedAtOf), never its package.
	Set Set
	// Memory is what the module's spec kept at the object's last sync
	// (Keeper); nil at its first, or after a manager restart.
	Memory any
}

// Read is s with each Reader's spec replaced by what it read, each handed
// its module's memory from mem (by module name; Kept made it); s is not
// modified. The first error ends it.
func (s Set) Read(ctx context.Context, md *appsv1beta1.MyDeployment, env ReadEnv, mem map[string]any) (Set, error) {
	env.Set = s
	return s.replaced(func(sp Spec) (Spec, bool, error) {
		r, ok := sp.(Reader)
		if !ok {
			return nil, false, nil
		}
		env.Memory = mem[sp.Module()]
		read, err := r.Read(ctx, md, env)
		return read, err == nil, err
	})
}

// A Keeper is a Spec with memory of its own between its object's syncs
// (the analysis module: the measurements of the canary step under way,
// which live nowhere else). The controller keeps what Keep returns in the
// object's memory and hands it to the module's next Read (ReadEnv.Memory);
// nil keeps nothing. A manager restart loses it.
type Keeper interface {
	Spec
	Keep() any
}

// Kept is what s's Keepers keep, by module name: the memory of every
// module for the object's next sync (a module s no longer opts into keeps
// nothing).
func (s Set) Kept() map[string]any {
	var kept map[string]any
	for k := range Each[Keeper](s) {
		if v := k.Keep(); v != nil {
			if kept == nil {
				kept = map[string]any{}
			}
			kept[k.Module()] = v
		}
	}
	return kept
}

// A Stepper is a Spec that moves a rollout through steps (the canary
// module's): the step its record names, for the modules that act per
// step (the analysis measures it).
type Stepper interface {
	Spec
	// Step is the step under way: the revision the rollout moves to and
	// the step's index from 0; ok is false with no step recorded, or past
	// the last step.
	Step() (revision string, index int, ok bool)
}

// StepOf is the step s's Stepper has under way; ok is false without one.
func StepOf(s Set) (revision string, index int, ok bool) {
	for st := range Each[Stepper](s) {
		return st.Step()
	}
	return "", 0, false
}

// A RouteWaiter is a Spec that knows whether the route carries the
// weight a canary step states (the weights module's, from the
// Application's record): the analysis measures a step only once it does.
type RouteWaiter interface {
	Spec
	// RouteWaits says the route does not carry yet the weight step index
	// of the rollout to revision states; why says what it carries.
	RouteWaits(revision string, index int) (why string, waits bool)
}

// RouteWaitsOf is what s's RouteWaiter says of the step; false without one.
func RouteWaitsOf(s Set, revision string, index int) (why string, waits bool) {
	for w := range Each[RouteWaiter](s) {
		return w.RouteWaits(revision, index)
	}
	return "", false
}

// A Retrier is a Spec that says when its object's aborted rollout was
// last started over (the abort module's retried-at): what a step
// measured before is not counted after.
type Retrier interface {
	Spec
	Retried() time.Time
}

// RetriedAtOf is when s's rollout was last retried; zero if never.
func RetriedAtOf(s Set) time.Time {
	for r := range Each[Retrier](s) {
		return r.Retried()
	}
	return time.Time{}
}

// A Measurer is a Spec that measured something this sync (the analysis
// module: its queries), for the controller's metrics.
type Measurer interface {
	Spec
	Measured() []Measurement
}

// Measurement is one value a module measured: its name (a query's),
// its result ("success", "failure", "inconclusive") and value.
type Measurement struct {
	Name, Result string
	Value        float64
}

// An Aborter is a Spec whose verdict aborts a rollout (the analysis
// module: a canary step's failed measurements): whoever opts into one may
// see its rollout aborted, as on-failure Abort would.
type Aborter interface {
	Spec
	// AbortCause is why the rollout to revision must be aborted now; the
	// zero Cause when it need not.
	AbortCause(revision string) Cause
	// After is when the spec wants its object synced again to judge anew
	// (the next measurement); 0 for no such wish.
	After() time.Duration
}

// A Cause is why a module aborts a rollout: Message says what failed, as
// the status and the abort's event say it after "aborted: " ("analysis
// failed: ...", "hook Job ... failed: ..."); Reason is the abort event's
// reason. The zero Cause is none.
type Cause struct {
	Reason, Message string
}

// VerdictOf is what s's Aborters say of the rollout to revision: whether
// any may abort it (aborts: s opts into one), why the first that does
// aborts it now (the zero Cause when none does), and the soonest any wants its object
// synced again to judge anew (0 for none).
func VerdictOf(s Set, revision string) (aborts bool, cause Cause, after time.Duration) {
	for a := range Each[Aborter](s) {
		aborts = true
		if c := a.AbortCause(revision); c.Message != "" && cause.Message == "" {
			cause = c
		}
		if d := a.After(); d > 0 && (after == 0 || d < after) {
			after = d
		}
	}
	return aborts, cause, after
}

// An Owner is a Module that has the controller make objects of a kind of
// its own (the hooks module: Jobs). The manager's cache holds those the
// ByObject selects (only they: a cache of every Job of the cluster would
// cost what no sync reads), and an event of one syncs the MyDeployment
// that controls it, as Owns does in controller-runtime.
type Owner interface {
	Module
	Owns() (client.Object, cache.ByObject)
}

// A Writer is a Spec with objects of its module's own kinds to write (a
// hook's Job). A module never holds a client: decide asks each Writer
// what the plan writes (WritesOf), and act carries it out before any pod
// moves.
type Writer interface {
	Spec
	Writes(p Planned) []Write
}

// Planned is what a sync's plan says that a Writer's writes depend on.
type Planned struct {
	// Update is the update revision's name; Current the current one's
	// (Update when no other is current).
	Update, Current string
	// Kept are the object's revisions once the plan's history
	// truncation (revisionHistoryLimit) is done: what a module's objects
	// of a revision go with.
	Kept []string
	// Step is the canary step the plan stands at; nil without a canary
	// rollout under way.
	Step *PlannedStep
}

// PlannedStep is a canary step a plan stands at: the revision, the
// step's index from 0, and Held: the step is done but for its gate
// (rollout.AnalysisGate: its analysis, its hook).
type PlannedStep struct {
	Revision string
	Index    int
	Held     bool
}

// A Write is one object a module has act create or delete.
//
// Create makes the object to create; when From is set act first reads
// From's key around the cache (a template the cache does not hold: the
// hook's suspended Job) and hands it over. A create whose name is taken
// is read back: an object the MyDeployment controls is the one an
// earlier sync made (a lost reply, or a cache that does not show it yet),
// so a write is never made twice; one it does not control is the write's
// failure. Delete is an object to delete (propagation Background; gone
// already is done). Reason is the ReplicaFailure reason of a failed write.
type Write struct {
	From   client.Object
	Create func(from client.Object) (client.Object, error)
	Delete client.Object
	Reason string
}

// WritesOf is what s's Writers write after a plan p, in the registry's
// order.
func WritesOf(s Set, p Planned) []Write {
	var out []Write
	for w := range Each[Writer](s) {
		out = append(out, w.Writes(p)...)
	}
	return out
}

// An Announcer is a Spec with events for its object, which act records
// with the plan's (a hook's failure). A module keeps no memory of what it
// announced: it announces what the status the last sync wrote does not say
// yet, so an event comes once per change.
type Announcer interface {
	Spec
	Events(p Planned) []Event
}

// Event is one event an Announcer asks for: Warning or Normal, its reason
// and note.
type Event struct {
	Warning      bool
	Reason, Note string
}

// EventsOf is what s's Announcers announce after a plan p, in the
// registry's order.
func EventsOf(s Set, p Planned) []Event {
	var out []Event
	for a := range Each[Announcer](s) {
		out = append(out, a.Events(p)...)
	}
	return out
}

// TransientRetry is the backoff between two tries of something a
// transient API error stopped (asking for access, starting a watch): from
// 100 ms, doubling, to at most 5 s, with 20% jitter. A transient error is
// not a denial: a watch that meets one tries again soon, not at its poll.
func TransientRetry() wait.Backoff {
	return wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Jitter: 0.2, Steps: 100, Cap: 5 * time.Second}
}

// ParseSwitch reads md's annotation key as an on/off opt-in: on for
// "true"; off for "false" or no annotation; any other value is an error
// naming key (the respect-pdb and config-rollout modules).
func ParseSwitch(md *appsv1beta1.MyDeployment, key string) (on bool, errs field.ErrorList) {
	v, ok := md.Annotations[key]
	if !ok {
		return false, nil
	}
	switch v {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, field.ErrorList{field.NotSupported(Path(key), v, []string{"true", "false"})}
}
