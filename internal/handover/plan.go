package handover

import (
	"fmt"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/revision"
	"github.com/mydeployment-io/mydeployment-operator/internal/status"
)

// A hand-over sync plans from what it read, before it writes anything, in
// two halves: Record (what the Deployment's ReplicaSets become), then,
// once the controller has decided the update revision over the history
// with those revisions in it (numbered as their ReplicaSets, so the
// update revision is the newest), Recording.Plan. The controller's act
// carries the Plan out in its order:
//
//  1. the ReplicaSets' revisions (Plan.Revisions), then the update
//     revision;
//  2. the record (Plan.Record), naming only revisions written in step 1
//     or by an earlier sync;
//  3. the pods adopted (Plan.Adopt), into revisions a record written by
//     an earlier sync names;
//  4. or the annotations removed (Plan.Finish).
//
// A sync that stops after any write is resumed by the next one from what
// it reads: a revision it made is its own and equal to the one it would
// make, so it is recorded rather than made again; a record is written
// only once the revisions it names exist, and the plugin deletes the
// ReplicaSets only once the record names each with pods; a pod adopted is
// the MyDeployment's and is not adopted again; the annotations go only
// once the cache lists every pod taken over, so the next ordinary sync
// plans from all of them.

// History is the MyDeployment's revision history, which a hand-over
// records the Deployment's ReplicaSets in.
type History struct {
	// Owner is the MyDeployment (Object, GVK, Selector); each revision of
	// a ReplicaSet records that ReplicaSet's template without its
	// pod-template-hash.
	Owner revision.Owner
	// Revisions are the MyDeployment's, as read (the orphans it adopts
	// among them).
	Revisions []*appsv1.ControllerRevision
	// CollisionCount names a new revision as revision.New does. A name
	// found taken when it is created is act's to resolve: the revision is
	// created under the next count, and what names it follows.
	CollisionCount int32
}

// NewRevision is a revision a plan creates: the template of one of the
// Deployment's ReplicaSets, recorded while the ReplicaSet exists.
type NewRevision struct {
	ReplicaSet string
	Revision   *appsv1.ControllerRevision
}

// Target is the revision the pods of one pod-template-hash become, in a
// record a plan writes: one an earlier record names (Name), or a revision
// of the plan (Revision: new, the update revision, or one the MyDeployment
// has), named as act writes it.
type Target struct {
	Name     string
	Revision *appsv1.ControllerRevision
}

// name is t's revision's name as planned.
func (t Target) name() string {
	if t.Revision != nil {
		return t.Revision.Name
	}
	return t.Name
}

// Adoption is an orphan to adopt into the revision the record names for
// its pod-template-hash.
type Adoption struct {
	Pod      *corev1.Pod
	Revision string
}

// Recording is the first half of a hand-over's plan: Decide's decision
// and the revisions the Deployment's ReplicaSets with pods become.
type Recording struct {
	// New are the revisions to create, in the order Decide lists their
	// ReplicaSets; none when a read was denied or the hand-over is
	// blocked.
	New []NewRevision

	in       Input
	denied   string
	decision Decision
	// recorded are the hashes of the ReplicaSets of another template than
	// the MyDeployment's, each with its revision (new, or one it has);
	// sameTemplate those whose pods become the update revision.
	recorded     map[string]*appsv1.ControllerRevision
	sameTemplate []string
}

// Record is what a sync records of in: nothing when denied says which read
// the RBAC refused, or when the hand-over is blocked; otherwise, for each
// ReplicaSet with pods not recorded yet (Decision.Record), the update
// revision if its template is the MyDeployment's (ignoring
// pod-template-hash), else a revision of its template numbered as the
// ReplicaSet (deployment.kubernetes.io/revision): one of h's that records
// it already, or a new one. Its error is a template that cannot be
// recorded.
func Record(in Input, denied string, h History) (Recording, error) {
	r := Recording{in: in, denied: denied, recorded: map[string]*appsv1.ControllerRevision{}}
	if denied != "" {
		return r, nil
	}
	if r.decision = Decide(in); r.decision.Blocked != "" {
		return r, nil
	}
	revs := slices.Clone(h.Revisions)
	for _, rs := range r.decision.Record {
		hash := rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
		if EqualIgnoreHash(&rs.Spec.Template, in.Template) {
			r.sameTemplate = append(r.sameTemplate, hash)
			continue
		}
		number, _ := strconv.ParseInt(rs.Annotations[DeploymentRevisionAnnotation], 10, 64)
		owner := h.Owner
		owner.Template, owner.Data = WithoutHash(&rs.Spec.Template), nil
		candidate, err := revision.New(owner, max(number, 0), h.CollisionCount)
		if err != nil {
			return r, fmt.Errorf("recording ReplicaSet %s: %w", rs.Name, err)
		}
		if i := slices.IndexFunc(revs, func(rev *appsv1.ControllerRevision) bool { return revision.Equal(rev, candidate) }); i >= 0 {
			r.recorded[hash] = revs[i]
			continue
		}
		r.New = append(r.New, NewRevision{ReplicaSet: rs.Name, Revision: candidate})
		revs = append(revs, candidate)
		r.recorded[hash] = candidate
	}
	return r, nil
}

