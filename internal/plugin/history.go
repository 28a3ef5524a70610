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
	"slices"
	"strings"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/configref"
	"github.com/mydeployment-io/mydeployment-operator/internal/revision"
)

func newHistoryCommand(f *factory, o *Options) *cobra.Command {
	var rev int64
	cmd := &cobra.Command{
		Use:   "history NAME",
		Short: "View rollout history",
		Long:  "View previous rollout revisions and configurations.",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if rev < 0 {
				return fmt.Errorf("revision must be a positive integer: %v", rev)
			}
			t, err := f.target(args[0])
			if err != nil {
				return err
			}
			return t.history(cmd.Context(), o.Out, rev)
		},
	}
	cmd.Flags().Int64Var(&rev, "revision", 0, "See the details, including podTemplate of the revision specified")
	return cmd
}

// byNumber maps revision numbers to revisions; with duplicates the newest
// (last in Store.List order) wins, as in kubectl's map.
func byNumber(revs []*appsv1.ControllerRevision) map[int64]*appsv1.ControllerRevision {
	m := make(map[int64]*appsv1.ControllerRevision, len(revs))
	for _, r := range revs {
		m[r.Revision] = r
	}
	return m
}

// history prints the REVISION/CHANGE-CAUSE table, or with rev > 0 the pod
// template of that revision as YAML, after kubectl's header line.
func (t *target) history(ctx context.Context, out io.Writer, rev int64) error {
	md, err := t.get(ctx)
	if err != nil {
		return err
	}
	revs, err := t.revisions(ctx, md)
	if err != nil {
		return err
	}
	numbered := byNumber(revs)
	if rev > 0 {
		r, ok := numbered[rev]
		if !ok {
			return fmt.Errorf("unable to find the specified revision")
		}
		tmpl, err := revision.Template(r)
		if err != nil {
			return err
		}
		text, err := templateYAML(tmpl)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s with revision #%d\n%s", resourceString(md.Name), rev, text)
		return nil
	}
	fmt.Fprintf(out, "%s \n", resourceString(md.Name))
	if len(numbered) == 0 {
		fmt.Fprintln(out, "No rollout history found.")
		return nil
	}
	numbers := make([]int64, 0, len(numbered))
	for n := range numbered {
		numbers = append(numbers, n)
	}
	slices.Sort(numbers)
	changes := changesOf(numbered, numbers)
	return tabbed(out, func(w io.Writer) {
		if changes == nil {
			fmt.Fprintf(w, "REVISION\tCHANGE-CAUSE\n")
		} else {
			fmt.Fprintf(w, "REVISION\tCHANGE\tCHANGE-CAUSE\n")
		}
		for i, n := range numbers {
			cause := numbered[n].Annotations[appsv1beta1.ChangeCauseAnnotation]
			if cause == "" {
				cause = "<none>"
			}
			if changes == nil {
				fmt.Fprintf(w, "%d\t%s\n", n, cause)
			} else {
				fmt.Fprintf(w, "%d\t%s\t%s\n", n, changes[i], cause)
			}
		}
	})
}

// changesOf says, for each of numbers, what changed from the revision
// before it: "template", the ConfigMaps and Secrets whose data changed
// ("configmap/app"), or both; "initial" for the first. Nil when no
// revision records config hashes (rollout-on-config-change never used):
// the table is then kubectl's.
func changesOf(numbered map[int64]*appsv1.ControllerRevision, numbers []int64) []string {
	templates := make([]*corev1.PodTemplateSpec, len(numbers))
	withConfig := false
	for i, n := range numbers {
		tmpl, err := revision.Template(numbered[n])
		if err != nil {
			tmpl = nil // shown as a template change
		} else if _, ok := tmpl.Annotations[appsv1beta1.ConfigHashAnnotation]; ok {
			withConfig = true
		}
		templates[i] = tmpl
	}
	if !withConfig {
		return nil
	}
	out := make([]string, len(numbers))
	for i := range numbers {
		if i == 0 {
			out[i] = "initial"
			continue
		}
		prev, cur := templates[i-1], templates[i]
		var what []string
		if prev == nil || cur == nil || !apiequality.Semantic.DeepEqual(configref.Without(prev), configref.Without(cur)) {
			what = append(what, "template")
		}
		if prev != nil && cur != nil {
			what = append(what, configref.Changed(prev.Annotations[appsv1beta1.ConfigHashAnnotation],
				cur.Annotations[appsv1beta1.ConfigHashAnnotation])...)
		}
		if len(what) == 0 {
			what = []string{"<none>"}
		}
		out[i] = strings.Join(what, ",")
	}
	return out
}

// templateYAML renders a pod template for people.
func templateYAML(tmpl *corev1.PodTemplateSpec) (string, error) {
	b, err := yaml.Marshal(tmpl)
	if err != nil {
		return "", fmt.Errorf("printing pod template: %w", err)
	}
	return string(b), nil
}
