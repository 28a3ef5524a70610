package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/handover"
	"github.com/mydeployment-io/mydeployment-operator/internal/revision"
)

// Eject's steps, as StopAfter names them.
const (
	stepFinalizer  = "finalizer"
	stepDelete     = "delete"
	stepOrphaned   = "orphaned"
	stepLabel      = "label"
	stepReplicaSet = "replicaset"
	stepDeployment = "deployment"
	stepRevisions  = "revisions"
)

func newEjectCommand(f *factory, o *Options) *cobra.Command {
	return newHandOverCommand(f, o, "eject md/NAME",
		"Move a MyDeployment's pods back to a Deployment of the same name and spec, restarting none",
		"Delete the MyDeployment with --cascade=orphan (a finalizer keeps it readable meanwhile), take its "+
			"revision label off its pods, create the ReplicaSet that adopts them, then the Deployment that adopts the "+
			"ReplicaSet (paused until it does), point HorizontalPodAutoscalers at the Deployment, delete the "+
			"MyDeployment's revisions and let it go. Its rollout must be complete. No pod is created, deleted or "+
			"restarted. Killed at any step, run it again: it goes on where it stopped.",
		parseName, func(ctx context.Context, t *target, st *steps) error {
			return (&ejection{target: t, st: st}).run(ctx)
		})
}

// ejection moves the target MyDeployment's pods to a Deployment.
type ejection struct {
	*target
	st *steps
}

// run does each step not done yet, reading the cluster first.
func (e *ejection) run(ctx context.Context) error {
	md, err := e.myDeployment(ctx)
	if err != nil {
		return err
	}
	if md == nil {
		d, err := e.deployment(ctx)
		if err != nil || d == nil {
			return cmpErr(err, fmt.Errorf("mydeployments.%s %q not found", appsv1beta1.GroupVersion.Group, e.name))
		}
		fmt.Fprintf(e.st.out, "%s already ejected to deployment.apps/%s\n", resourceString(e.name), e.name)
		return nil
	}
	switch {
	case md.DeletionTimestamp == nil:
		if err := e.check(ctx, md); err != nil {
			return err
		}
		if md, err = e.orphan(ctx, md); err != nil {
			return err
		}
	case !slices.Contains(md.Finalizers, appsv1beta1.EjectFinalizer):
		return fmt.Errorf("mydeployment %q is being deleted, and not by eject", e.name)
	}
	hash := revisionHash(md.Status.UpdateRevision)
	pods, err := e.orphaned(ctx, md, hash)
	if err != nil {
		return err
	}
	if err := e.relabel(ctx, md, pods); err != nil {
		return err
	}
	rs, err := e.replicaSet(ctx, md, hash, pods)
	if err != nil {
		return err
	}
	if err := e.deploymentOf(ctx, md, rs); err != nil {
		return err
	}
	if err := e.repointHPAs(ctx, e.st, myDeploymentTarget, deploymentTarget); err != nil {
		return err
	}
	if err := e.deleteRevisions(ctx, md); err != nil {
		return err
	}
	return e.release(ctx, md, rs, len(pods))
}

// revisionHash is the hash a revision's name ends with (revision.Name).
func revisionHash(name string) string {
	return name[strings.LastIndex(name, "-")+1:]
}

// check refuses a MyDeployment that cannot be ejected now: one still taking
// over a Deployment, controlled by another object, whose Deployment or
// ReplicaSet name is taken, or whose rollout is not complete (every live
// pod of the update revision, spec.replicas of them).
func (e *ejection) check(ctx context.Context, md *appsv1beta1.MyDeployment) error {
	if from, ok := md.Annotations[appsv1beta1.AdoptFromAnnotation]; ok {
		return fmt.Errorf("mydeployment %q is still taking over %s: let `kubectl mydeployment migrate` finish first", e.name, from)
	}
	if ref := metav1.GetControllerOf(md); ref != nil {
		return fmt.Errorf("mydeployment %q is controlled by %s %s: eject that instead", e.name, ref.Kind, ref.Name)
	}
	if d, err := e.deployment(ctx); err != nil || d != nil {
		return cmpErr(err, fmt.Errorf("deployment.apps %q already exists", e.name))
	}
	rs := &appsv1.ReplicaSet{}
	rsName := handover.ReplicaSetName(e.name, revisionHash(md.Status.UpdateRevision))
	if err := e.c.Get(ctx, client.ObjectKey{Namespace: e.namespace, Name: rsName}, rs); !apierrors.IsNotFound(err) {
		return cmpErr(err, fmt.Errorf("replicaset.apps %q already exists", rsName))
	}
	pods, _, err := e.selected(ctx, md.Spec.Selector)
	if err != nil {
		return err
	}
	own := controlled(pods, md.UID)
	updated := 0
	for _, p := range own {
		if p.Labels[appsv1beta1.RevisionLabel] == md.Status.UpdateRevision && md.Status.UpdateRevision != "" {
			updated++
		}
	}
	if want := int(ptr.Deref(md.Spec.Replicas, 1)); md.Status.ObservedGeneration < md.Generation || updated != len(own) || updated != want {
		return fmt.Errorf("mydeployment %q is not at rest (%d of %d pods on its update revision %q): "+
			"wait for `kubectl mydeployment rollout status %s`, then eject", e.name, updated, want, md.Status.UpdateRevision, e.name)
	}
	return nil
}

