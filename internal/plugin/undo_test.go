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
	"bytes"
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

var _ = Describe("rollout undo", func() {
	var (
		ns string
		md *appsv1beta1.MyDeployment
	)
	BeforeEach(func() {
		ns = newNamespace()
		md = createMD(ns, "web", "nginx:3", 2)
		createRevision(md, "nginx:1", 1, "first")
		createRevision(md, "nginx:2", 2, "")
		current := createRevision(md, "nginx:3", 3, "third")
		setAnnotation(md, appsv1beta1.ChangeCauseAnnotation, "third")
		setAnnotation(md, appsv1beta1.RevisionAnnotation, "3")
		setStatus(md, func(cur *appsv1beta1.MyDeployment) {
			cur.Status.ObservedGeneration = cur.Generation
			cur.Status.UpdateRevision = current.Name
			cur.Status.CurrentRevision = current.Name
		})
	})

	expectTemplate := func(image string) {
		got := getMD(md)
		Expect(apiequality.Semantic.DeepEqual(&got.Spec.Template, podTemplate("web", image))).To(BeTrue(),
			"template is %+v", got.Spec.Template)
	}

	It("rolls back to the revision before the update revision", func() {
		r := runPlugin(ns, "rollout", "undo", "web")
		Expect(r.code).To(Equal(0), r.err)
		Expect(r.out).To(Equal("mydeployment.apps.mydeployment.io/web rolled back\n"))
		expectTemplate("nginx:2")
		// Revision 2 has no change-cause: the stale one is removed.
		Expect(getMD(md).Annotations).NotTo(HaveKey(appsv1beta1.ChangeCauseAnnotation))
		Expect(getMD(md).Annotations).To(HaveKeyWithValue(appsv1beta1.RevisionAnnotation, "3"))
	})

	It("rolls back to --to-revision, taking its change-cause", func() {
		r := runPlugin(ns, "rollout", "undo", "web", "--to-revision", "1")
		Expect(r.code).To(Equal(0), r.err)
		Expect(r.out).To(Equal("mydeployment.apps.mydeployment.io/web rolled back\n"))
		expectTemplate("nginx:1")
		Expect(getMD(md).Annotations).To(HaveKeyWithValue(appsv1beta1.ChangeCauseAnnotation, "first"))
	})

	It("skips a rollback to the template it already has", func() {
		before := getMD(md)
		r := runPlugin(ns, "rollout", "undo", "web", "--to-revision", "3")
		Expect(r.code).To(Equal(0), r.err)
		Expect(r.out).To(Equal("mydeployment.apps.mydeployment.io/web skipped rollback (current template already matches revision 3)\n"))
		Expect(getMD(md).ResourceVersion).To(Equal(before.ResourceVersion))
	})

	It("fails for a revision that does not exist", func() {
		before := getMD(md)
		r := runPlugin(ns, "rollout", "undo", "web", "--to-revision", "7")
		Expect(r.code).To(Equal(1))
		Expect(r.out).To(BeEmpty())
		Expect(r.err).To(Equal("error: unable to find specified revision 7 in history\n"))
		Expect(getMD(md).ResourceVersion).To(Equal(before.ResourceVersion))
	})

	It("refuses a paused MyDeployment, as kubectl does", func() {
		Expect(runPlugin(ns, "rollout", "pause", "web").code).To(Equal(0))
		r := runPlugin(ns, "rollout", "undo", "web")
		Expect(r.code).To(Equal(1))
		Expect(r.err).To(ContainSubstring("you cannot rollback a paused mydeployment"))
		expectTemplate("nginx:3")
	})

	// undoWithWrite runs undo with write made on the API server between
	// undo's read of the MyDeployment and its patch.
	undoWithWrite := func(write func()) (string, error) {
		c := writeBeforePatch{Client: k8sClient, write: write}
		var out bytes.Buffer
		err := (&target{c: c, namespace: ns, name: "web"}).undo(context.Background(), &out, 0)
		return out.String(), err
	}

	It("rolls back while the controller writes the status and its records", func() {
		out, err := undoWithWrite(func() {
			setStatus(md, func(cur *appsv1beta1.MyDeployment) { cur.Status.ReadyReplicas = 1 })
			setAnnotation(md, "example.com/noted", "by the controller")
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(Equal("mydeployment.apps.mydeployment.io/web rolled back\n"))
		expectTemplate("nginx:2")
	})

	It("refuses to overwrite a template changed since it was read, and says so", func() {
		out, err := undoWithWrite(func() {
			cur := getMD(md)
			cur.Spec.Template = *podTemplate("web", "nginx:4")
			Expect(k8sClient.Update(context.Background(), cur)).To(Succeed())
		})
		Expect(err).To(MatchError(MatchRegexp(
			`^mydeployment.apps.mydeployment.io/web changed while rolling back \(generation \d+, now \d+\): nothing was rolled back; run the command again$`)))
		Expect(out).To(BeEmpty())
		expectTemplate("nginx:4")
	})

	It("fails when there is no earlier revision", func() {
		fresh := createMD(ns, "fresh", "nginx:1", 1)
		createRevision(fresh, "nginx:1", 1, "")
		r := runPlugin(ns, "rollout", "undo", "fresh")
		Expect(r.code).To(Equal(1))
		Expect(r.err).To(Equal(`error: no rollout history found for mydeployment "fresh"` + "\n"))
	})
})

// writeBeforePatch is a client that makes write on the API server right
// before each patch it sends: what another writer does between a read and
// a patch.
type writeBeforePatch struct {
	client.Client
	write func()
}

func (c writeBeforePatch) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	c.write()
	return c.Client.Patch(ctx, obj, patch, opts...)
}
