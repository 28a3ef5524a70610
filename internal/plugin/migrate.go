package plugin

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/handover"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/modules"
	"github.com/mydeployment-io/mydeployment-operator/internal/status"
)

// Migrate's steps, as StopAfter names them.
const (
	stepCreate            = "create"
	stepPause             = "pause"
	stepRecord            = "record"
	stepDeleteDeployment  = "delete-deployment"
	stepDeleteReplicaSets = "delete-replicasets"
	stepHandOver          = "handover"
)

func newMigrateCommand(f *factory, o *Options) *cobra.Command {
	return newHandOverCommand(f, o, "migrate deployment/NAME",
		"Move a running Deployment's pods to a MyDeployment of the same name and spec, restarting none",
		"Create a MyDeployment of the Deployment's name and spec that takes over its pods "+
			"(apps.mydeployment.io/adopt-from), pause the Deployment, wait until the controller recorded the revision "+
			"of each ReplicaSet with pods, delete the Deployment and its ReplicaSets with --cascade=orphan, wait until "+
			"the controller adopted the pods, and point HorizontalPodAutoscalers at the MyDeployment. No pod is "+
			"created, deleted or restarted. Killed at any step, run it again: it goes on where it stopped.",
		parseDeploymentName, func(ctx context.Context, t *target, st *steps) error {
			return (&migration{target: t, st: st}).run(ctx)
		})
}

// migration moves the target Deployment's pods to a MyDeployment.
type migration struct {
	*target
	st *steps
}

// run does each step not done yet, reading the cluster first.
func (m *migration) run(ctx context.Context) error {
	d, err := m.deployment(ctx)
	if err != nil {
		return err
	}
	md, err := m.myDeployment(ctx)
	if err != nil {
		return err
	}
	switch {
	case d == nil && md == nil:
		return fmt.Errorf("deployments.apps %q not found", m.name)
	case md != nil && md.Annotations[appsv1beta1.AdoptFromAnnotation] != optin.AdoptFrom(m.name):
		if d != nil && d.DeletionTimestamp == nil {
			return fmt.Errorf("mydeployment %q already exists and does not take over deployment %q", m.name, m.name)
		}
		// The hand-over is done (a run killed after it), or was never ours.
		if err := m.st.done(stepHandOver, "deployment.apps/%s already migrated to %s", m.name, resourceString(m.name)); err != nil {
			return err
		}
		return m.finish(ctx, md)
	case md == nil && metav1.GetControllerOf(d) != nil:
		ref := metav1.GetControllerOf(d)
		return fmt.Errorf("deployment %q is controlled by %s %s: migrating it would fight its controller", m.name, ref.Kind, ref.Name)
	}
	if md, err = m.create(ctx, d, md); err != nil {
		return err
	}
	if d != nil && d.DeletionTimestamp == nil {
		if err := m.pause(ctx, d); err != nil {
			return err
		}
		if err := m.record(ctx, md); err != nil {
			return err
		}
		if err := m.deleteDeployment(ctx, d); err != nil {
			return err
		}
	}
	if err := m.deleteReplicaSets(ctx, md); err != nil {
		return err
	}
	if md, err = m.handOver(ctx, md); err != nil {
		return err
	}
	return m.finish(ctx, md)
}

// create makes the MyDeployment of d unless md exists (a server-side dry
// run under --dry-run).
func (m *migration) create(ctx context.Context, d *appsv1.Deployment, md *appsv1beta1.MyDeployment) (*appsv1beta1.MyDeployment, error) {
	if md != nil {
		return md, nil
	}
	md = handover.FromDeployment(d)
	var opts []client.CreateOption
	if m.st.dryRun {
		opts = append(opts, client.DryRunAll)
	}
	if err := m.c.Create(ctx, md, opts...); err != nil {
		return nil, fmt.Errorf("creating the MyDeployment: %w", err)
	}
	return md, m.st.done(stepCreate, "%s created, taking over deployment.apps/%s (%s: %s)", resourceString(m.name), m.name,
		appsv1beta1.AdoptFromAnnotation, optin.AdoptFrom(m.name))
}