// cmpErr is err if not nil, else otherwise.
func cmpErr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

// orphan puts the eject finalizer on md and deletes it with
// --cascade=orphan: the garbage collector releases its pods and revisions
// and md stays, being deleted, until release.
func (e *ejection) orphan(ctx context.Context, md *appsv1beta1.MyDeployment) (*appsv1beta1.MyDeployment, error) {
	if !slices.Contains(md.Finalizers, appsv1beta1.EjectFinalizer) && !e.st.dryRun {
		err := e.updateFinalizers(ctx, md.UID, func(f []string) []string { return append(f, appsv1beta1.EjectFinalizer) })
		if err != nil {
			return nil, fmt.Errorf("adding the finalizer %s: %w", appsv1beta1.EjectFinalizer, err)
		}
	}
	if err := e.st.done(stepFinalizer, "%s: finalizer %s added", resourceString(e.name), appsv1beta1.EjectFinalizer); err != nil {
		return nil, err
	}
	if !e.st.dryRun {
		err := e.c.Delete(ctx, md, client.PropagationPolicy(metav1.DeletePropagationOrphan), client.Preconditions{UID: &md.UID})
		if err != nil {
			return nil, fmt.Errorf("deleting the MyDeployment: %w", err)
		}
		var err2 error
		if md, err2 = e.get(ctx); err2 != nil {
			return nil, err2
		}
	}
	return md, e.st.done(stepDelete, "%s deleted (--cascade=orphan), kept until the Deployment owns its pods", resourceString(e.name))
}

// orphaned waits until the garbage collector released md's pods, and
// returns the live pods of its update revision (hash) that no controller
// or the ReplicaSet of that hash controls.
func (e *ejection) orphaned(ctx context.Context, md *appsv1beta1.MyDeployment, hash string) ([]*corev1.Pod, error) {
	var pods []*corev1.Pod
	err := e.st.waitFor(ctx, "the garbage collector to release the MyDeployment's pods", func() (bool, error) {
		all, _, err := e.selected(ctx, md.Spec.Selector)
		if err != nil {
			return false, err
		}
		pods = nil
		for _, p := range all {
			ref := metav1.GetControllerOfNoCopy(p)
			switch {
			case p.DeletionTimestamp != nil || p.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != hash:
			case ref == nil || e.st.dryRun && ref.UID == md.UID ||
				ref.Kind == "ReplicaSet" && ref.Name == handover.ReplicaSetName(e.name, hash):
				pods = append(pods, p)
			case ref.UID == md.UID:
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return pods, e.st.done(stepOrphaned, "%d pods released by %s", len(pods), resourceString(e.name))
}

// relabel takes the revision label off pods: a Deployment's pods carry
// their ReplicaSet's pod-template-hash only, which they have.
func (e *ejection) relabel(ctx context.Context, md *appsv1beta1.MyDeployment, pods []*corev1.Pod) error {
	n := 0
	for _, p := range pods {
		if _, ok := p.Labels[appsv1beta1.RevisionLabel]; !ok {
			continue
		}
		n++
		if e.st.dryRun {
			continue
		}
		// The uid is a precondition: the pod, not one re-created under its name.
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
			"uid": p.UID, "labels": map[string]any{appsv1beta1.RevisionLabel: nil}}})
		if err := e.c.Patch(ctx, p, client.RawPatch(types.MergePatchType, patch)); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("relabelling pod %s: %w", p.Name, err)
		}
	}
	return e.st.done(stepLabel, "%d pods relabelled: %s removed", n, appsv1beta1.RevisionLabel)
}

// replicaSet creates the ReplicaSet of md's template and hash for pods,
// unless it exists, and waits until it controls them all.
func (e *ejection) replicaSet(ctx context.Context, md *appsv1beta1.MyDeployment, hash string, pods []*corev1.Pod) (*appsv1.ReplicaSet, error) {
	want := handover.ReplicaSetFor(md, hash, int32(len(pods)))
	rs := &appsv1.ReplicaSet{}
	err := e.c.Get(ctx, client.ObjectKeyFromObject(want), rs)
	switch {
	case apierrors.IsNotFound(err):
		rs = want
		var opts []client.CreateOption
		if e.st.dryRun {
			opts = append(opts, client.DryRunAll)
		}
		if err := e.c.Create(ctx, rs, opts...); err != nil {
			return nil, fmt.Errorf("creating the ReplicaSet: %w", err)
		}
	case err != nil:
		return nil, err
	}
	if !e.st.dryRun {
		err = e.st.waitFor(ctx, "the ReplicaSet to adopt the pods", func() (bool, error) {
			all, _, err := e.selected(ctx, md.Spec.Selector)
			return len(controlled(all, rs.UID)) >= len(pods), err
		})
		if err != nil {
			return nil, err
		}
	}
	return rs, e.st.done(stepReplicaSet, "replicaset.apps/%s owns %d pods", rs.Name, len(pods))
}

