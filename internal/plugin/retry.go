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
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/status"
)

func newRetryCommand(f *factory, o *Options) *cobra.Command {
	return &cobra.Command{
		Use:   "retry NAME",
		Short: "Start an aborted rollout over",
		Long: "Start an aborted rollout over (on-failure Abort): the same template rolls out again from the stable pods, " +
			"and its progress deadline runs again from now. The spec is not changed.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := f.target(args[0])
			if err != nil {
				return err
			}
			return t.retry(cmd.Context(), o.Out, o.Now())
		},
	}
}

// retry removes md's abort record (AbortedRevisionAnnotation) and sets
// RetriedAtAnnotation to now, in one merge patch: the controller takes no
// deadline verdict older than that for an abort, and runs a failed hook
// again under a new name. It refuses a MyDeployment that is neither
// aborted nor held (Progressing False: past its deadline, a failed hook):
// there is nothing to retry.
func (t *target) retry(ctx context.Context, out io.Writer, now time.Time) error {
	md, err := t.get(ctx)
	if err != nil {
		return err
	}
	recorded := optin.RecordsOf(md).AbortRecorded
	held := status.Get(&md.Status, appsv1beta1.ConditionProgressing)
	if !recorded && !status.Aborted(&md.Status) && (held == nil || held.Status != corev1.ConditionFalse) {
		return fmt.Errorf("mydeployment %q is not aborted: nothing to retry", md.Name)
	}
	stamp := now.UTC().Format(time.RFC3339)
	if md.Annotations[appsv1beta1.RetriedAtAnnotation] == stamp {
		return fmt.Errorf("mydeployment %q was retried within the past second: please wait before retrying again", md.Name)
	}
	data, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{
		appsv1beta1.AbortedRevisionAnnotation: nil, appsv1beta1.RetriedAtAnnotation: stamp}}})
	if err != nil {
		return err
	}
	if err := t.patch(ctx, md, client.RawPatch(types.MergePatchType, data)); err != nil {
		return err
	}
	fmt.Fprintf(out, "%s retried\n", resourceString(md.Name))
	return nil
}
