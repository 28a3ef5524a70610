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
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// rows splits a table into the fields of each line.
func rows(table string) [][]string {
	var out [][]string
	for _, line := range strings.Split(strings.TrimSuffix(table, "\n"), "\n") {
		out = append(out, strings.Fields(line))
	}
	return out
}

var _ = Describe("get", func() {
	var ns string
	BeforeEach(func() {
		ns = newNamespace()
		web := createMD(ns, "web", "nginx:1", 3)
		setAnnotation(web, appsv1beta1.RevisionAnnotation, "4")
		setStatus(web, func(cur *appsv1beta1.MyDeployment) {
			cur.Status.ObservedGeneration = cur.Generation
			cur.Status.Replicas = 3
			cur.Status.ReadyReplicas = 2
			cur.Status.UpdatedReplicas = 3
			cur.Status.AvailableReplicas = 2
			cur.Status.Conditions = append(cur.Status.Conditions,
				progressing(corev1.ConditionTrue, appsv1beta1.ReasonNewRevisionAvailable))
		})
		createMD(ns, "api", "nginx:1", 2)
		// The plugin's clock: five minutes after web was created.
		created := getMD(web).CreationTimestamp.Time
		prev := testNow
		testNow = func() time.Time { return created.Add(5 * time.Minute) }
		DeferCleanup(func() { testNow = prev })
	})

	It("lists the MyDeployments of the namespace", func() {
		r := runPlugin(ns, "get")
		Expect(r.code).To(Equal(0), r.err)
		Expect(rows(r.out)).To(Equal([][]string{
			{"NAME", "READY", "UP-TO-DATE", "AVAILABLE", "REVISION", "CONDITION", "AGE"},
			{"api", "0/2", "0", "0", "<none>", "<none>", rows(r.out)[1][6]},
			{"web", "2/3", "3", "2", "4", "NewRevisionAvailable", "5m"},
		}))
		Expect(rows(r.out)[1][6]).To(MatchRegexp(`^[45]m`))
		Expect(r.out).To(HavePrefix("NAME  READY  UP-TO-DATE  AVAILABLE  REVISION  CONDITION             AGE\n"))
	})

	It("shows one MyDeployment by name", func() {
		r := runPlugin(ns, "get", "web")
		Expect(r.code).To(Equal(0), r.err)
		Expect(rows(r.out)).To(Equal([][]string{
			{"NAME", "READY", "UP-TO-DATE", "AVAILABLE", "REVISION", "CONDITION", "AGE"},
			{"web", "2/3", "3", "2", "4", "NewRevisionAvailable", "5m"},
		}))
	})

	It("adds NAMESPACE with --all-namespaces", func() {
		r := runPlugin(ns, "get", "-A")
		Expect(r.code).To(Equal(0), r.err)
		Expect(rows(r.out)[0]).To(Equal([]string{"NAMESPACE", "NAME", "READY", "UP-TO-DATE", "AVAILABLE", "REVISION", "CONDITION", "AGE"}))
		Expect(rows(r.out)).To(ContainElement(Equal([]string{ns, "web", "2/3", "3", "2", "4", "NewRevisionAvailable", "5m"})))
	})

	It("says when the namespace has none, and fails for a missing name", func() {
		empty := newNamespace()
		r := runPlugin(empty, "get")
		Expect(r).To(Equal(result{err: "No resources found in " + empty + " namespace.\n"}))

		r = runPlugin(ns, "get", "nope")
		Expect(r.code).To(Equal(1))
		Expect(r.err).To(Equal(`error: mydeployments.apps.mydeployment.io "nope" not found` + "\n"))
	})
})
