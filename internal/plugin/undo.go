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
	"strings"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/configref"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/revision"
)

func newUndoCommand(f *factory, o *Options) *cobra.Command {
	var to int64
	cmd := &cobra.Command{
		Use:   "undo NAME",
		Short: "Undo a previous rollout",
		Long:  "Roll back to a previous rollout: set spec.template to the pod template of that revision.",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := f.target(args[0])
			if err != nil {
				return err
			}
			return t.undo(cmd.Context(), o.Out, to)
		},
	}
	cmd.Flags().Int64Var(&to, "to-revision", 0, "The revision to rollback to. Default to 0 (last revision).")
	return cmd
}

// undo rolls the MyDeployment back to revision to (0: the one before the
// update revision) by replacing spec.template with a JSON patch.
func (t *target) undo(ctx context.Context, out io.Writer, to int64) error {
	if to < 0 {
		return revisionNotFoundErr(to)
	}
	md, err := t.get(ctx)
	if err != nil {
		return err
	}
	revs, err := t.revisions(ctx, md)
	if err != nil {
		return err
	}
	rev, err := findRevision(md, revs, to)
	if err != nil {
		return err
	}
	tmpl, err := revision.Template(rev)
	if err != nil {
		return fmt.Errorf("failed restoring revision %d: %w", rev.Revision, err)
	}
	// The config hashes are the revision's, not the spec's: the rollback
	// goes to the template, with the config as it is today.
	tmpl = configref.Without(tmpl)
	if md.Spec.Paused {
		return fmt.Errorf("you cannot rollback a paused mydeployment; resume it first with 'kubectl mydeployment rollout resume' and try again")
	}
	if apiequality.Semantic.DeepEqual(tmpl, &md.Spec.Template) {
		fmt.Fprintf(out, "%s skipped rollback (current template already matches revision %d)\n",
			resourceString(md.Name), rev.Revision)
		return nil
	}
	ops := []map[string]any{
		// Fail rather than overwrite a spec changed since it was read. The
		// generation, not the resourceVersion: the controller writes the
		// status and its records on the object all through a rollout, and
		// none of that is a reason to refuse (seen: an undo refused, 422,
		// right after a rollout completed).
		{"op": "test", "path": "/metadata/generation", "value": md.Generation},
		{"op": "replace", "path": "/spec/template", "value": tmpl},
	}
	// The change-cause follows the template, as kubectl copies the
	// ReplicaSet's annotations back onto a Deployment.
	causePath := "/metadata/annotations/" + strings.ReplaceAll(appsv1beta1.ChangeCauseAnnotation, "/", "~1")
	cause, hasCause := rev.Annotations[appsv1beta1.ChangeCauseAnnotation]
	_, mdHasCause := md.Annotations[appsv1beta1.ChangeCauseAnnotation]
	switch {
	case hasCause && md.Annotations == nil:
		ops = append(ops, map[string]any{"op": "add", "path": "/metadata/annotations",
			"value": map[string]string{appsv1beta1.ChangeCauseAnnotation: cause}})
	case hasCause:
		ops = append(ops, map[string]any{"op": "add", "path": causePath, "value": cause})
	case mdHasCause:
		ops = append(ops, map[string]any{"op": "remove", "path": causePath})
	}
	data, err := json.Marshal(ops)
	if err != nil {
		return fmt.Errorf("failed restoring revision %d: %w", rev.Revision, err)
	}
	read := md.Generation
	if err := t.c.Patch(ctx, md, client.RawPatch(types.JSONPatchType, data)); err != nil {
		if apierrors.IsInvalid(err) {
			if now, gerr := t.get(ctx); gerr == nil && now.Generation != read {
				return fmt.Errorf("%s changed while rolling back (generation %d, now %d): nothing was rolled back; run the command again",
					resourceString(md.Name), read, now.Generation)
			}
		}
		return fmt.Errorf("failed restoring revision %d: %w", rev.Revision, err)
	}
	fmt.Fprintf(out, "%s rolled back\n", resourceString(md.Name))
	return nil
}

// findRevision returns revision to, or for to == 0 the newest revision numbered
// below the update revision (status.updateRevision, else the revision
// annotation, else the newest revision).
func findRevision(md *appsv1beta1.MyDeployment, revs []*appsv1.ControllerRevision, to int64) (*appsv1.ControllerRevision, error) {
	if to > 0 {
		if r, ok := byNumber(revs)[to]; ok {
			return r, nil
		}
		return nil, revisionNotFoundErr(to)
	}
	current := currentNumber(md, revs)
	var prev *appsv1.ControllerRevision
	for _, r := range revs { // oldest first
		if r.Revision < current {
			prev = r
		}
	}
	if prev == nil {
		return nil, fmt.Errorf("no rollout history found for mydeployment %q", md.Name)
	}
	return prev, nil
}

// currentNumber is the number of md's update revision.
func currentNumber(md *appsv1beta1.MyDeployment, revs []*appsv1.ControllerRevision) int64 {
	for _, r := range revs {
		if md.Status.UpdateRevision != "" && r.Name == md.Status.UpdateRevision {
			return r.Revision
		}
	}
	n := optin.RecordsOf(md).Revision
	if n > 0 {
		return n
	}
	for _, r := range revs {
		n = max(n, r.Revision)
	}
	return n
}

func revisionNotFoundErr(r int64) error {
	return fmt.Errorf("unable to find specified revision %v in history", r)
}
