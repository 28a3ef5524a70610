package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/metrics"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/modules"
	"github.com/mydeployment-io/mydeployment-operator/internal/ownership"
	"github.com/mydeployment-io/mydeployment-operator/internal/podwatch"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
)

// observation is what observe read of one MyDeployment: the object, what
// the controller keeps of it (obj: its freshness record above all), the
// sync's clock, its selector, strategy and opt-ins parsed once, the pods
// its cache lists, and the views of the watches it opted into. Nothing
// writes it once observe returns: each later phase takes it and returns
// a value of its own (claim: claimed; decide: syncPlan; act: outcome),
// and the status is computed from those (statusInput).
type observation struct {
	md *appsv1beta1.MyDeployment
	// obj is what the controller keeps of md between syncs; mem its
	// memory as this sync found it, with the measurements observe took
	// (the next phases return theirs: claimed.mem, outcome.mem).
	obj      *object
	mem      memory
	now      time.Time
	selector labels.Selector
	// invalid is set when the spec can never work (the selector, the
	// strategy, an opt-in annotation); invalidReason is the ReplicaFailure
	// reason to report it under.
	invalid       error
	invalidReason string
	// settled: the cache reflects every pod write of earlier syncs.
	settled bool
	// retryAfter, when positive, is when to look again at an object held
	// back (by a deleted namesake's pods).
	retryAfter time.Duration
	// orphans: the namespace's pods without a controller, as readPods
	// found them (claim adopts those that match).
	orphans []*corev1.Pod
	// pods the MyDeployment controls, as the cache lists them.
	pods []*corev1.Pod
	// vetListed, on a sync that vets (vetStart), names the pods the API
	// server lists that the cache must list too before the sync may plan.
	vetListed []string
	// maxSurge and maxUnavailable are the strategy's, resolved against
	// spec.replicas; optIn the opt-in annotations: parsed once, here.
	maxSurge, maxUnavailable int32
	optIn                    optin.Set
	// records are the controller's records on md (its revision number,
	// size, abort), parsed once.
	records optin.Records
}

// written is o with its object as out's annotation writes left it (its
// records, its resourceVersion), for the status; o itself when they wrote
// none. o is not modified.
func (o *observation) written(out *outcome) *observation {
	md := out.object(o.md)
	if md == o.md {
		return o
	}
	w := *o
	w.md = md
	return &w
}

var (
	errEmptySelector = errors.New("spec.selector: empty selector is invalid for a MyDeployment")
	// errTemplateNotSelected is Deployment's validation error, on the field it names.
	errTemplateNotSelected = errors.New("spec.template.metadata.labels: Invalid value: `selector` does not match template `labels`")
)

// selectorOf returns md's selector, or an error if it can never work: absent,
// empty, malformed, or not selecting the template's labels (its pods would
// be released as soon as they were created). Admission refuses all of these;
// an object it did not check (webhook off, stored before) can still have one.
func selectorOf(md *appsv1beta1.MyDeployment) (labels.Selector, error) {
	if md.Spec.Selector == nil {
		return nil, errEmptySelector
	}
	sel, err := metav1.LabelSelectorAsSelector(md.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("spec.selector: %w", err)
	}
	if sel.Empty() {
		return nil, errEmptySelector
	}
	if !sel.Matches(labels.Set(md.Spec.Template.Labels)) {
		return nil, errTemplateNotSelected
	}
	return sel, nil
}

// parseOptIn reads md's opt-in annotations; an error names each one whose
// value can never work (admission refuses them; an object it did not check
// can still have one).
func parseOptIn(md *appsv1beta1.MyDeployment) (optin.Set, error) {
	o, errs := modules.Parse(md)
	return o, errs.ToAggregate()
}

// observeSpec is the observation of md's spec at now: its selector, its
// strategy's fenceposts and its opt-ins, parsed once, or (invalid) why
// the spec can never work; obj is what the controller keeps of md.
func observeSpec(md *appsv1beta1.MyDeployment, obj *object, now time.Time) *observation {
	s := &observation{md: md, obj: obj, mem: obj.mem, now: now, records: optin.RecordsOf(md)}
	var err error
	if s.selector, err = selectorOf(md); err != nil {
		s.invalid, s.invalidReason = err, appsv1beta1.ReasonInvalidSelector
		return s
	}
	if s.maxSurge, s.maxUnavailable, err = rollout.StrategyFenceposts(md.Spec.Strategy, ptr.Deref(md.Spec.Replicas, 1)); err != nil {
		s.invalid, s.invalidReason = err, appsv1beta1.ReasonInvalidStrategy
		return s
	}
	if s.optIn, err = parseOptIn(md); err != nil {
		s.invalid, s.invalidReason = err, appsv1beta1.ReasonInvalidAnnotation
	}
	return s
}

