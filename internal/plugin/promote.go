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

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/modules"
	"github.com/mydeployment-io/mydeployment-operator/internal/rollout"
)

func newPromoteCommand(f *factory, o *Options) *cobra.Command {
	var full bool
	cmd := &cobra.Command{
		Use:   "promote NAME",
		Short: "Go on with a canary: end its current step, or remove the partition",
		Long: "With canary steps (" + appsv1beta1.CanaryStepsAnnotation + "): end the step the rollout is at " +
			"(a pause waits for this), by setting the " + appsv1beta1.CanaryPromoteAnnotation + " annotation to that step, " +
			"so a repeated promote never ends two; --full ends every remaining step. " +
			"Otherwise remove the " + appsv1beta1.PartitionAnnotation + " annotation set by 'rollout partition': " +
			"the pods it held move to the new template and the rollout completes (--full changes nothing).",
		Example: "  kubectl mydeployment rollout promote web          # the next canary step, or the end of the partition\n" +
			"  kubectl mydeployment rollout promote web --full   # skip every remaining canary step",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := f.target(args[0])
			if err != nil {
				return err
			}
			md, err := t.get(cmd.Context())
			if err != nil {
				return err
			}
			if _, ok := md.Annotations[appsv1beta1.CanaryStepsAnnotation]; ok {
				return t.promoteCanary(cmd.Context(), o.Out, md, full)
			}
			return t.setPartition(cmd.Context(), o.Out, nil)
		},
	}
	cmd.Flags().BoolVar(&full, "full", false, "End every remaining canary step: the rollout completes.")
	return cmd
}

// promoteCanary ends the canary step md's controller recorded it at (or,
// full, every remaining step) with one merge patch of the promote
// annotation naming that step, and prints what it did. It writes nothing
// when no canary rollout is at a step (none under way, or the controller
// has not recorded the new template's first step yet), or when the
// annotation already says so. Canary annotations optin refuses are an
// error with its message.
func (t *target) promoteCanary(ctx context.Context, out io.Writer, md *appsv1beta1.MyDeployment, full bool) error {
	c, errs := canaryOf(md)
	if len(errs) > 0 || c == nil {
		return fmt.Errorf("cannot promote mydeployment %q: %v", md.Name, errs.ToAggregate())
	}
	steps, st := c.Steps, c.State
	if !canaryUnderWay(md, st, len(steps)) {
		fmt.Fprintf(out, "%s has no canary step to promote\n", resourceString(md.Name))
		return nil
	}
	p := rollout.CanaryPromote{Revision: st.Revision, Index: st.Index, Full: full}
	if md.Annotations[appsv1beta1.CanaryPromoteAnnotation] == p.String() {
		fmt.Fprintf(out, "%s already promoted (%s)\n", resourceString(md.Name), p)
		return nil
	}
	data, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"annotations": map[string]any{appsv1beta1.CanaryPromoteAnnotation: p.String()}}})
	if err != nil {
		return err
	}
	if err := t.patch(ctx, md, client.RawPatch(types.MergePatchType, data)); err != nil {
		return err
	}
	if full {
		fmt.Fprintf(out, "%s promoted: steps %d to %d of %d ended\n", resourceString(md.Name), st.Index+1, len(steps), len(steps))
	} else {
		fmt.Fprintf(out, "%s promoted: ended %s\n", resourceString(md.Name), st.Describe(steps))
	}
	return nil
}

// A canarySpec is the spec of the opt-in that moves a rollout in steps
// (the canary module's): the plugin's promote, status and status column
// read its steps, its record and its promote as the planner does.
type canarySpec interface {
	optin.Spec
	RolloutCanary() *rollout.Canary
}

// canaryOf is md's canary as the registry parses it (modules.Parse): nil
// without canary steps, and nil with md's errors when any of its opt-ins
// does not parse.
func canaryOf(md *appsv1beta1.MyDeployment) (*rollout.Canary, field.ErrorList) {
	o, errs := modules.Parse(md)
	if len(errs) > 0 {
		return nil, errs
	}
	for c := range optin.Each[canarySpec](o) {
		return c.RolloutCanary(), nil
	}
	return nil, nil
}

// canaryUnderWay says md's status shows a rollout under way to the
// revision st, the controller's record, names, at one of n steps.
func canaryUnderWay(md *appsv1beta1.MyDeployment, st rollout.CanaryState, n int) bool {
	s := md.Status
	return st.Revision != "" && st.Revision == s.UpdateRevision && s.CurrentRevision != "" &&
		s.CurrentRevision != s.UpdateRevision && st.Index < n
}
