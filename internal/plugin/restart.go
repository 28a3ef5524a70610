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
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mydeployment-io/mydeployment-operator/internal/inplace"
)

// RestartedAtAnnotation is the pod template annotation kubectl rollout
// restart sets; changing it makes a new revision and replaces every pod
// (also under update-mode InPlaceIfPossible).
const RestartedAtAnnotation = inplace.RestartedAtAnnotation

func newRestartCommand(f *factory, o *Options) *cobra.Command {
	return &cobra.Command{
		Use:   "restart NAME",
		Short: "Restart a MyDeployment",
		Long:  "Restart a MyDeployment: its pods are replaced in a rolling update, as after any template change.",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := f.target(args[0])
			if err != nil {
				return err
			}
			return t.restart(cmd.Context(), o.Out, o.Now())
		},
	}
}

// restart sets the template's restartedAt annotation to now.
func (t *target) restart(ctx context.Context, out io.Writer, now time.Time) error {
	md, err := t.get(ctx)
	if err != nil {
		return err
	}
	if md.Spec.Paused {
		return errors.New("can't restart paused mydeployment (run rollout resume first)")
	}
	stamp := now.Format(time.RFC3339)
	if md.Spec.Template.Annotations[RestartedAtAnnotation] == stamp {
		return fmt.Errorf("failed to create patch for %v: if restart has already been triggered within the past second, please wait before attempting to trigger another", md.Name)
	}
	data, err := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{
		"metadata": map[string]any{"annotations": map[string]string{RestartedAtAnnotation: stamp}}}}})
	if err != nil {
		return err
	}
	if err := t.patch(ctx, md, client.RawPatch(types.MergePatchType, data)); err != nil {
		return err
	}
	fmt.Fprintf(out, "%s restarted\n", resourceString(md.Name))
	return nil
}