// pause pauses d: it makes no new ReplicaSet and moves no pod between them
// while the revisions are recorded.
func (m *migration) pause(ctx context.Context, d *appsv1.Deployment) error {
	if !d.Spec.Paused && !m.st.dryRun {
		// The uid is a precondition: the Deployment read, not one re-created under its name.
		patch := fmt.Appendf(nil, `{"metadata":{"uid":%q},"spec":{"paused":true}}`, d.UID)
		if err := m.c.Patch(ctx, d, client.RawPatch(types.MergePatchType, patch)); err != nil {
			return fmt.Errorf("pausing the Deployment: %w", err)
		}
	}
	return m.st.done(stepPause, "deployment.apps/%s paused", m.name)
}

// record waits until the controller recorded the revision of each of the
// Deployment's ReplicaSets with pods (AdoptRevisionsAnnotation), and
// prints them; under --dry-run it says what they would be.
func (m *migration) record(ctx context.Context, md *appsv1beta1.MyDeployment) error {
	var in handOverInput
	err := m.st.waitFor(ctx, "the MyDeployment controller to record the revisions of the Deployment's ReplicaSets (is the operator running?)",
		func() (bool, error) {
			var err error
			if in, err = m.handOverInput(ctx, md); err != nil || m.st.dryRun {
				return true, err
			}
			d := handover.Decide(in.Input)
			if d.Blocked != "" {
				return false, errors.New(d.Blocked)
			}
			return in.Recorded != nil && len(d.Record) == 0, m.failed(in.md)
		})
	if err != nil {
		return err
	}
	names := make([]string, 0, len(in.ReplicaSets))
	for _, rs := range in.ReplicaSets {
		if !handover.IsReplicaSetOf(m.name, rs) {
			continue
		}
		rev, ok := in.Recorded[rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]]
		switch {
		case ok:
			names = append(names, fmt.Sprintf("replicaset.apps/%s: its pods become revision %s", rs.Name, rev))
		case m.st.dryRun && handover.EqualIgnoreHash(&rs.Spec.Template, &md.Spec.Template):
			names = append(names, fmt.Sprintf("replicaset.apps/%s: its pods become the MyDeployment's update revision", rs.Name))
		case m.st.dryRun:
			names = append(names, fmt.Sprintf("replicaset.apps/%s: its pods become an older revision", rs.Name))
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(m.st.out, "%s%s\n", n, dryRunMark(m.st))
	}
	return m.st.done(stepRecord, "revisions recorded for %d ReplicaSets with pods", len(names))
}

// handOverInput is handover.Input as the plugin reads it: the
// MyDeployment as it is now, with its Deployment, ReplicaSets and pods.
type handOverInput struct {
	handover.Input
	md *appsv1beta1.MyDeployment
}

func (m *migration) handOverInput(ctx context.Context, md *appsv1beta1.MyDeployment) (handOverInput, error) {
	in := handOverInput{md: md}
	if !m.st.dryRun {
		var err error
		if in.md, err = m.get(ctx); err != nil {
			return in, err
		}
	}
	sel, err := metav1.LabelSelectorAsSelector(in.md.Spec.Selector)
	if err != nil {
		return in, fmt.Errorf("selector: %w", err)
	}
	o, _ := modules.Parse(in.md)
	_, recorded := optin.HandOverOf(o)
	in.Input = handover.Input{Name: m.name, Owner: in.md.UID, Selector: sel, LabelSelector: in.md.Spec.Selector,
		Template: &in.md.Spec.Template, Recorded: recorded}
	if in.Deployment, err = m.deployment(ctx); err != nil {
		return in, err
	}
	in.Pods, in.ReplicaSets, err = m.selected(ctx, in.md.Spec.Selector)
	return in, err
}

