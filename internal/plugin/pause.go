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
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// newPauseCommand builds "rollout pause" (pause true) or "rollout resume".
func newPauseCommand(f *factory, o *Options, pause bool) *cobra.Command {
	use, short, long := "resume NAME", "Resume a paused MyDeployment",
		"Resume a paused MyDeployment: the controller rolls out template changes again."
	if pause {
		use, short, long = "pause NAME", "Mark the MyDeployment as paused",
			"Mark the MyDeployment as paused: template changes are not rolled out until it is resumed."
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := f.target(args[0])
			if err != nil {
				return err
			}
			return t.setPaused(cmd.Context(), o.Out, pause)
		},
	}
}

// setPaused sets spec.paused, printing "paused"/"resumed", or "already ..."
// when it had that value.
func (t *target) setPaused(ctx context.Context, out io.Writer, pause bool) error {
	word := "resumed"
	if pause {
		word = "paused"
	}
	md, err := t.get(ctx)
	if err != nil {
		return err
	}
	if md.Spec.Paused == pause {
		fmt.Fprintf(out, "%s already %s\n", resourceString(md.Name), word)
		return nil
	}
	data := fmt.Appendf(nil, `{"spec":{"paused":%t}}`, pause)
	if err := t.patch(ctx, md, client.RawPatch(types.MergePatchType, data)); err != nil {
		return err
	}
	fmt.Fprintf(out, "%s %s\n", resourceString(md.Name), word)
	return nil
}
