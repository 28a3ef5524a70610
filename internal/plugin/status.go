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
	"strconv"
	"time"

	"github.com/spf13/cobra"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// ErrTimeout is returned by rollout status when --timeout passes first
// (kubectl's wait.ErrWaitTimeout text).
var ErrTimeout = errors.New("timed out waiting for the condition")

// rolloutStatus is kubectl's DeploymentStatusViewer.Status for a
// MyDeployment: the message to print, whether the rollout is done, or an
// error when it cannot finish (progress deadline exceeded, wrong revision).
func rolloutStatus(md *appsv1beta1.MyDeployment, wantRevision int64) (string, bool, error) {
	if wantRevision > 0 {
		rev, err := strconv.ParseInt(md.Annotations[appsv1beta1.RevisionAnnotation], 10, 64)
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
			"use --watch=false to print the status once. It exits non-zero when the progress deadline is exceeded or --timeout passes.",
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
// the rollout is done or fails, or, without watch, once. After deadline (zero:
// none) it returns ErrTimeout. Reads use ctx, not the deadline, so a slow or
// rate-limited read near the deadline is not mistaken for an API error.
func (t *target) waitRollout(ctx context.Context, o *Options, revision int64, watch bool, deadline time.Time) error {
	last := ""
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
			fmt.Fprint(o.Out, msg)
			last = msg
		}
		if done || !watch {
			return nil
		}
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