// deploymentOf creates md's Deployment, paused, unless it exists, waits
// until it controls rs, then sets its paused as md's.
func (e *ejection) deploymentOf(ctx context.Context, md *appsv1beta1.MyDeployment, rs *appsv1.ReplicaSet) error {
	d, err := e.deployment(ctx)
	if err != nil {
		return err
	}
	if d == nil {
		d = handover.DeploymentFor(md, ptr.Deref(rs.Spec.Replicas, 0))
		var opts []client.CreateOption
		if e.st.dryRun {
			opts = append(opts, client.DryRunAll)
		}
		if err := e.c.Create(ctx, d, opts...); err != nil {
			return fmt.Errorf("creating the Deployment: %w", err)
		}
	}
	if !e.st.dryRun {
		err := e.st.waitFor(ctx, "the Deployment to adopt the ReplicaSet", func() (bool, error) {
			cur := &appsv1.ReplicaSet{}
			if err := e.c.Get(ctx, client.ObjectKeyFromObject(rs), cur); err != nil {
				return false, err
			}
			ref := metav1.GetControllerOfNoCopy(cur)
			return ref != nil && ref.UID == d.UID, nil
		})
		if err != nil {
			return err
		}
		if d.Spec.Paused != md.Spec.Paused {
			patch := client.MergeFrom(d.DeepCopy())
			d.Spec.Paused = md.Spec.Paused
			if err := e.c.Patch(ctx, d, patch); err != nil {
				return fmt.Errorf("resuming the Deployment: %w", err)
			}
		}
	}
	return e.st.done(stepDeployment, "deployment.apps/%s owns replicaset.apps/%s", e.name, rs.Name)
}

// deleteRevisions deletes md's ControllerRevisions, which the garbage
// collector released with its pods.
func (e *ejection) deleteRevisions(ctx context.Context, md *appsv1beta1.MyDeployment) error {
	var revs appsv1.ControllerRevisionList
	sel, err := metav1.LabelSelectorAsSelector(md.Spec.Selector)
	if err != nil {
		return err
	}
	if err := e.c.List(ctx, &revs, client.InNamespace(e.namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return err
	}
	n := 0
	for i := range revs.Items {
		rev := &revs.Items[i]
		ref := metav1.GetControllerOfNoCopy(rev)
		if ref != nil && ref.UID != md.UID || rev.Name != revision.Name(md.Name, rev.Labels[revision.HashLabel]) {
			continue
		}
		n++
		if !e.st.dryRun {
			if err := e.c.Delete(ctx, rev, client.Preconditions{UID: &rev.UID}); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("deleting ControllerRevision %s: %w", rev.Name, err)
			}
		}
	}
	return e.st.done(stepRevisions, "%d ControllerRevisions of %s deleted", n, resourceString(e.name))
}

// release removes the finalizer, letting md go, then waits until the
// Deployment's rollout is complete, as `kubectl rollout status` does, and
// says what runs the pods now.
func (e *ejection) release(ctx context.Context, md *appsv1beta1.MyDeployment, rs *appsv1.ReplicaSet, pods int) error {
	if !e.st.dryRun {
		err := e.updateFinalizers(ctx, md.UID, func(f []string) []string {
			return slices.DeleteFunc(f, func(f string) bool { return f == appsv1beta1.EjectFinalizer })
		})
		if client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("removing the finalizer %s: %w", appsv1beta1.EjectFinalizer, err)
		}
		err = e.st.waitFor(ctx, "the Deployment's rollout to complete", func() (bool, error) {
			d, err := e.deployment(ctx)
			return d != nil && deploymentComplete(d), err
		})
		if err != nil {
			return err
		}
	}
	fmt.Fprintf(e.st.out, "%s gone: deployment.apps/%s runs its %d pods through replicaset.apps/%s, none restarted%s\n",
		resourceString(e.name), e.name, pods, rs.Name, dryRunMark(e.st))
	return e.warnOrphans(ctx, e.st, md.Spec.Selector)
}

// updateFinalizers sets the finalizers of the MyDeployment of uid to
// change's, read fresh and written under its resourceVersion, again on a
// conflict: its controller's status writes and the garbage collector
// change it meanwhile.
func (e *ejection) updateFinalizers(ctx context.Context, uid types.UID, change func([]string) []string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := e.get(ctx)
		if err != nil {
			return err
		}
		if cur.UID != uid {
			return fmt.Errorf("mydeployment %q was re-created meanwhile", e.name)
		}
		patch := client.MergeFromWithOptions(cur.DeepCopy(), client.MergeFromWithOptimisticLock{})
		cur.Finalizers = change(slices.Clone(cur.Finalizers))
		return e.c.Patch(ctx, cur, patch)
	})
}

// deploymentComplete is `kubectl rollout status`'s judgement of d.
func deploymentComplete(d *appsv1.Deployment) bool {
	want := ptr.Deref(d.Spec.Replicas, 1)
	s := d.Status
	return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.Replicas == want && s.AvailableReplicas == want
}
