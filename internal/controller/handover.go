package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/handover"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/revision"
	"github.com/mydeployment-io/mydeployment-operator/internal/status"
)

// What a sync of a MyDeployment that takes over a Deployment's pods
// (adopt-from, internal/handover) does in place of claim, decide and act:
// it reads the Deployment, the ReplicaSets and the pods its selector
// matches from the API server, never through the cache (a watch of
// Deployments or ReplicaSets that the RBAC refuses would stall every
// controller's start, and nothing else needs them); while the Deployment
// or one of its ReplicaSets exists, it records the revision each
// ReplicaSet with pods becomes (AdoptRevisionsAnnotation); once they are
// gone, it adopts the orphaned pods into those revisions; once its cache
// lists them all, it removes the annotations and the next sync plans as
// any other. It creates and deletes no pod. No watch says when the
// Deployment goes, so it looks again every requeueHandOver.

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

// handOverSync is the sync of a MyDeployment with adopt-from set: it
// claims and writes as a sync does (its claimer and actor), and reads the
// Deployment it takes over around the cache (the claimer's apiReader).
type handOverSync struct {
	claimer
	actor
}

// handOver is the sync of a MyDeployment with adopt-from set: what it
// claimed (the revisions, the observed pods) and did, for the status. An
// error stops it before its status (out.unclaimed), and it is retried; a
// read the RBAC refuses or a hand-over that cannot go on is a condition
// (out.handOver.failure) and no error.
func (h handOverSync) handOver(ctx context.Context, o *observation) (*claimed, *outcome, error) {
	c := &claimed{cached: o.pods, pods: o.pods, mem: o.mem}
	out := &outcome{retryAfter: requeueHandOver, mem: c.mem}
	err := h.handOverStep(ctx, o, c, out)
	out.collisionCount = c.collisionCount
	if err != nil {
		out.unclaimed = true
	}
	return c, out, err
}

// handOverStep reads, records the ReplicaSets' revisions and the update
// revision, then waits, adopts or finishes, as handover.Decide says.
func (h handOverSync) handOverStep(ctx context.Context, o *observation, c *claimed, out *outcome) error {
	in, denied, err := h.readHandOver(ctx, o)
	if err != nil {
		return err
	}
	if err := h.readRevisions(ctx, o, c); err != nil {
		return err
	}
	c.collisionCount = ptr.Deref(o.md.Status.CollisionCount, 0)
	var d handover.Decision
	recorded, sameTemplate := map[string]string{}, []string(nil)
	if denied == "" {
		if d = handover.Decide(in); d.Blocked == "" {
			recorded, sameTemplate, err = h.recordReplicaSets(ctx, o.md, c, d.Record)
		}
	}
	if err == nil {
		err = h.decideFromTemplate(o, c)
	}
	if c.retryAfter > 0 {
		out.retryAfter = c.retryAfter
	}
	if err == nil && c.update != nil {
		err = h.writeHandOverRevisions(ctx, o.md, c)
	}
	if err != nil {
		return err
	}
	switch {
	case c.update == nil:
		// Held by the config opt-in before its first revision: its
		// ReplicaFailure says why (its module's ReportInput).
		out.handOver.wait = "waiting for the first revision of the pod template"
		return nil
	case denied != "":
		out.handOver = handOverState{wait: denied, failure: &status.Failure{Reason: appsv1beta1.ReasonHandOverAccessDenied, Message: denied}}
		out.retryAfter = requeueHandOverDenied
		return nil
	case d.Blocked != "":
		out.handOver = handOverState{wait: d.Blocked, failure: &status.Failure{Reason: appsv1beta1.ReasonHandOverBlocked, Message: d.Blocked}}
		return nil
	}
	for _, hash := range sameTemplate {
		recorded[hash] = c.update.Name
	}
	if in.Recorded, err = h.recordHandOver(ctx, o, out, in.Recorded, recorded); err != nil {
		return err
	}
	c.current = handOverCurrent(c, in)
	out.handOver.wait = d.Wait
	switch {
	case len(d.Adopt) > 0:
		out.handOver.wait = fmt.Sprintf("adopting %d pods of Deployment %s", len(d.Adopt), in.Name)
		return h.adoptHandedOver(ctx, o, c, d.Adopt, in.Recorded)
	case d.Done:
		out.retryAfter = 0
		return h.finishHandOver(ctx, o, out, in.Name, d.Owned)
	}
	return nil
}

// writeHandOverRevisions writes c's revision claims (writeRevisions) and
// keeps in c the update revision as written.
func (h handOverSync) writeHandOverRevisions(ctx context.Context, md *appsv1beta1.MyDeployment, c *claimed) error {
	update, err := h.writeRevisions(ctx, md, c, &c.collisionCount)
	if update != nil {
		c.revisions = withRevision(c.revisions, update)
		if c.current != nil && c.current.Name == update.Name {
			c.current = update
		}
		c.update = update
	}
	return err
}

