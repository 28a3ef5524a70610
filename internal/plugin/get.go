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
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
)

// getOptions are get's flags, kubectl get's for one kind.
type getOptions struct {
	all      bool
	selector string
	watch    bool
	output   outputFlags
}

func newGetCommand(f *factory, o *Options) *cobra.Command {
	g := &getOptions{}
	cmd := &cobra.Command{
		Use:   "get [NAME]",
		Short: "List MyDeployments, or show one",
		Long: "List MyDeployments, or show one, as kubectl get does: -l filters by label, -w watches, " +
			"-o json|yaml|name|jsonpath=...|go-template=... prints the objects (a List without NAME). " +
			"STATUS is the state to act on: Aborted at revision R, Waiting for config, WaitingForHandOver, " +
			"a failed condition's reason (ProgressDeadlineExceeded, FailedCreate, ...), Paused, Draining, " +
			"Canary step i/n, Held at partition N, Progressing or Available. -o wide adds the partition (the " +
			appsv1beta1.PartitionAnnotation + " annotation, \"(held)\" once the rollout is held there), the update mode (the " +
			appsv1beta1.UpdateModeAnnotation + " annotation), containers, images and selector.",
		Example: "  kubectl mydeployment get\n  kubectl mydeployment get -l app=web -o wide\n" +
			"  kubectl mydeployment get web -o yaml\n  kubectl mydeployment get -A -w",
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeNames(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			return g.run(cmd.Context(), f, o, name)
		},
	}
	cmd.Flags().BoolVarP(&g.all, "all-namespaces", "A", false, "List MyDeployments across all namespaces.")
	cmd.Flags().StringVarP(&g.selector, "selector", "l", "",
		"Selector (label query) to filter on, supports '=', '==', '!=', 'in', 'notin' and 'key' / '!key' (e.g. -l key1=value1,key2=value2).")
	cmd.Flags().BoolVarP(&g.watch, "watch", "w", false, "After listing/getting the requested objects, watch for changes.")
	g.output.addFlags(cmd)
	return cmd
}

// run gets the named MyDeployment, or lists them, prints them, and with
// --watch prints every change until the server ends the watch or ctx does.
func (g *getOptions) run(ctx context.Context, f *factory, o *Options, name string) error {
	p, err := g.output.printer()
	if err != nil {
		return err
	}
	switch {
	case g.all && name != "":
		return fmt.Errorf("a resource cannot be retrieved by name across all namespaces")
	case g.selector != "" && name != "":
		return fmt.Errorf("name cannot be provided when a selector is specified")
	}
	sel, err := labels.Parse(g.selector)
	if err != nil {
		return fmt.Errorf("unable to parse the selector %q: %w", g.selector, err)
	}
	t, err := f.target(name)
	if err != nil {
		return err
	}
	if g.all {
		t.namespace = ""
	}
	l := listing{target: t, o: o, wide: g.output.format == "wide", withNamespace: g.all,
		printer: p, nodes: &nodeReader{c: t.c}}
	items, rv, err := t.listOrGet(ctx, sel)
	if err != nil {
		return err
	}
	if err := l.print(ctx, items, name == ""); err != nil {
		return err
	}
	if !g.watch {
		return nil
	}
	return l.watch(ctx, f, sel, rv)
}

// listOrGet reads the named MyDeployment, or those of the namespace that
// sel selects, with the list's resourceVersion (to watch from).
func (t *target) listOrGet(ctx context.Context, sel labels.Selector) ([]appsv1beta1.MyDeployment, string, error) {
	if t.name != "" {
		md, err := t.get(ctx)
		if err != nil {
			return nil, "", err
		}
		return []appsv1beta1.MyDeployment{*md}, md.ResourceVersion, nil
	}
	var l appsv1beta1.MyDeploymentList
	if err := t.c.List(ctx, &l, client.InNamespace(t.namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, "", err
	}
	return l.Items, l.ResourceVersion, nil
}

// listing prints MyDeployments as get does: kubectl's printer, or the table.
type listing struct {
	*target
	o             *Options
	printer       printers.ResourcePrinter
	wide          bool
	withNamespace bool
	nodes         *nodeReader
	// headerDone: the table's header is printed (once, as kubectl get -w).
	headerDone bool
}

// print prints items: through the printer as a List when asList (kubectl
// get without a name), else each object; or as table rows. An empty table
// says "No resources found" on ErrOut, as kubectl does (a printer prints an
// empty List).
func (l *listing) print(ctx context.Context, items []appsv1beta1.MyDeployment, asList bool) error {
	if len(items) == 0 && l.printer == nil {
		if l.withNamespace {
			fmt.Fprintln(l.o.ErrOut, "No resources found")
		} else {
			fmt.Fprintf(l.o.ErrOut, "No resources found in %s namespace.\n", l.namespace)
		}
		return nil
	}
	if l.printer == nil {
		return l.rows(ctx, items)
	}
	if asList {
		list, err := asUnstructuredList(items)
		if err != nil {
			return err
		}
		return l.printer.PrintObj(list, l.o.Out)
	}
	for i := range items {
		if err := l.printer.PrintObj(&items[i], l.o.Out); err != nil {
			return err
		}
	}
	return nil
}

// rows prints the table rows of items, after the header the first time;
// wide adds kubectl's wide columns for a Deployment, PARTITION and
// UPDATE-MODE.
func (l *listing) rows(ctx context.Context, items []appsv1beta1.MyDeployment) error {
	now := l.o.Now()
	return tabbed(l.o.Out, func(w io.Writer) {
		if !l.headerDone {
			l.headerDone = true
			if l.withNamespace {
				fmt.Fprint(w, "NAMESPACE\t")
			}
			fmt.Fprint(w, "NAME\tREADY\tUP-TO-DATE\tAVAILABLE\tREVISION\tSTATUS\tAGE")
			if l.wide {
				fmt.Fprint(w, "\tPARTITION\tUPDATE-MODE\tCONTAINERS\tIMAGES\tSELECTOR")
			}
			fmt.Fprintln(w)
		}
		for i := range items {
			md := &items[i]
			if l.withNamespace {
				fmt.Fprintf(w, "%s\t", md.Namespace)
			}
			fmt.Fprintf(w, "%s\t%d/%d\t%d\t%d\t%s\t%s\t%s", md.Name,
				md.Status.ReadyReplicas, desired(md), md.Status.UpdatedReplicas, md.Status.AvailableReplicas,
				orNone(optin.RecordsOf(md).RevisionText), rolloutState(md, l.nodes.drainingPods(ctx, md)),
				age(md.CreationTimestamp, now))
			if l.wide {
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