// observer is the observe phase: what it reads (the pod index, the API
// server around the cache, the opt-in modules' parts) and where it says
// what it waits for (metrics). It writes nothing.
type observer struct {
	pods      *podwatch.Index
	apiReader client.Reader
	metrics   *metrics.Recorder
	clock     clock.PassiveClock
	parts     map[string]optin.Part
	// vetTimeout is how long a vetting may wait for the cache (the
	// freshness record's timeout).
	vetTimeout time.Duration
}

// observe reads, for one sync of md, what every later phase decides from:
// its spec parsed (observeSpec), the views of the watches it opted into,
// its pods from the cache and whether the cache has caught up with our
// earlier writes, and, once it has, the config its template references
// and the measurements of its canary step (analyze: Prometheus is asked
// only when an interval is due).
// An observation that is not settled (or is invalid) ends the sync. Its
// revisions are read by claim (readRevisions), after the orphan ones.
func (ob observer) observe(ctx context.Context, md *appsv1beta1.MyDeployment, obj *object) (*observation, error) {
	s := observeSpec(md, obj, ob.clock.Now())
	if s.invalid != nil {
		return s, nil
	}
	// What the opted-in modules watch (drain: the draining nodes; config
	// rollouts: the namespace's config watch, started on first ask).
	s.optIn = s.optIn.Observe(ob.parts)

	if err := ob.vetStart(ctx, s); err != nil {
		return s, err
	}
	if err := ob.readPods(s); err != nil {
		return s, err
	}
	if s.settled = ob.caughtUp(ctx, s); !s.settled {
		return s, nil
	}
	if !ob.vetted(ctx, s) {
		s.settled, s.retryAfter = false, requeueConflict
		return s, nil
	}
	held, err := ob.heldByNamesake(ctx, s)
	if err != nil || held {
		s.settled, s.retryAfter = false, requeueConflict
		return s, err
	}
	// What the opted-in modules read around the cache (config rollouts:
	// the config the update revision records; paused, none is recorded but
	// by a hand-over).
	// The analysis module measures the canary step under way, from the
	// measurements it kept (the object's memory), and its spec holds the
	// verdict the plan reads.
	env := optin.ReadEnv{APIReader: ob.apiReader, RecordsRevision: !md.Spec.Paused || handingOver(s.optIn) != "",
		Now: s.now, Parts: ob.parts}
	if s.optIn, err = s.optIn.Read(ctx, md, env, s.mem.modules); err != nil {
		return s, err
	}
	s.mem.modules = s.optIn.Kept()
	for m := range optin.Each[optin.Measurer](s.optIn) {
		for _, x := range m.Measured() {
			ob.metrics.AnalysisMeasured(md, x.Name, x.Result, x.Value)
		}
	}
	return s, nil
}

// caughtUp says whether the cache shows every pod write of earlier syncs
// (the freshness record's Observe of the pods read), and logs and counts
// the wait when it does not.
func (ob observer) caughtUp(ctx context.Context, s *observation) bool {
	exp := s.obj.Observe(s.pods, s.now)
	if len(exp.Leaked) > 0 {
		ob.metrics.ExpectationTimeouts(s.md, len(exp.Leaked))
		logf.FromContext(ctx).Info("expectations timed out; syncing anyway", "pods", exp.Leaked)
	}
	var waited time.Duration
	if !exp.Satisfied {
		waited = s.now.Sub(exp.Since)
	}
	ob.metrics.ExpectationsPending(s.md, waited)
	if !exp.Satisfied {
		log := logf.FromContext(ctx).V(1)
		if waited >= slowExpectations {
			log = logf.FromContext(ctx) // a wait this long is news: say it at the default level
		}
		log.Info("waiting for the cache to observe earlier pod writes", "pending", exp.Waiting, "waited", waited.Round(time.Second).String())
	}
	return exp.Satisfied
}

// readPods reads s's pods from the cache: the orphans of its namespace,
// then its own. In that order, a pod whose adoption (an earlier sync's)
// reaches the cache between the two reads is in the second; the other way
// round it was in neither, and the plan created its replacement (chaos
// suite: an orphan delete and re-create where one adoption of several
// failed). readStrays reads the strays after both (see there).
func (ob observer) readPods(s *observation) error {
	var err error
	if s.orphans, err = ob.pods.Orphans(s.md.Namespace); err != nil {
		return fmt.Errorf("listing orphan pods: %w", err)
	}
	if s.pods, err = ob.pods.Owned(s.md.UID); err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	return nil
}

// slowExpectations is how long a wait for the cache is normal; a longer one
// is logged at the default level.
const slowExpectations = 10 * time.Second

func statusEqual(a, b appsv1beta1.MyDeploymentStatus) bool {
	return apiequality.Semantic.DeepEqual(a, b)
}

