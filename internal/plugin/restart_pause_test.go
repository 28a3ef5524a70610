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
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("rollout restart", func() {
	It("sets the restartedAt template annotation to now", func() {
		ns := newNamespace()
		md := createMD(ns, "web", "nginx:1", 1)
		r := runPlugin(ns, "rollout", "restart", "web")
		Expect(r.code).To(Equal(0), r.err)
		Expect(r.out).To(Equal("mydeployment.apps.mydeployment.io/web restarted\n"))
		got := getMD(md)
		Expect(got.Spec.Template.Annotations).To(HaveKeyWithValue(RestartedAtAnnotation, "2026-01-02T03:04:05Z"))
		Expect(got.Spec.Template.Labels).To(HaveKeyWithValue("app", "web"))
		Expect(got.Generation).To(Equal(md.Generation + 1))

		By("refusing a second restart within the same second, as kubectl does")
		r = runPlugin(ns, "rollout", "restart", "web")
		Expect(r.code).To(Equal(1))
		Expect(r.err).To(ContainSubstring("if restart has already been triggered within the past second"))
	})

	It("refuses a paused MyDeployment", func() {
		ns := newNamespace()
		createMD(ns, "web", "nginx:1", 1)
		Expect(runPlugin(ns, "rollout", "pause", "web").code).To(Equal(0))
		r := runPlugin(ns, "rollout", "restart", "web")
		Expect(r.code).To(Equal(1))
		Expect(r.err).To(Equal("error: can't restart paused mydeployment (run rollout resume first)\n"))
	})
})

var _ = Describe("rollout pause and resume", func() {
	It("flip spec.paused and say when nothing changes", func() {
		ns := newNamespace()
		md := createMD(ns, "web", "nginx:1", 1)

		r := runPlugin(ns, "rollout", "pause", "web")
		Expect(r).To(Equal(result{out: "mydeployment.apps.mydeployment.io/web paused\n"}))
		Expect(getMD(md).Spec.Paused).To(BeTrue())

		r = runPlugin(ns, "rollout", "pause", "web")
		Expect(r).To(Equal(result{out: "mydeployment.apps.mydeployment.io/web already paused\n"}))
		Expect(getMD(md).Spec.Paused).To(BeTrue())

		r = runPlugin(ns, "rollout", "resume", "md/web")
		Expect(r).To(Equal(result{out: "mydeployment.apps.mydeployment.io/web resumed\n"}))
		Expect(getMD(md).Spec.Paused).To(BeFalse())

		r = runPlugin(ns, "rollout", "resume", "web")
		Expect(r).To(Equal(result{out: "mydeployment.apps.mydeployment.io/web already resumed\n"}))
		Expect(getMD(md).Spec.Paused).To(BeFalse())
	})

	It("fails for a MyDeployment in another namespace (-n is honoured)", func() {
		ns := newNamespace()
		createMD(newNamespace(), "web", "nginx:1", 1)
		r := runPlugin(ns, "rollout", "pause", "web")
		Expect(r.code).To(Equal(1))
		Expect(r.err).To(ContainSubstring(`"web" not found`))
	})
})