// failed is the MyDeployment's hand-over failure (access denied,
// blocked) as an error: waiting on would not help.
func (m *migration) failed(md *appsv1beta1.MyDeployment) error {
	c := status.Get(&md.Status, appsv1beta1.ConditionReplicaFailure)
	if c != nil && (c.Reason == appsv1beta1.ReasonHandOverAccessDenied || c.Reason == appsv1beta1.ReasonHandOverBlocked) {
		return fmt.Errorf("the MyDeployment says %s: %s", c.Reason, c.Message)
	}
	return nil
}

// deleteDeployment deletes d with --cascade=orphan: its ReplicaSets and
// pods stay.
func (m *migration) deleteDeployment(ctx context.Context, d *appsv1.Deployment) error {
	if !m.st.dryRun {
		err := m.c.Delete(ctx, d, client.PropagationPolicy(metav1.DeletePropagationOrphan), client.Preconditions{UID: &d.UID})
		if client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting the Deployment: %w", err)
		}
	}
	return m.st.done(stepDeleteDeployment, "deployment.apps/%s deleted (--cascade=orphan)", m.name)
}

// deleteReplicaSets deletes each of the Deployment's ReplicaSets with
// --cascade=orphan: being deleted, a ReplicaSet makes no pod; its pods stay.
func (m *migration) deleteReplicaSets(ctx context.Context, md *appsv1beta1.MyDeployment) error {
	_, rss, err := m.selected(ctx, md.Spec.Selector)
	if err != nil {
		return err
	}
	n := 0
	for _, rs := range rss {
		if !handover.IsReplicaSetOf(m.name, rs) || rs.DeletionTimestamp != nil {
			continue
		}
		if !m.st.dryRun {
			err := m.c.Delete(ctx, rs, client.PropagationPolicy(metav1.DeletePropagationOrphan), client.Preconditions{UID: &rs.UID})
			if client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("deleting ReplicaSet %s: %w", rs.Name, err)
			}
		}
		fmt.Fprintf(m.st.out, "replicaset.apps/%s deleted (--cascade=orphan)%s\n", rs.Name, dryRunMark(m.st))
		n++
	}
	return m.st.done(stepDeleteReplicaSets, "%d ReplicaSets deleted", n)
}

// handOver waits until the controller adopted the pods and removed
// adopt-from, and prints how many it took over.
func (m *migration) handOver(ctx context.Context, md *appsv1beta1.MyDeployment) (*appsv1beta1.MyDeployment, error) {
	if m.st.dryRun {
		pods, _, err := m.selected(ctx, md.Spec.Selector)
		if err != nil {
			return nil, err
		}
		return md, m.st.done(stepHandOver, "%d pods handed over to %s, none restarted", len(pods), resourceString(m.name))
	}
	err := m.st.waitFor(ctx, "the MyDeployment controller to adopt the pods", func() (bool, error) {
		var err error
		if md, err = m.get(ctx); err != nil {
			return false, err
		}
		_, waiting := md.Annotations[appsv1beta1.AdoptFromAnnotation]
		return !waiting, m.failed(md)
	})
	if err != nil {
		return nil, err
	}
	pods, _, err := m.selected(ctx, md.Spec.Selector)
	if err != nil {
		return nil, err
	}
	return md, m.st.done(stepHandOver, "%d pods handed over to %s, none restarted", len(controlled(pods, md.UID)), resourceString(m.name))
}

// finish points the HorizontalPodAutoscalers that targeted the Deployment
// at the MyDeployment and warns of pods left without a controller.
func (m *migration) finish(ctx context.Context, md *appsv1beta1.MyDeployment) error {
	if err := m.repointHPAs(ctx, m.st, deploymentTarget, myDeploymentTarget); err != nil {
		return err
	}
	return m.warnOrphans(ctx, m.st, md.Spec.Selector)
}
