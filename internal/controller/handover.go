package controller

import (
	"context"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/handover"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/ownership"
	"github.com/mydeployment-io/mydeployment-operator/internal/revision"
	"github.com/mydeployment-io/mydeployment-operator/internal/status"
)

// What a sync of a MyDeployment that takes over a Deployment's pods
// (adopt-from, internal/handover) does in place of claim, decide and act,
// in the same phases: it reads the Deployment, the ReplicaSets and the
// pods its selector matches from the API server, never through the cache
// (a watch of Deployments or ReplicaSets that the RBAC refuses would stall
// every controller's start, and nothing else needs them), and its
// revisions; it plans every write from that (handover.Plan); act carries
// the plan out (handoveract.go). While the Deployment or one of its
// ReplicaSets exists, the plan records the revision each ReplicaSet with
// pods becomes (AdoptRevisionsAnnotation); once they are gone, it adopts
// the orphaned pods into those revisions; once the cache lists them all,
// it removes the annotations and the next sync plans as any other. It
// creates and deletes no pod. No watch says when the Deployment goes, so
// it looks again every requeueHandOver.

// requeueHandOver is how soon a MyDeployment waiting for a hand-over looks
// again; requeueHandOverDenied when the manager may not read what it needs.
const (
	requeueHandOver       = 2 * time.Second
	requeueHandOverDenied = 30 * time.Second
)

// handOverState is what a hand-over sync tells the status: what it waits
// for ("" when done), and a failure that needs a user.
type handOverState struct {
	wait    string
	failure *status.Failure
}

// handOverSync is the sync of a MyDeployment with adopt-from set: it reads
// the Deployment it takes over around the cache (the claimer's apiReader)
// and its revisions as claim does, plans (planHandOver) and writes as act
// does (its actor: actHandOver).
type handOverSync struct {
	claimer
	actor
}

// handOver is the sync of a MyDeployment with adopt-from set: it reads
// and plans (readAndPlan), then acts (actHandOver). It returns what it
// claimed (the revisions, the observed pods) and did, for the status. An
// error stops it before its status (out.unclaimed), and it is retried; a
// read the RBAC refuses or a hand-over that cannot go on is a condition
// (out.handOver.failure) and no error.
func (h handOverSync) handOver(ctx context.Context, o *observation) (*claimed, *outcome, error) {
	p, err := h.readAndPlan(ctx, o)
	if err != nil {
		mem := o.mem
		if p != nil {
			mem = p.claims.mem
		}
		return nil, &outcome{unclaimed: true, mem: mem}, err
	}
	out, err := h.actHandOver(ctx, p)
	out.unclaimed = err != nil
	return p.claims, out, err
}

// readAndPlan reads everything a hand-over sync needs (readHandOver),
// plans every write from that alone (planHandOver), and, when the plan
// adopts pods, re-reads the object around the cache (mayAdopt, as claim
// does before its adoptions): no write comes between two reads. Its plan
// comes back with a failed re-read.
func (h handOverSync) readAndPlan(ctx context.Context, o *observation) (*handOverPlan, error) {
	r, err := h.readHandOver(ctx, o)
	if err != nil {
		return nil, err
	}
	p, err := planHandOver(o, r)
	if err == nil && len(p.Adopt) > 0 {
		err = h.mayAdopt(ctx, o.md)
	}
	return p, err
}

// handOverRead is what a hand-over sync reads before it writes anything:
// the Deployment, the ReplicaSets and the pods its selector matches, read
// from the API server (in; denied, when not empty, says which read the
// RBAC refused), and the object's revisions from the cache, claimed (the
// orphans among them are adopted by act).
type handOverRead struct {
	in        handover.Input
	denied    string
	revisions ownership.Revisions
}

// readHandOver reads what a hand-over sync plans from: the API server's
// objects first, then the revisions (orphans, then ours: readRevisions).
func (h handOverSync) readHandOver(ctx context.Context, o *observation) (handOverRead, error) {
	var (
		r   handOverRead
		err error
	)
	if r.in, r.denied, err = h.readDeployment(ctx, o); err != nil {
		return r, err
	}
	c := &claimed{}
	err = h.readRevisions(ctx, o, c)
	r.revisions = c.revisionClaims
	return r, err
}

// handOverPlan is a hand-over sync's plan (handover.Plan) with what act
// needs to carry it out, so that act reads nothing else: the object, what
// the controller keeps of it (the freshness record its annotation writes
// tell), and the claims: the orphan revisions to adopt and the update
// revision's decision, with the history as the plan leaves it.
type handOverPlan struct {
	handover.Plan
	md     *appsv1beta1.MyDeployment
	obj    *object
	claims *claimed
	// retryAfter is when to look again, since no watch tells the sync
	// that the Deployment went: requeueHandOver, requeueHandOverDenied
	// after a denied read, a held revision's retry, none once finished.
	retryAfter time.Duration
}

