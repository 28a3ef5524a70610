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
	"text/tabwriter"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/revision"
)

// resourceString names a MyDeployment as kubectl's name printer does
// ("deployment.apps/web"): resource.group/name.
func resourceString(name string) string {
	return "mydeployment." + appsv1beta1.GroupVersion.Group + "/" + name
}

// get reads the target MyDeployment from the API server.
func (t *target) get(ctx context.Context) (*appsv1beta1.MyDeployment, error) {
	md := &appsv1beta1.MyDeployment{}
	if err := t.c.Get(ctx, client.ObjectKey{Namespace: t.namespace, Name: t.name}, md); err != nil {
		return nil, err
	}
	return md, nil
}

// revisions lists md's ControllerRevisions, oldest first.
func (t *target) revisions(ctx context.Context, md *appsv1beta1.MyDeployment) ([]*appsv1.ControllerRevision, error) {
	sel, err := metav1.LabelSelectorAsSelector(md.Spec.Selector)
	if err != nil || md.Spec.Selector == nil {
		sel = labels.Everything() // the owner UID still picks md's revisions
	}
	return (&revision.Store{Client: t.c}).List(ctx, md.Namespace, sel, md.UID)
}

// patch applies p to md; md is updated to the server's answer.
func (t *target) patch(ctx context.Context, md *appsv1beta1.MyDeployment, p client.Patch) error {
	if err := t.c.Patch(ctx, md, p); err != nil {
		return fmt.Errorf("failed to patch: %w", err)
	}
	return nil
}

// tabbed writes what fn prints through kubectl's tabwriter settings.
func tabbed(out io.Writer, fn func(w io.Writer)) error {
	w := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	fn(w)
	return w.Flush()
}
