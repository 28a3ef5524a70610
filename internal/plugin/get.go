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
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

func newGetCommand(f *factory, o *Options) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "get [NAME]",
		Short: "List MyDeployments, or show one",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
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
			return t.list(cmd.Context(), o, all)
		},
	}
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "List MyDeployments across all namespaces.")
	return cmd
}

// list prints the table of the named MyDeployment or of all in the namespace.
func (t *target) list(ctx context.Context, o *Options, withNamespace bool) error {
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
		fmt.Fprintln(w, "NAME\tREADY\tUP-TO-DATE\tAVAILABLE\tREVISION\tCONDITION\tAGE")
		for i := range items {
			md := &items[i]
			if withNamespace {
				fmt.Fprintf(w, "%s\t", md.Namespace)
			}
			fmt.Fprintf(w, "%s\t%d/%d\t%d\t%d\t%s\t%s\t%s\n", md.Name,
				md.Status.ReadyReplicas, desired(md), md.Status.UpdatedReplicas, md.Status.AvailableReplicas,
				orNone(md.Annotations[appsv1beta1.RevisionAnnotation]), orNone(progressingReason(md)),
				age(md.CreationTimestamp, now))
		}
	})
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