// Plan is one hand-over sync: its writes, in the order act makes them
// (see above), and what its status says.
type Plan struct {
	// From is the Deployment taken over.
	From string
	// Revisions are the ReplicaSets' revisions to create.
	Revisions []NewRevision
	// Record is the hand-over's record to write (AdoptRevisionsAnnotation:
	// each pod-template-hash to its revision); nil: it stays as it is.
	Record map[string]Target
	// Adopt are the orphans to adopt.
	Adopt []Adoption
	// Finish: the annotations go, and the HandedOver event says that
	// Owned pods were taken over.
	Finish bool
	Owned  int
	// Current is the current revision while the hand-over runs; nil
	// leaves the update revision's decision's.
	Current *appsv1.ControllerRevision
	// Wait is what the hand-over waits for ("" when done); Failure what
	// needs a user (HandOverAccessDenied, HandOverBlocked).
	Wait    string
	Failure *status.Failure
}

// Plan is r's plan once the update revision is decided: update (nil: held
// before the first revision, by the config opt-in) among revisions, the
// MyDeployment's history with r.New in it, sorted oldest first. Held,
// denied or blocked, it records nothing and says why; otherwise it
// records what r found (the first time: also the Deployment seen), and
// adopts the orphans Decide names, or finishes once nothing is left and
// the cache lists every pod taken over.
func (r Recording) Plan(update *appsv1.ControllerRevision, revisions []*appsv1.ControllerRevision) Plan {
	p, d := Plan{From: r.in.Name, Revisions: r.New, Owned: r.decision.Owned}, r.decision
	switch {
	case update == nil:
		// Held by the config opt-in before its first revision: its
		// ReplicaFailure says why (the module's status).
		p.Wait = "waiting for the first revision of the pod template"
		return p
	case r.denied != "":
		p.Wait, p.Failure = r.denied, &status.Failure{Reason: appsv1beta1.ReasonHandOverAccessDenied, Message: r.denied}
		return p
	case d.Blocked != "":
		p.Wait, p.Failure = d.Blocked, &status.Failure{Reason: appsv1beta1.ReasonHandOverBlocked, Message: d.Blocked}
		return p
	}
	record := r.record(update)
	if r.in.Recorded == nil || len(r.recorded)+len(r.sameTemplate) > 0 {
		p.Record = record
	}
	p.Current = current(r.in, record, update, revisions)
	p.Wait = d.Wait
	switch {
	case len(d.Adopt) > 0:
		p.Wait = fmt.Sprintf("adopting %d pods of Deployment %s", len(d.Adopt), r.in.Name)
		for _, pod := range d.Adopt {
			p.Adopt = append(p.Adopt, Adoption{Pod: pod, Revision: r.in.Recorded[pod.Labels[appsv1.DefaultDeploymentUniqueLabelKey]]})
		}
	case d.Done:
		p.Finish = true
	}
	return p
}

// record is the record as r leaves it: the one read, with the hashes r
// found (the update revision's those of its template).
func (r Recording) record(update *appsv1.ControllerRevision) map[string]Target {
	record := make(map[string]Target, len(r.in.Recorded)+len(r.recorded)+len(r.sameTemplate))
	for hash, name := range r.in.Recorded {
		record[hash] = Target{Name: name}
	}
	for hash, rev := range r.recorded {
		record[hash] = Target{Revision: rev}
	}
	for _, hash := range r.sameTemplate {
		record[hash] = Target{Revision: update}
	}
	return record
}

// current is the current revision while a hand-over runs: of revisions
// (oldest first) other than update, the one with the most pods, by record
// (a rollout under way: the stable ReplicaSet's; a tie, the newer); with
// none, update.
func current(in Input, record map[string]Target, update *appsv1.ControllerRevision,
	revisions []*appsv1.ControllerRevision) *appsv1.ControllerRevision {
	in.Recorded = make(map[string]string, len(record))
	for hash, t := range record {
		in.Recorded[hash] = t.name()
	}
	counts := PodsPerRevision(in)
	cur := update
	for _, rev := range revisions {
		if rev.Name != update.Name && counts[rev.Name] > 0 && (cur == update || counts[rev.Name] >= counts[cur.Name]) {
			cur = rev
		}
	}
	return cur
}
