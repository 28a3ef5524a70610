package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// What migrate and eject share: steps printed one by one (and, with
// --dry-run, only printed), waits for the controllers, the pods of a
// selector, and HorizontalPodAutoscalers re-pointed. Every step reads the
// cluster first and does only what is not done yet, so a command killed
// at any step and run again goes on where it stopped (docs/migrate.md).

// StopAfterEnv names the environment variable cmd/kubectl-mydeployment
// reads Options.StopAfter from: the e2e suite stops migrate and eject
// after each step, as if killed there, and runs them again.
const StopAfterEnv = "MYDEPLOYMENT_PLUGIN_STOP_AFTER"

// errStopped is returned by a command stopped after the step
// Options.StopAfter names, as if it had been killed there.
var errStopped = errors.New("stopped")

// steps prints what a command did, step by step.
type steps struct {
	out       io.Writer
	dryRun    bool
	stopAfter string
	poll      time.Duration
	timeout   time.Duration
}

func newSteps(o *Options, dryRun bool, timeout time.Duration) *steps {
	return &steps{out: o.Out, dryRun: dryRun, stopAfter: o.StopAfter, poll: o.PollInterval, timeout: timeout}
}

// done prints a step's line (marked "(dry run)" under --dry-run); it
// returns errStopped, wrapped with the step's name, if the command is to
// stop after step.
func (st *steps) done(step, format string, args ...any) error {
	line := fmt.Sprintf(format, args...)
	if st.dryRun {
		line += " (dry run)"
	}
	fmt.Fprintln(st.out, line)
	if step == st.stopAfter {
		return fmt.Errorf("%w after step %s (%s)", errStopped, step, StopAfterEnv)
	}
	return nil
}

// waitFor polls cond until it holds, fails or --timeout passes; what says
// what it waits for, in the error.
func (st *steps) waitFor(ctx context.Context, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(st.timeout)
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s", st.timeout, what)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(st.poll):
		}
	}
}

// deploymentNames are the spellings of the Deployment resource before "/".
var deploymentNames = []string{"deploy", "deployment", "deployments", "deployment.apps", "deployments.apps"}

// parseDeploymentName accepts NAME or TYPE/NAME for a Deployment.
func parseDeploymentName(arg string) (string, error) {
	kind, name, found := strings.Cut(arg, "/")
	if !found {
		return arg, nil
	}
	for _, n := range deploymentNames {
		if strings.EqualFold(kind, n) && name != "" {
			return name, nil
		}
	}
	return "", fmt.Errorf("%q is not a Deployment: use deployment/NAME", arg)
}

// newHandOverCommand builds migrate or eject: one argument, the name parse
// reads from it, --dry-run and --timeout, and run on its target.
func newHandOverCommand(f *factory, o *Options, use, short, long string, parse func(string) (string, error),
	run func(context.Context, *target, *steps) error) *cobra.Command {
	var dryRun bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use: use, Short: short, Long: long,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := parse(args[0])
			if err != nil {
				return err
			}
			t, err := f.targetNamed(name)
			if err != nil {
				return err
			}
			return run(cmd.Context(), t, newSteps(o, dryRun, timeout))
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "Print each step and change nothing.")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "How long to wait for the controllers at each step.")
	return cmd
}

// deployment reads the target's Deployment; nil when it does not exist.
func (t *target) deployment(ctx context.Context) (*appsv1.Deployment, error) {
	d := &appsv1.Deployment{}
	if err := t.c.Get(ctx, client.ObjectKey{Namespace: t.namespace, Name: t.name}, d); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return d, nil
}

// myDeployment reads the target's MyDeployment; nil when it does not exist.
func (t *target) myDeployment(ctx context.Context) (*appsv1beta1.MyDeployment, error) {
	md, err := t.get(ctx)
	if err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return md, nil
}