// planHandOver plans a hand-over sync from the observation and what it
// read alone: no client, no recorder, no clock read. The ReplicaSets'
// revisions first (handover.Record), then the update revision decided
// over the history with them in it (decideFromTemplate, as claim decides
// it, but paused or not: a hand-over records the template it takes over),
// then the rest (handover.Recording.Plan). Its one error is a template
// that cannot be recorded.
func planHandOver(o *observation, r handOverRead) (*handOverPlan, error) {
	md := o.md
	c := &claimed{cached: o.pods, pods: o.pods, mem: o.mem, revisionClaims: r.revisions, revisions: r.revisions.Owned,
		collisionCount: ptr.Deref(md.Status.CollisionCount, 0)}
	owner := revision.Owner{Object: md, GVK: appsv1beta1.GroupVersion.WithKind("MyDeployment"), Selector: md.Spec.Selector}
	rec, err := handover.Record(r.in, r.denied, handover.History{Owner: owner, Revisions: c.revisions, CollisionCount: c.collisionCount})
	if err != nil {
		return nil, err
	}
	if len(rec.New) > 0 {
		c.revisions = slices.Clone(c.revisions)
		for _, n := range rec.New {
			c.revisions = append(c.revisions, n.Revision)
		}
		revision.Sort(c.revisions)
	}
	if err := decideFromTemplate(o, c); err != nil {
		return nil, err
	}
	p := &handOverPlan{Plan: rec.Plan(c.update, c.revisions), md: md, obj: o.obj, claims: c, retryAfter: requeueHandOver}
	if p.Current != nil {
		c.current = p.Current
	}
	switch {
	case p.Failure != nil && p.Failure.Reason == appsv1beta1.ReasonHandOverAccessDenied:
		p.retryAfter = requeueHandOverDenied
	case p.Finish:
		p.retryAfter = 0 // the next sync is an ordinary one
	case c.retryAfter > 0:
		p.retryAfter = c.retryAfter // a revision the config opt-in holds
	}
	return p, nil
}

// readDeployment reads what handover.Record needs from the API server.
// denied, when not empty, says which read the RBAC refused.
func (h handOverSync) readDeployment(ctx context.Context, s *observation) (in handover.Input, denied string, err error) {
	md := s.md
	cached := make(map[types.UID]bool, len(s.pods))
	for _, p := range s.pods {
		cached[p.UID] = true
	}
	from, recorded := optin.HandOverOf(s.optIn)
	in = handover.Input{Name: from, Owner: md.UID, Selector: s.selector, LabelSelector: md.Spec.Selector,
		Template: &md.Spec.Template, Recorded: recorded, Cached: func(uid types.UID) bool { return cached[uid] }}
	dep := &appsv1.Deployment{}
	switch err := h.claimer.apiReader.Get(ctx, client.ObjectKey{Namespace: md.Namespace, Name: in.Name}, dep); {
	case err == nil:
		in.Deployment = dep
	case apierrors.IsForbidden(err):
		return in, accessDenied("get deployments", md.Namespace), nil
	case !apierrors.IsNotFound(err):
		return in, "", fmt.Errorf("reading Deployment %s: %w", in.Name, err)
	}
	inSelector := []client.ListOption{client.InNamespace(md.Namespace), client.MatchingLabelsSelector{Selector: s.selector}}
	var rsList appsv1.ReplicaSetList
	if err := h.claimer.apiReader.List(ctx, &rsList, inSelector...); apierrors.IsForbidden(err) {
		return in, accessDenied("list replicasets", md.Namespace), nil
	} else if err != nil {
		return in, "", fmt.Errorf("listing ReplicaSets: %w", err)
	}
	var pods corev1.PodList
	if err := h.claimer.apiReader.List(ctx, &pods, inSelector...); err != nil {
		return in, "", fmt.Errorf("listing pods: %w", err)
	}
	for i := range rsList.Items {
		in.ReplicaSets = append(in.ReplicaSets, &rsList.Items[i])
	}
	for i := range pods.Items {
		in.Pods = append(in.Pods, &pods.Items[i])
	}
	return in, "", nil
}

// accessDenied is the ReplicaFailure message of a read the RBAC refused.
func accessDenied(verb, namespace string) string {
	return fmt.Sprintf("%s: the manager may not %s (apps) in namespace %s, so it cannot take over the Deployment's pods "+
		"(grant it get on deployments and list on replicasets, as config/rbac/role.yaml does); it creates and deletes no pod meanwhile",
		appsv1beta1.AdoptFromAnnotation, verb, namespace)
}

// handOverEvents records, once each, that a hand-over began to wait, and
// that it cannot go on (access denied, blocked).
func (r *MyDeploymentReconciler) handOverEvents(md *appsv1beta1.MyDeployment, st status.Result) {
	if st.HandOverBegan {
		c := status.Get(&st.Status, appsv1beta1.ConditionProgressing)
		r.Recorder.Eventf(md, nil, corev1.EventTypeNormal, appsv1beta1.ReasonWaitingForHandOver, "HandOver", "%s", c.Message)
	}
	now := status.Get(&st.Status, appsv1beta1.ConditionReplicaFailure)
	if now == nil || now.Reason != appsv1beta1.ReasonHandOverAccessDenied && now.Reason != appsv1beta1.ReasonHandOverBlocked {
		return
	}
	if before := status.Get(&md.Status, appsv1beta1.ConditionReplicaFailure); before != nil && before.Reason == now.Reason {
		return
	}
	r.Recorder.Eventf(md, nil, corev1.EventTypeWarning, now.Reason, "HandOver", "%s", now.Message)
}
