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

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/hooks"
	"github.com/mydeployment-io/mydeployment-operator/internal/status"
)

// rows splits a table into the cells of each line, at the columns of its
// header (whose names have no spaces; a cell may, as STATUS's do).
func rows(table string) [][]string {
	lines := strings.Split(strings.TrimSuffix(table, "\n"), "\n")
	var starts []int
	for i, c := range lines[0] {
		if c != ' ' && (i == 0 || lines[0][i-1] == ' ') {
			starts = append(starts, i)
		}
	}
	var out [][]string
	for _, line := range lines {
		var cells []string
		for j, start := range starts {
			end := len(line)
			if j+1 < len(starts) {
				end = min(starts[j+1], len(line))
			}
			cells = append(cells, strings.TrimSpace(line[min(start, len(line)):end]))
		}
		out = append(out, cells)
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
			{"NAME", "READY", "UP-TO-DATE", "AVAILABLE", "REVISION", "STATUS", "AGE"},
			{"api", "0/2", "0", "0", "<none>", "Progressing", rows(r.out)[1][6]},
			{"web", "2/3", "3", "2", "4", "Progressing", "5m"},
		}))
		Expect(rows(r.out)[1][6]).To(MatchRegexp(`^[45]m`))
		Expect(r.out).To(HavePrefix("NAME  READY  UP-TO-DATE  AVAILABLE  REVISION  STATUS       AGE\n"))
	})

	It("shows one MyDeployment by name", func() {
		r := runPlugin(ns, "get", "web")
		Expect(r.code).To(Equal(0), r.err)
		Expect(rows(r.out)).To(Equal([][]string{
			{"NAME", "READY", "UP-TO-DATE", "AVAILABLE", "REVISION", "STATUS", "AGE"},
			{"web", "2/3", "3", "2", "4", "Progressing", "5m"},
		}))
	})

	It("adds NAMESPACE with --all-namespaces", func() {
		r := runPlugin(ns, "get", "-A")
		Expect(r.code).To(Equal(0), r.err)
		Expect(rows(r.out)[0]).To(Equal([]string{"NAMESPACE", "NAME", "READY", "UP-TO-DATE", "AVAILABLE", "REVISION", "STATUS", "AGE"}))
		Expect(rows(r.out)).To(ContainElement(Equal([]string{ns, "web", "2/3", "3", "2", "4", "Progressing", "5m"})))
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

var _ = Describe("get -o wide", func() {
	It("adds the partition, held or not, the update mode and kubectl's wide Deployment columns", func() {
		ns := newNamespace()
		api := createMD(ns, "api", "nginx:1", 2)
		setAnnotation(api, appsv1beta1.UpdateModeAnnotation, appsv1beta1.UpdateModeInPlaceIfPossible)
		canary := createMD(ns, "canary", "nginx:2", 10)
		setAnnotation(canary, appsv1beta1.PartitionAnnotation, "8")
		canaryStatus := func(updated int32, reason string) {
			setStatus(canary, func(cur *appsv1beta1.MyDeployment) {
				cur.Status.ObservedGeneration = cur.Generation
				cur.Status.CurrentRevision, cur.Status.UpdateRevision = "canary-1", "canary-2"
				cur.Status.Replicas, cur.Status.ReadyReplicas, cur.Status.AvailableReplicas = 10, 10, 10
				cur.Status.UpdatedReplicas = updated
				cur.Status.Conditions = []appsv1.DeploymentCondition{progressing(corev1.ConditionTrue, reason)}
			})
		}
		canaryStatus(1, appsv1beta1.ReasonRevisionUpdated)
		header := []string{"NAME", "READY", "UP-TO-DATE", "AVAILABLE", "REVISION", "STATUS", "AGE",
			"PARTITION", "UPDATE-MODE", "CONTAINERS", "IMAGES", "SELECTOR"}
		wide := func() [][]string {
			r := runPlugin(ns, "get", "-o", "wide")
			Expect(r.code).To(Equal(0), r.err)
			table := rows(r.out)
			for _, row := range table[1:] {
				row[6] = "AGE" // the clock is not the point here
			}
			return table
		}

		Expect(wide()).To(Equal([][]string{header,
			{"api", "0/2", "0", "0", "<none>", "Progressing", "AGE", "<none>", "InPlaceIfPossible", "app", "nginx:1", "app=api"},
			{"canary", "10/10", "1", "10", "<none>", "Progressing", "AGE", "8", "<none>", "app", "nginx:2", "app=canary"},
		}))

		By("held once the controller says so")
		canaryStatus(2, appsv1beta1.ReasonPartitionAvailable)
		Expect(wide()[2]).To(Equal(
			[]string{"canary", "10/10", "2", "10", "<none>", "Held at partition 8", "AGE", "8(held)", "<none>", "app", "nginx:2", "app=canary"}))

		By("a hook's Job running, a wave baking, a step the weight holds, a hook failed: each said")
		for reason, want := range map[string]string{hooks.ReasonWaitingForHook: "Waiting for hook", status.ReasonWaveBaking: "Wave baking",
			appsv1beta1.ReasonWeightHolds: "Held by weight"} {
			canaryStatus(1, reason)
			Expect(wide()[2][5]).To(Equal(want))
		}
		setStatus(canary, func(cur *appsv1beta1.MyDeployment) {
			cur.Status.Conditions = []appsv1.DeploymentCondition{progressing(corev1.ConditionFalse, hooks.ReasonHookFailed)}
		})
		Expect(wide()[2][5]).To(Equal(hooks.ReasonHookFailed))
		canaryStatus(2, appsv1beta1.ReasonPartitionAvailable)

		By("not held at a partition changed since")
		setAnnotation(canary, appsv1beta1.PartitionAnnotation, "50%")
		Expect(wide()[2][7]).To(Equal("50%"))

		By("the plain table is unchanged")
		r := runPlugin(ns, "get", "canary")
		Expect(rows(r.out)[0]).To(Equal(header[:7]))
	})

	It("refuses other output formats, as kubectl does", func() {
		r := runPlugin(newNamespace(), "get", "-o", "custom-columns=NAME:.metadata.name")
		Expect(r.code).To(Equal(1))
		Expect(r.err).To(Equal(`error: unable to match a printer suitable for the output format "custom-columns=NAME:.metadata.name", ` +
			`allowed formats are: go-template,go-template-file,json,jsonpath,jsonpath-as-json,jsonpath-file,name,wide,yaml` + "\n"))
	})
})