// selected lists the pods and ReplicaSets whose labels sel matches.
func (t *target) selected(ctx context.Context, sel *metav1.LabelSelector) ([]*corev1.Pod, []*appsv1.ReplicaSet, error) {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil, nil, fmt.Errorf("selector: %w", err)
	}
	opts := []client.ListOption{client.InNamespace(t.namespace), client.MatchingLabelsSelector{Selector: s}}
	var pods corev1.PodList
	if err := t.c.List(ctx, &pods, opts...); err != nil {
		return nil, nil, err
	}
	var rsList appsv1.ReplicaSetList
	if err := t.c.List(ctx, &rsList, opts...); err != nil {
		return nil, nil, err
	}
	out := make([]*corev1.Pod, 0, len(pods.Items))
	for i := range pods.Items {
		out = append(out, &pods.Items[i])
	}
	rss := make([]*appsv1.ReplicaSet, 0, len(rsList.Items))
	for i := range rsList.Items {
		rss = append(rss, &rsList.Items[i])
	}
	return out, rss, nil
}

// controlled are the live pods of pods whose controller has uid ("": no
// controller).
func controlled(pods []*corev1.Pod, uid types.UID) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		ref := metav1.GetControllerOfNoCopy(p)
		if p.DeletionTimestamp == nil && (uid == "" && ref == nil || ref != nil && ref.UID == uid) {
			out = append(out, p)
		}
	}
	return out
}

// scaleTarget is what an HPA's scaleTargetRef names.
type scaleTarget struct{ group, kind string }

var (
	deploymentTarget   = scaleTarget{appsv1.GroupName, "Deployment"}
	myDeploymentTarget = scaleTarget{appsv1beta1.GroupVersion.Group, "MyDeployment"}
)

// repointHPAs points every HorizontalPodAutoscaler of the namespace that
// targets from/name at to/name (one merge patch of scaleTargetRef each),
// printing each; under --dry-run it only prints.
func (t *target) repointHPAs(ctx context.Context, st *steps, from, to scaleTarget) error {
	var hpas autoscalingv2.HorizontalPodAutoscalerList
	if err := t.c.List(ctx, &hpas, client.InNamespace(t.namespace)); err != nil {
		return fmt.Errorf("listing HorizontalPodAutoscalers: %w", err)
	}
	apiVersion := appsv1.SchemeGroupVersion.String()
	if to == myDeploymentTarget {
		apiVersion = appsv1beta1.GroupVersion.String()
	}
	for i := range hpas.Items {
		hpa := &hpas.Items[i]
		ref := hpa.Spec.ScaleTargetRef
		if ref.Name != t.name || ref.Kind != from.kind || !strings.HasPrefix(ref.APIVersion, from.group+"/") {
			continue
		}
		if !st.dryRun {
			patch := client.MergeFrom(hpa.DeepCopy())
			hpa.Spec.ScaleTargetRef.APIVersion, hpa.Spec.ScaleTargetRef.Kind = apiVersion, to.kind
			if err := t.c.Patch(ctx, hpa, patch); err != nil {
				return fmt.Errorf("re-pointing HorizontalPodAutoscaler %s: %w", hpa.Name, err)
			}
		}
		fmt.Fprintf(st.out, "horizontalpodautoscaler.autoscaling/%s now targets %s %s%s\n", hpa.Name, to.kind, t.name, dryRunMark(st))
	}
	return nil
}

func dryRunMark(st *steps) string {
	if st.dryRun {
		return " (dry run)"
	}
	return ""
}

// warnOrphans prints the live pods sel matches that no controller owns:
// a hand-over leaves none unless a pod was not the workload's.
func (t *target) warnOrphans(ctx context.Context, st *steps, sel *metav1.LabelSelector) error {
	pods, _, err := t.selected(ctx, sel)
	if err != nil {
		return err
	}
	var names []string
	for _, p := range controlled(pods, "") {
		names = append(names, p.Name)
	}
	if len(names) > 0 {
		fmt.Fprintf(st.out, "warning: %d pods match the selector %s and have no controller: %s\n",
			len(names), metav1.FormatLabelSelector(sel), strings.Join(names, ", "))
	}
	return nil
}
