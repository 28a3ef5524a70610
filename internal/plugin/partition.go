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
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/modules"
)

func newPartitionCommand(f *factory, o *Options) *cobra.Command {
	return &cobra.Command{
		Use:   "partition NAME N|P%",
		Short: "Hold pods on the current revision during a rollout (a canary)",
		Long: "Hold N pods, or P% of spec.replicas rounded up, on the current revision during a rolling update: " +
			"the rest move to the new template and the rollout stops there (rollout status says it is held). " +
			"Lower it to move more pods, or run 'rollout promote' to finish the rollout. " +
			"Sets the " + appsv1beta1.PartitionAnnotation + " annotation; refused for strategy Recreate.",
		Example: "  kubectl mydeployment rollout partition web 8     # keep 8 pods on the current revision\n" +
			"  kubectl mydeployment rollout partition web 80%   # keep 80% of the replicas, rounded up",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := optin.ParsePodCount(args[1])
			if err != nil {
				return fmt.Errorf("invalid partition %q: %v", args[1], err)
			}
			t, err := f.target(args[0])
			if err != nil {
				return err
			}
			return t.setPartition(cmd.Context(), o.Out, &p)
		},
	}
}

// setPartition sets the partition annotation to p, or removes it when p is
// nil, with one merge patch of that annotation, and prints what it did; it
// writes nothing when the annotation already says so. A partition that
// modules.Parse would refuse on the result (strategy Recreate) is an error with
// its message, before any write.
func (t *target) setPartition(ctx context.Context, out io.Writer, p *optin.PodCount) error {
	md, err := t.get(ctx)
	if err != nil {
		return err
	}
	cur, partitioned := md.Annotations[appsv1beta1.PartitionAnnotation]
	var value any // nil: a merge patch removes the annotation
	switch {
	case p == nil && !partitioned:
		fmt.Fprintf(out, "%s not partitioned\n", resourceString(md.Name))
		return nil
	case p != nil && partitioned && cur == p.String():
		fmt.Fprintf(out, "%s already partitioned at %s\n", resourceString(md.Name), cur)
		return nil
	case p != nil:
		if err := partitionRefused(md, p.String()); err != nil {
			return err
		}
		value = p.String()
	}
	data, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"annotations": map[string]any{appsv1beta1.PartitionAnnotation: value}}})
	if err != nil {
		return err
	}
	if err := t.patch(ctx, md, client.RawPatch(types.MergePatchType, data)); err != nil {
		return err
	}
	if p == nil {
		fmt.Fprintf(out, "%s promoted: partition %s removed\n", resourceString(md.Name), cur)
	} else {
		fmt.Fprintf(out, "%s partitioned at %s\n", resourceString(md.Name), p)
	}
	return nil
}

// partitionRefused is modules.Parse's error about the partition annotation of
// md with that annotation set to value (the webhook's own refusal), or nil.
func partitionRefused(md *appsv1beta1.MyDeployment, value string) error {
	want := md.DeepCopy()
	if want.Annotations == nil {
		want.Annotations = map[string]string{}
	}
	want.Annotations[appsv1beta1.PartitionAnnotation] = value
	_, errs := modules.Parse(want)
	path := optin.Path(appsv1beta1.PartitionAnnotation).String()
	for _, e := range errs {
		if e.Field == path {
			return fmt.Errorf("cannot partition mydeployment %q: %v", md.Name, e)
		}
	}
	return nil
}