// readHandOver reads what handover.Decide needs from the API server.
// denied, when not empty, says which read the RBAC refused.
func (h handOverSync) readHandOver(ctx context.Context, s *observation) (in handover.Input, denied string, err error) {
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

// recordReplicaSets records the template of each ReplicaSet in rss as a
// revision of md (kept in c), unless it is md's own (its hash is returned in
// sameTemplate: its pods become the update revision, named once written)
// or an owned revision records it already. It returns each hash recorded
// with its revision's name. A new revision is numbered as the ReplicaSet
// (deployment.kubernetes.io/revision), so that the update revision,
// decided after, is the newest.
func (h handOverSync) recordReplicaSets(ctx context.Context, md *appsv1beta1.MyDeployment, c *claimed, rss []*appsv1.ReplicaSet) (
	recorded map[string]string, sameTemplate []string, err error) {
	recorded = map[string]string{}
	for _, rs := range rss {
		hash := rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
		if handover.EqualIgnoreHash(&rs.Spec.Template, &md.Spec.Template) {
			sameTemplate = append(sameTemplate, hash)
			continue
		}
		number, _ := strconv.ParseInt(rs.Annotations[handover.DeploymentRevisionAnnotation], 10, 64)
		owner := revision.Owner{Object: md, GVK: appsv1beta1.GroupVersion.WithKind("MyDeployment"),
			Selector: md.Spec.Selector, Template: handover.WithoutHash(&rs.Spec.Template)}
		candidate, err := revision.New(owner, max(number, 0), c.collisionCount)
		if err != nil {
			return nil, nil, fmt.Errorf("recording ReplicaSet %s: %w", rs.Name, err)
		}
		if i := slices.IndexFunc(c.revisions, func(rev *appsv1.ControllerRevision) bool { return revision.Equal(rev, candidate) }); i >= 0 {
			recorded[hash] = c.revisions[i].Name
			continue
		}
		rev, err := h.actor.revisions.Create(ctx, candidate, &c.collisionCount)
		if err != nil {
			return nil, nil, fmt.Errorf("recording ReplicaSet %s: %w", rs.Name, err)
		}
		c.revisions = withRevision(c.revisions, rev)
		recorded[hash] = rev.Name
	}
	return recorded, sameTemplate, nil
}

// recordHandOver writes AdoptRevisionsAnnotation: was (nil: the Deployment
// seen for the first time) with added. It returns what it says now.
func (h handOverSync) recordHandOver(ctx context.Context, o *observation, out *outcome, was, added map[string]string) (map[string]string, error) {
	now := maps.Clone(was)
	if now == nil {
		now = map[string]string{}
	}
	maps.Copy(now, added)
	if was != nil && maps.Equal(was, now) {
		return was, nil
	}
	md, err := h.setAnnotations(ctx, out.object(o.md), o.obj, map[string]string{appsv1beta1.AdoptRevisionsAnnotation: optin.FormatAdoptRevisions(now)})()
	if err != nil {
		return was, err
	}
	out.md = md
	return now, nil
}

// handOverCurrent is the current revision while a hand-over runs: of the
// revisions other than the update revision, the one with the most pods (a
// rollout under way: the stable ReplicaSet's); with none, the update
// revision.
func handOverCurrent(c *claimed, in handover.Input) *appsv1.ControllerRevision {
	counts := handover.PodsPerRevision(in)
	current := c.update
	for _, rev := range c.revisions {
		if rev.Name != c.update.Name && counts[rev.Name] > 0 && (current == c.update || counts[rev.Name] >= counts[current.Name]) {
			current = rev
		}
	}
	return current
}

// adoptHandedOver adopts pods into the revisions recorded for their
// pod-template-hash, relabelled as those revisions' pods, once o.md is
// re-read around the cache (mayAdopt). A pod that changed meanwhile is
// left for the next sync, which lists the pods again.
func (h handOverSync) adoptHandedOver(ctx context.Context, o *observation, c *claimed, pods []*corev1.Pod,
	recorded map[string]string) error {
	if err := h.mayAdopt(ctx, o.md); err != nil {
		return err
	}
	var errs []error
	adopted := parallel(len(pods), func(i int) error {
		pod := pods[i]
		name := recorded[pod.Labels[appsv1.DefaultDeploymentUniqueLabelKey]]
		rev := named(c.revisions, name)
		if rev == nil {
			return fmt.Errorf("pod %s: its revision %s is gone", pod.Name, name)
		}
		_, err := h.actor.pods.Adopt(ctx, o.md, pod, rev)
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil // changed or gone since listed: the next sync looks again
		}
		return err
	}, func(err error) { errs = append(errs, err) })
	logf.FromContext(ctx).V(1).Info("adopted handed-over pods", "deployment", klog.KRef(o.md.Namespace, handingOver(o.optIn)),
		"adopted", adopted, "of", len(pods))
	return kerrors.NewAggregate(errs)
}

// finishHandOver removes the hand-over's annotations and says so: the
// cache lists every pod taken over, so the next sync plans from it.
func (h handOverSync) finishHandOver(ctx context.Context, o *observation, out *outcome, name string, pods int) error {
	md, err := h.setAnnotations(ctx, out.object(o.md), o.obj, map[string]string{appsv1beta1.AdoptFromAnnotation: "",
		appsv1beta1.AdoptRevisionsAnnotation: ""})()
	if err != nil {
		return err
	}
	out.md = md
	h.actor.recorder.Eventf(o.md, nil, corev1.EventTypeNormal, appsv1beta1.EventHandedOver, "HandOver",
		"Took over %d pods of Deployment %s, none restarted", pods, name)
	return nil
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