// Expectations cover the pod writes of this process only. Two writes they
// cannot cover reach a sync through a pod cache that may lag behind them,
// and each made the chaos suite's controller create a pod too many (the
// stale-cache duplicates of kubernetes#129795):
//
//   - a previous manager's creates: a manager started (or made leader)
//     right after another was killed planned from a pod cache that did not
//     list the last pod the killed one had made;
//   - a deleted namesake's pods: an object deleted with --cascade=orphan and
//     created again under its name was synced while the pod cache still
//     showed one of its pods controlled by the deleted object (the garbage
//     collector had released it before the old object went, but the pod
//     watch had not said so yet), so it was neither ours nor an orphan.
//
// Vetting (vetStart) answers the first, heldByNamesake the second.

// The first sync of each object that existed when this controller started
// watching (its initial list, also what a manager that just became leader
// is handed) reads its pods from the API server (a quorum list) and waits
// until the cache lists every one it controls, as KEP-5647 has a controller
// wait for its cache to reach its last write. Objects created later need
// nothing: every write to their pods was ours, and expected, or came after
// our watch began. The mark is the object's watch notes' (MarkVet); the
// freshness record is not told: these writes are not ours.

// vetStart lists s.md's pods from the API server while the object needs
// vetting (marked by noteInitialList): vetted then waits until the cache,
// read after this list, shows each. A sync that finds one missing lists
// again the next time (a pod deleted meanwhile is then not listed). An
// error fails the sync: planning from the cache alone could create a pod
// the previous manager made. A vetting not done within the record's
// timeout is given up, as a leaked expectation is.
func (ob observer) vetStart(ctx context.Context, s *observation) error {
	need, since := s.obj.NeedsVet()
	if !need {
		return nil
	}
	if s.now.Sub(since) >= ob.vetTimeout {
		logf.FromContext(ctx).Info("the cache never listed every pod the API server lists since the controller started; syncing anyway")
		s.obj.Vetted()
		return nil
	}
	names, err := listedPods(ctx, ob.apiReader, s.md, s.selector)
	if err != nil {
		return fmt.Errorf("listing pods from the API server on the first sync since the controller started: %w", err)
	}
	s.vetListed = append(make([]string, 0, len(names)), names...) // non-nil: this sync vets
	return nil
}

// vetted reports whether the cache lists every pod vetStart listed from
// the API server (true when this sync does not vet), and marks the object
// vetted when it does.
func (ob observer) vetted(ctx context.Context, s *observation) bool {
	if s.vetListed == nil {
		return true
	}
	cached := make(map[string]bool, len(s.pods))
	for _, pod := range s.pods {
		cached[pod.Name] = true
	}
	missing := 0
	for _, name := range s.vetListed {
		if !cached[name] {
			missing++
		}
	}
	if missing > 0 {
		logf.FromContext(ctx).V(1).Info("first sync since the controller started: waiting for the cache to list the pods the API server lists",
			"missing", missing)
		return false
	}
	logf.FromContext(ctx).V(1).Info("first sync since the controller started: pods listed from the API server", "pods", len(s.vetListed))
	s.obj.Vetted()
	return true
}

// namesakeWait bounds the wait for a deleted namesake's pods, from the new
// object's creation: the garbage collector releases (or deletes) them
// within seconds; past this, the pods are another's, as they are to a
// Deployment.
const namesakeWait = 30 * time.Second

// heldByNamesake reports whether s.md, created less than namesakeWait ago,
// must wait because the pod cache still shows live pods that a deleted
// object of its name (another UID) controls and its selector matches. The
// garbage collector is releasing them (--cascade=orphan: they become
// orphans, ours to adopt) or deleting them; until the cache says which,
// planning would create their replacements beside them. It reads the
// cache's index by controller name, so it needs no memory of the deleted
// object, and holds after a manager restart too.
func (ob observer) heldByNamesake(ctx context.Context, s *observation) (bool, error) {
	if s.now.Sub(s.md.CreationTimestamp.Time) >= namesakeWait {
		return false, nil
	}
	pods, err := ob.pods.ControlledByName(client.ObjectKeyFromObject(s.md))
	if err != nil {
		return false, fmt.Errorf("listing pods: %w", err)
	}
	held := ownership.HeldByNamesake(s.md.UID, s.selector, pods)
	if len(held) == 0 {
		return false, nil
	}
	logf.FromContext(ctx).V(1).Info("waiting for the cache to show the pods of a deleted namesake released or deleted",
		"pods", held)
	return true, nil
}

// requeueUnsettled makes a MyDeployment waiting on its cache look again even
// if no event comes, so a leaked expectation is found by its timeout.
const requeueUnsettled = 30 * time.Second

// requeueConflict is when a sync whose status write met a newer object looks
// again if no event brings it back sooner.
const requeueConflict = time.Second

// handingOver names the Deployment whose pods s's object takes over (the
// adopt-from module's spec); "" when none: its sync is then no hand-over.
func handingOver(s optin.Set) string {
	from, _ := optin.HandOverOf(s)
	return from
}
