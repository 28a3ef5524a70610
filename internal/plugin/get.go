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
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

func newGetCommand(f *factory, o *Options) *cobra.Command {
	var (
		all    bool
		output string
	)
	cmd := &cobra.Command{
		Use:   "get [NAME]",
		Short: "List MyDeployments, or show one",
		Long: "List MyDeployments, or show one. -o wide adds the partition (the " + appsv1beta1.PartitionAnnotation +
			" annotation, \"(held)\" once the rollout is held there), the update mode (the " + appsv1beta1.UpdateModeAnnotation +
			" annotation), containers, images and selector.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "" && output != "wide" {
				return fmt.Errorf("unable to match a printer suitable for the output format %q, allowed formats are: wide", output)
			}
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			if all && name != "" {
				return fmt.Errorf("a resource cannot be retrieved by name across all namespaces")
			}
			t, err := f.target(name)
			if err != nil {
				return err
			}
			if all {
				t.namespace = ""
			}
			return t.list(cmd.Context(), o, all, output == "wide")
		},
	}
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "List MyDeployments across all namespaces.")
	cmd.Flags().StringVarP(&output, "output", "o", "", "Output format: wide adds PARTITION, UPDATE-MODE, CONTAINERS, IMAGES and SELECTOR.")
	return cmd
}

// list prints the table of the named MyDeployment or of all in the
// namespace; wide adds kubectl's wide columns for a Deployment, PARTITION
// and UPDATE-MODE.
func (t *target) list(ctx context.Context, o *Options, withNamespace, wide bool) error {
	var items []appsv1beta1.MyDeployment
	if t.name != "" {
		md, err := t.get(ctx)
		if err != nil {
			return err
		}
		items = append(items, *md)
	} else {
		var l appsv1beta1.MyDeploymentList
		if err := t.c.List(ctx, &l, client.InNamespace(t.namespace)); err != nil {
			return err
		}
		items = l.Items
	}
	if len(items) == 0 {
		if withNamespace {
			fmt.Fprintln(o.ErrOut, "No resources found")
		} else {
			fmt.Fprintf(o.ErrOut, "No resources found in %s namespace.\n", t.namespace)
		}
		return nil
	}
	now := o.Now()
	return tabbed(o.Out, func(w io.Writer) {
		if withNamespace {
			fmt.Fprint(w, "NAMESPACE\t")
		}
		fmt.Fprint(w, "NAME\tREADY\tUP-TO-DATE\tAVAILABLE\tREVISION\tCONDITION\tAGE")
		if wide {
			fmt.Fprint(w, "\tPARTITION\tUPDATE-MODE\tCONTAINERS\tIMAGES\tSELECTOR")
		}
		fmt.Fprintln(w)
		for i := range items {
			md := &items[i]
			if withNamespace {
				fmt.Fprintf(w, "%s\t", md.Namespace)
			}
			fmt.Fprintf(w, "%s\t%d/%d\t%d\t%d\t%s\t%s\t%s", md.Name,
				md.Status.ReadyReplicas, desired(md), md.Status.UpdatedReplicas, md.Status.AvailableReplicas,
				orNone(md.Annotations[appsv1beta1.RevisionAnnotation]), orNone(progressingReason(md)),
				age(md.CreationTimestamp, now))
			if wide {
				names, images := containers(md)
				fmt.Fprintf(w, "\t%s\t%s\t%s\t%s\t%s", partitionColumn(md), orNone(md.Annotations[appsv1beta1.UpdateModeAnnotation]),
					names, images, metav1.FormatLabelSelector(md.Spec.Selector))
			}
			fmt.Fprintln(w)
		}
	})
}

// partitionColumn is the partition annotation's value, "(held)" appended
// once the rollout is held there, or "<none>".
func partitionColumn(md *appsv1beta1.MyDeployment) string {
	v, ok := md.Annotations[appsv1beta1.PartitionAnnotation]
	switch {
	case !ok:
		return "<none>"
	case heldAtPartition(md):
		return v + "(held)"
	default:
		return orNone(v)
	}
}

// containers are the template's container names and images, comma
// separated, as kubectl's wide Deployment columns.
func containers(md *appsv1beta1.MyDeployment) (names, images string) {
	var n, i []string
	for _, c := range md.Spec.Template.Spec.Containers {
		n, i = append(n, c.Name), append(i, c.Image)
	}
	return strings.Join(n, ","), strings.Join(i, ",")
}

// desired is spec.replicas, defaulting to 1 as the API does.
func desired(md *appsv1beta1.MyDeployment) int32 {
	if md.Spec.Replicas == nil {
		return 1
	}
	return *md.Spec.Replicas
}

// progressingReason is the reason of the Progressing condition, if any.
func progressingReason(md *appsv1beta1.MyDeployment) string {
	for _, c := range md.Status.Conditions {
		if c.Type == appsv1beta1.ConditionProgressing {
			return c.Reason
		}
	}
	return ""
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// age is kubectl's AGE column (translateTimestampSince).
func age(ts metav1.Time, now time.Time) string {
	if ts.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(ts.Time))
}
