/*
Copyright 2026.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/cli-runtime/pkg/printers"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/modules"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/partition"
)

// ErrTimeout is returned by rollout status when --timeout passes first
// (kubectl's wait.ErrWaitTimeout text).
var ErrTimeout = errors.New("timed out waiting for the condition")

// rolloutStatus is kubectl's DeploymentStatusViewer.Status for a
// MyDeployment: the message to print, whether the rollout is done, or an
// error when it cannot finish (progress deadline exceeded, wrong revision).
func rolloutStatus(md *appsv1beta1.MyDeployment, wantRevision int64) (string, bool, error) {
	if wantRevision > 0 {
		rev, err := strconv.ParseInt(optin.RecordsOf(md).RevisionText, 10, 64)
		if err != nil {
			return "", false, fmt.Errorf("cannot get the revision of mydeployment %q: %v", md.Name, err)
		}
		if rev != wantRevision {
			return "", false, fmt.Errorf("desired revision (%d) is different from the running revision (%d)", wantRevision, rev)
		}
	}
	if md.Generation > md.Status.ObservedGeneration {
		return "Waiting for deployment spec update to be observed...\n", false, nil
	}
	st := md.Status
	for _, c := range st.Conditions {
		if c.Type == appsv1beta1.ConditionProgressing && c.Reason == appsv1beta1.ReasonProgressDeadlineExceeded {
			return "", false, fmt.Errorf("mydeployment %q exceeded its progress deadline", md.Name)
		}
		if c.Type == appsv1beta1.ConditionProgressing && c.Reason == appsv1beta1.ReasonRolloutAborted {
			return "", false, fmt.Errorf("mydeployment %q rollout aborted: %s (run rollout retry to start it over)", md.Name, c.Message)
		}
		if c.Type == appsv1beta1.ConditionProgressing && c.Status == corev1.ConditionFalse {
			return "", false, fmt.Errorf("mydeployment %q rollout held: %s: %s", md.Name, c.Reason, c.Message)
		}
		if c.Type == appsv1beta1.ConditionProgressing && moduleWaits(c.Reason) {
			return fmt.Sprintf("Waiting for mydeployment %q rollout to finish: %s...\n", md.Name, c.Message), false, nil
		}
	}
	if msg, done, ok := canaryStatus(md); ok {
		return msg, done, nil
	}
	if msg, done, ok := partitionedStatus(md); ok {
		return msg, done, nil
	}
	if md.Spec.Replicas != nil && st.UpdatedReplicas < *md.Spec.Replicas {
		return fmt.Sprintf("Waiting for mydeployment %q rollout to finish: %d out of %d new replicas have been updated...\n",
			md.Name, st.UpdatedReplicas, *md.Spec.Replicas), false, nil
	}
	if st.Replicas > st.UpdatedReplicas {
		return fmt.Sprintf("Waiting for mydeployment %q rollout to finish: %d old replicas are pending termination...\n",
			md.Name, st.Replicas-st.UpdatedReplicas), false, nil
	}
	if st.AvailableReplicas < st.UpdatedReplicas {
		return fmt.Sprintf("Waiting for mydeployment %q rollout to finish: %d of %d updated replicas are available...\n",
			md.Name, st.AvailableReplicas, st.UpdatedReplicas), false, nil
	}
	return fmt.Sprintf("mydeployment %q successfully rolled out\n", md.Name), true, nil
}

// partitionedStatus is rolloutStatus for a rollout that a partition holds
// (optin's PartitionAnnotation), once the spec is observed and the deadline
// not exceeded: done, as kubectl says of a partitioned StatefulSet, when the
// controller says the partition is reached (Progressing=True,
// PartitionAvailable); before that, waiting for replicas-partition updated
// pods, not replicas. ok is false when no partition holds a rollout (no or
// an invalid annotation, a partition of 0, no rollout under way): the
// Deployment messages apply.
func partitionedStatus(md *appsv1beta1.MyDeployment) (msg string, done, ok bool) {
	st := md.Status
	replicas := desired(md)
	if heldAtPartition(md) {
		return fmt.Sprintf("partitioned roll out complete: %d of %d pods updated\n", st.UpdatedReplicas, replicas), true, true
	}
	held := partitionPods(md)
	if held == 0 || st.CurrentRevision == "" || st.CurrentRevision == st.UpdateRevision {
		return "", false, false
	}
	want := replicas - held
	waiting := func(format string, a ...any) string {
		return fmt.Sprintf("Waiting for mydeployment %q partitioned roll out to finish: ", md.Name) + fmt.Sprintf(format, a...) + "\n"
	}
	switch old := st.Replicas - st.UpdatedReplicas; {
	case st.UpdatedReplicas < want:
		msg = waiting("%d out of %d new replicas have been updated...", st.UpdatedReplicas, want)
	case st.UpdatedReplicas > want:
		msg = waiting("%d updated replicas are pending return to the current revision...", st.UpdatedReplicas-want)
	case old > held:
		msg = waiting("%d old replicas are pending termination...", old-held)
	case st.AvailableReplicas < replicas:
		msg = waiting("%d of %d replicas are available...", st.AvailableReplicas, replicas)
	default:
		msg = waiting("%d of %d pods updated, %d to be held by the partition...", st.UpdatedReplicas, replicas, held)
	}
	return msg, false, true
}

// heldAtPartition reports whether md's rollout is held at the partition its
// annotation asks for now: the controller says it is held (Progressing=True,
// PartitionAvailable) and the updated pods are replicas-partition. Changing
// the annotation bumps no generation, so the count is what tells a hold at
// the previous value (just after 'rollout promote' or a lowered partition)
// from one at this value.
func heldAtPartition(md *appsv1beta1.MyDeployment) bool {
	held := partitionPods(md)
	if held == 0 || md.Status.UpdatedReplicas != desired(md)-held {
		return false
	}
	for _, c := range md.Status.Conditions {
		if c.Type == appsv1beta1.ConditionProgressing {
			return c.Status == corev1.ConditionTrue && c.Reason == appsv1beta1.ReasonPartitionAvailable
		}
	}
	return false
}

// partitionPods is how many pods md's partition annotation holds on the
// current revision; 0 without one or with a value optin refuses.
func partitionPods(md *appsv1beta1.MyDeployment) int32 {
	o, _ := modules.Parse(md)
	return partition.Of(o).Pods(desired(md))
}

func newStatusCommand(f *factory, o *Options) *cobra.Command {
	var (
		timeout  time.Duration
		watch    bool
		revision int64
	)
	cmd := &cobra.Command{
		Use:   "status NAME",
		Short: "Show the status of the rollout",
		Long: "Show the status of the rollout.\n\nBy default 'rollout status' watches the rollout until it finishes; " +
			"use --watch=false to print the status once. It exits non-zero when the progress deadline is exceeded, the rollout was aborted " +
			"(on-failure Abort; 'rollout retry' starts it over), or --timeout passes. " +
			"A rollout held by a partition ('rollout partition') is finished once the partition is reached: " +
			"it says \"partitioned roll out complete\" and exits 0. A canary rollout (canary steps) says the step it is at, " +
			"and is finished while paused until 'rollout promote'. While it waits, a progress line shows the updated, ready and " +
			"available pods against spec.replicas.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if revision < 0 {
				return fmt.Errorf("revision must be a positive integer: %v", revision)
			}
			t, err := f.target(args[0])
			if err != nil {
				return err
			}
			var deadline time.Time
			if timeout > 0 {
				deadline = time.Now().Add(timeout)
			}
			return t.waitRollout(cmd.Context(), o, revision, watch, deadline)
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 0,
		"The length of time to wait before ending watch, zero means never. Any other values should contain a corresponding time unit (e.g. 1s, 2m, 3h).")
	cmd.Flags().BoolVarP(&watch, "watch", "w", true, "Watch the status of the rollout until it's done.")
	cmd.Flags().Int64Var(&revision, "revision", 0,
		"Pin to a specific revision for showing its status. Defaults to 0 (last revision).")
	return cmd
}

// waitRollout polls the MyDeployment, printing each new status message, until
// the rollout is done or fails, or, without watch, once. While it waits it
// shows a progress line (progressLine) under the message, whenever the
// counts change: rewritten in place on a terminal, one line per change
// otherwise. After deadline (zero: none) it returns ErrTimeout. Reads use
// ctx, not the deadline, so a slow or rate-limited read near the deadline
// is not mistaken for an API error.
func (t *target) waitRollout(ctx context.Context, o *Options, revision int64, watch bool, deadline time.Time) error {
	last := ""
	progress := &progressPrinter{out: o.Out, terminal: printers.IsTerminal(o.Out)}
	defer progress.end()
	for {
		md, err := t.get(ctx)
		if err != nil {
			return err
		}
		msg, done, err := rolloutStatus(md, revision)
		if err != nil {
			return err
		}
		if msg != last {
			progress.end()
			fmt.Fprint(o.Out, msg)
			last = msg
		}
		if done || !watch {
			return nil
		}
		progress.show(progressLine(md))
		wait := o.PollInterval
		if !deadline.IsZero() {
			remaining := time.Until(deadline)
			if remaining <= 0 {
				return ErrTimeout
			}
			wait = min(wait, remaining)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

// progressLine is where md's pods are against spec.replicas.
func progressLine(md *appsv1beta1.MyDeployment) string {
	st, n := md.Status, desired(md)
	return fmt.Sprintf("  %d/%d updated, %d/%d ready, %d/%d available", st.UpdatedReplicas, n, st.ReadyReplicas, n, st.AvailableReplicas, n)
}

// progressPrinter shows a progress line below the messages: on a terminal
// one line rewritten in place (and ended before the next message), else a
// line each time it changes.
type progressPrinter struct {
	out      io.Writer
	terminal bool
	last     string
	// open: a line is on the terminal without its newline.
	open bool
}

func (p *progressPrinter) show(line string) {
	if line == p.last {
		return
	}
	p.last = line
	if !p.terminal {
		fmt.Fprintln(p.out, line)
		return
	}
	fmt.Fprint(p.out, "\r\033[K"+line)
	p.open = true
}

// end clears the line in place on a terminal, so a message replaces it.
func (p *progressPrinter) end() {
	if p.open {
		fmt.Fprint(p.out, "\r\033[K")
		p.open = false
	}
	p.last = ""
}
