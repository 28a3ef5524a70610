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
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

var _ = Describe("rollout history", func() {
	var (
		ns string
		md *appsv1beta1.MyDeployment
	)
	BeforeEach(func() {
		ns = newNamespace()
		md = createMD(ns, "web", "nginx:3", 2)
		// Created out of order: the table is sorted by number.
		createRevision(md, "nginx:3", 3, "image nginx:3")
		createRevision(md, "nginx:1", 1, "kubectl create")
		createRevision(md, "nginx:2", 2, "")
		// Another MyDeployment's revision, selected by the same labels in
		// the same namespace, is not part of web's history.
		other := createMD(ns, "other", "nginx:9", 1)
		otherRev := createRevision(md, "nginx:9", 9, "not web's")
		otherRev.OwnerReferences[0].UID = other.UID
		otherRev.OwnerReferences[0].Name = other.Name
		Expect(k8sClient.Update(ctx, otherRev)).To(Succeed())
	})

	It("prints REVISION and CHANGE-CAUSE sorted by number, <none> when missing", func() {
		r := runPlugin(ns, "rollout", "history", "web")
		Expect(r.code).To(Equal(0), r.err)
		Expect(r.out).To(Equal("mydeployment.apps.mydeployment.io/web \n" +
			"REVISION  CHANGE-CAUSE\n" +
			"1         kubectl create\n" +
			"2         <none>\n" +
			"3         image nginx:3\n"))
		Expect(r.err).To(BeEmpty())
	})

	It("prints the pod template of --revision", func() {
		r := runPlugin(ns, "rollout", "history", "web", "--revision", "2")
		Expect(r.code).To(Equal(0), r.err)
		header, body, ok := strings.Cut(r.out, "\n")
		Expect(ok).To(BeTrue())
		Expect(header).To(Equal("mydeployment.apps.mydeployment.io/web with revision #2"))
		var got corev1.PodTemplateSpec
		Expect(yaml.UnmarshalStrict([]byte(body), &got)).To(Succeed())
		Expect(apiequality.Semantic.DeepEqual(&got, podTemplate("web", "nginx:2"))).To(BeTrue(), body)
	})

	It("fails for a revision that does not exist", func() {
		r := runPlugin(ns, "rollout", "history", "web", "--revision", "7")
		Expect(r.code).To(Equal(1))
		Expect(r.err).To(Equal("error: unable to find the specified revision\n"))
	})

	It("says when there is no history", func() {
		createMD(ns, "fresh", "nginx:1", 1)
		r := runPlugin(ns, "rollout", "history", "fresh")
		Expect(r.code).To(Equal(0), r.err)
		Expect(r.out).To(Equal("mydeployment.apps.mydeployment.io/fresh \nNo rollout history found.\n"))
	})
})
