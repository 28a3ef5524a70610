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

package real

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mydeployment-io/mydeployment-operator/test/utils"
)

// hookTemplate is a hook's template Job as a user writes it: suspended, no
// retry, one container of the shell image running a script (name, image,
// script).
const hookTemplate = `apiVersion: batch/v1
kind: Job
metadata: {name: %[1]s, labels: {team: release}}
spec:
  suspend: true
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      securityContext: {runAsNonRoot: true, runAsUser: 65532}
      containers:
      - name: hook
        image: %[2]q
        command: ["sh", "-c", %[3]q]
`

// Rollout hooks (issue 53) on real-0: the manager (in its pods) makes each
// hook's Job from the template Job the user wrote; kube-controller-manager's
// Job controller runs it, its pod a real container of the shell image on
// real-0's kubelet, and its exit status is the hook's verdict. What a user
// sees: the Jobs, their pods and logs, the MyDeployment's conditions and
// events, the revisions of its pods and what those answer.
var _ = Describe("rollout hooks whose Jobs run on real-0", Ordered, func() {
	const ns = "real-hooks"
	namespace(ns)

	plugin := func(args ...string) string {
		GinkgoHelper()
		out, err := utils.Run(exec.Command(filepath.Join(projectDir, "bin", "kubectl-mydeployment"), append([]string{"-n", ns}, args...)...))
		Expect(err).NotTo(HaveOccurred(), out)
		return out
	}
	// template writes (or replaces, as a user fixing it would) the
	// template Job name running script.
	template := func(name, script string) {
		GinkgoHelper()
		kubectl("-n", ns, "delete", "job", name, "--ignore-not-found", "--wait=true")
		apply(fmt.Sprintf(hookTemplate, name, testsh, script), "-n", ns)
	}
	get := func(md, jsonpath string) func() string {
		return func() string {
			out, _ := utils.Kubectl("-n", ns, "get", "md", md, "-o", "jsonpath="+jsonpath)
			return out
		}
	}
	progressing := func(md string) func() string {
		return get(md, `{.status.conditions[?(@.type=="Progressing")].status} {.status.conditions[?(@.type=="Progressing")].reason}: {.status.conditions[?(@.type=="Progressing")].message}`)
	}
	replicaFailure := func(md string) func() string {
		return get(md, `{.status.conditions[?(@.type=="ReplicaFailure")].reason}: {.status.conditions[?(@.type=="ReplicaFailure")].message}`)
	}
	// newRevision patches md's template and returns the revision it rolls
	// from and the one it rolls to, once the status names it.
	newRevision := func(md, patch string) (from, to string) {
		GinkgoHelper()
		from = get(md, "{.status.currentRevision}")()
		Expect(from).NotTo(BeEmpty())
		kubectl("-n", ns, "patch", "md", md, "--type=json", "-p", patch)
		Eventually(get(md, "{.status.updateRevision}"), 30*time.Second, 250*time.Millisecond).ShouldNot(Equal(from))
		return from, get(md, "{.status.updateRevision}")()
	}
	image := func(version string) string {
		return fmt.Sprintf(`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":%q}]`, testweb(version))
	}
	job := func(name string) *batchv1.Job {
		j, err := clientset.BatchV1().Jobs(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return nil
		}
		return j
	}
	// finished is what the Job controller says of the Job: Complete, Failed, or "".
	finished := func(name string) func() string {
		return func() string {
			j := job(name)
			if j == nil {
				return ""
			}
			for _, c := range j.Status.Conditions {
				if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
					return string(c.Type)
				}
			}
			return ""
		}
	}
	// ranOnRealNode checks the Job's one pod: a real container on real-0
	// that exited with code, its log saying logged.
	ranOnRealNode := func(name string, code int32, logged string) {
		GinkgoHelper()
		ps := pods(ns, batchv1.JobNameLabel+"="+name)
		Expect(ps).To(HaveLen(1), "the Job %s ran one pod", name)
		p := ps[0]
		Expect(p.Spec.NodeName).To(Equal(node), p.Name)
		Expect(p.Status.ContainerStatuses).To(HaveLen(1))
		term := p.Status.ContainerStatuses[0].State.Terminated
		Expect(term).NotTo(BeNil(), "%s: its container ended", p.Name)
		Expect(term.ExitCode).To(Equal(code), p.Name)
		Expect(term.ContainerID).To(HavePrefix("containerd://"), p.Name)
		Expect(p.Status.ContainerStatuses[0].ImageID).To(HaveSuffix("@"+digests[testsh]), p.Name)
		Expect(kubectl("-n", ns, "logs", "job/"+name)).To(ContainSubstring(logged))
	}
	// podsOf are the pods of app of revision rev, those being deleted left out.
	podsOf := func(app, rev string) []corev1.Pod {
		GinkgoHelper()
		return slices.DeleteFunc(pods(ns, "app="+app), func(p corev1.Pod) bool { return p.Labels["controller-revision-hash"] != rev })
	}
	hookJobs := func(point string) []string {
		GinkgoHelper()
		list, err := clientset.BatchV1().Jobs(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "apps.mydeployment.io/hook=" + point})
		Expect(err).NotTo(HaveOccurred())
		var names []string
		for _, j := range list.Items {
			names = append(names, j.Name)
		}
		slices.Sort(names)
		return names
	}
	events := func(md, reason string) string {
		return kubectl("-n", ns, "get", "events", "--field-selector", "involvedObject.kind=MyDeployment,involvedObject.name="+md+",reason="+reason,
			"-o", `jsonpath={range .items[*]}{.type} {.note}{.message}{"\n"}{end}`)
	}

	It("runs a pre hook's Job before the first pod of a new revision, and rolls out once it succeeded", func() {
		template("db-migrate", `echo "migrating $MYDEPLOYMENT_NAME to $MYDEPLOYMENT_REVISION ($MYDEPLOYMENT_HOOK)"; sleep 5; echo migrated`)
		apply(fmt.Sprintf(webMyDeployment, "web", `apps.mydeployment.io/hooks: '{"pre": {"job": "db-migrate"}}'`, 2, testweb("v1")), "-n", ns)
		rolledOut(ns, "web", 2)
		Expect(hookJobs("pre")).To(BeEmpty(), "the first revision is no rollout: no pre hook")

		_, upd := newRevision("web", image("v2"))
		name := upd + "-pre"
		Eventually(progressing("web"), 30*time.Second, 250*time.Millisecond).Should(
			Equal("True WaitingForHook: waiting for Job " + name + " (pre) to succeed"))
		j := job(name)
		Expect(j).NotTo(BeNil())
		Expect(metav1.GetControllerOf(j)).To(HaveField("Name", "web"), "owned by the MyDeployment")
		Expect(j.Labels).To(HaveKeyWithValue("team", "release"), "the template's labels")
		Expect(j.Labels).To(HaveKeyWithValue("apps.mydeployment.io/hook", "pre"))
		Expect(podsOf("web", upd)).To(BeEmpty(), "no pod of the new revision while the hook runs")

		By("the Job controller runs it on real-0; then the rollout goes, none of its pods older than the Job's success")
		Eventually(finished(name), time.Minute, 250*time.Millisecond).Should(Equal("Complete"))
		ranOnRealNode(name, 0, "migrating web to "+upd+" (pre)\nmigrated")
		rolledOut(ns, "web", 2)
		done := job(name).Status.CompletionTime
		Expect(done).NotTo(BeNil())
		for _, p := range podsOf("web", upd) {
			Expect(p.CreationTimestamp.Before(done)).To(BeFalse(), "%s created %s, the hook succeeded %s", p.Name, p.CreationTimestamp, done)
		}
		Expect(answers(pods(ns, "app=web"))).To(Equal([]string{"v2", "v2"}))
		Expect(hookJobs("pre")).To(Equal([]string{name}), "one Job, made once")
	})

	It("holds a rollout whose pre hook failed, with no pod of the new revision; rollout retry runs the fixed hook, and it goes", func() {
		template("db-migrate", `echo "migrating to $MYDEPLOYMENT_REVISION"; echo "error: the schema is locked" >&2; exit 1`)
		stable, upd := newRevision("web", `[{"op":"add","path":"/spec/template/spec/containers/0/args/-","value":"-version=v3"}]`)
		name := upd + "-pre"
		Eventually(finished(name), time.Minute, 250*time.Millisecond).Should(Equal("Failed"))
		ranOnRealNode(name, 1, "error: the schema is locked")

		By("held: Progressing False HookFailed naming the Job, ReplicaFailure, one warning; no pod of the new revision")
		Eventually(progressing("web"), 30*time.Second, 250*time.Millisecond).Should(And(
			HavePrefix("False HookFailed: Job "+name+" (pre) failed: BackoffLimitExceeded"),
			HaveSuffix("`kubectl mydeployment rollout retry` runs it again")))
		Expect(replicaFailure("web")()).To(HavePrefix("HookFailed: Job " + name + " (pre) failed: BackoffLimitExceeded"))
		Consistently(func(g Gomega) {
			g.Expect(podsOf("web", upd)).To(BeEmpty())
			g.Expect(podsOf("web", stable)).To(HaveLen(2))
		}, 10*time.Second, time.Second).Should(Succeed())
		Expect(answers(pods(ns, "app=web"))).To(Equal([]string{"v2", "v2"}))
		Expect(events("web", "HookFailed")).To(Equal("Warning Job " + name + " (pre) failed: BackoffLimitExceeded: Job has reached the specified backoff limit\n"))
		out, err := utils.Run(exec.Command(filepath.Join(projectDir, "bin", "kubectl-mydeployment"),
			"-n", ns, "rollout", "status", "web", "--timeout", "5s"))
		Expect(err).To(HaveOccurred(), "rollout status does not report a held rollout as done:\n%s", out)

		By("the user fixes the hook's template and runs rollout retry: a new Job, -r<hash>, succeeds and the rollout goes")
		template("db-migrate", `echo "migrating to $MYDEPLOYMENT_REVISION"; echo migrated`)
		Expect(plugin("rollout", "retry", "web")).To(Equal("mydeployment.apps.mydeployment.io/web retried\n"))
		var again string
		Eventually(func() []string { return hookJobs("pre") }, 30*time.Second, 250*time.Millisecond).Should(HaveLen(3))
		for _, n := range hookJobs("pre") {
			if strings.HasPrefix(n, name+"-r") {
				again = n
			}
		}
		Expect(again).NotTo(BeEmpty(), "the retry's Job: %v", hookJobs("pre"))
		Expect(job(name)).NotTo(BeNil(), "the failed Job stays, for its logs")
		Eventually(finished(again), time.Minute, 250*time.Millisecond).Should(Equal("Complete"))
		ranOnRealNode(again, 0, "migrated")
		rolledOut(ns, "web", 2)
		Expect(answers(pods(ns, "app=web"))).To(Equal([]string{"v3", "v3"}))
		Eventually(replicaFailure("web"), 30*time.Second, time.Second).Should(Equal(": "), "the failure is no longer reported")
		Expect(get("web", "{.status.currentRevision}")()).To(Equal(upd))
	})

	It("gates canary step 2 on its hook: the step's Job runs once its pods are available, and step 3 waits for it", func() {
		template("smoke-test", `echo "smoke testing $MYDEPLOYMENT_REVISION at $MYDEPLOYMENT_HOOK"; sleep 8; echo passed`)
		apply(fmt.Sprintf(webMyDeployment, "canary",
			`apps.mydeployment.io/canary-steps: "1, 50%, 100%", apps.mydeployment.io/hooks: '{"steps": {"2": {"job": "smoke-test"}}}'`,
			4, testweb("v1")), "-n", ns)
		rolledOut(ns, "canary", 4)

		_, upd := newRevision("canary", image("v2"))
		name := upd + "-step2"
		Eventually(func() *batchv1.Job { return job(name) }, time.Minute, 250*time.Millisecond).ShouldNot(BeNil())
		Expect(podsOf("canary", upd)).To(HaveLen(2), "made at step 2, 50%: two pods of the new revision")
		for _, p := range podsOf("canary", upd) {
			Expect(ready(&p)).To(BeTrue(), "%s: step 2's pods are available before its hook runs", p.Name)
		}
		Eventually(progressing("canary"), 10*time.Second, 250*time.Millisecond).Should(
			HaveSuffix("waiting for Job " + name + " (step2) to succeed"))
		Consistently(func() int { return len(podsOf("canary", upd)) }, 4*time.Second, 250*time.Millisecond).Should(Equal(2), "the step holds")

		By("the Job succeeds on real-0: step 3 goes, none of its pods older than the Job's success")
		Eventually(finished(name), time.Minute, 250*time.Millisecond).Should(Equal("Complete"))
		ranOnRealNode(name, 0, "smoke testing "+upd+" at step2\npassed")
		done := job(name).Status.CompletionTime
		step2 := podsOf("canary", upd)
		rolledOut(ns, "canary", 4)
		for _, p := range podsOf("canary", upd) {
			if !slices.ContainsFunc(step2, func(q corev1.Pod) bool { return q.UID == p.UID }) {
				Expect(p.CreationTimestamp.Before(done)).To(BeFalse(), "%s created %s, the hook succeeded %s", p.Name, p.CreationTimestamp, done)
			}
		}
		Expect(answers(pods(ns, "app=canary"))).To(Equal([]string{"v2", "v2", "v2", "v2"}))
		Expect(hookJobs("step2")).To(Equal([]string{name}))
	})

	It("rolls back to the revision before when a post hook under onFailure Abort fails", func() {
		template("notify", `echo "checking $MYDEPLOYMENT_REVISION"; echo "error: the release check failed" >&2; exit 1`)
		apply(fmt.Sprintf(webMyDeployment, "post", `apps.mydeployment.io/hooks: '{"post": {"job": "notify", "onFailure": "Abort"}}'`,
			2, testweb("v1")), "-n", ns)
		rolledOut(ns, "post", 2)
		Expect(hookJobs("post")).To(BeEmpty(), "the first revision is no rollout: no post hook")

		stable, upd := newRevision("post", image("v2"))
		name := upd + "-post"
		By("the post hook runs once the new revision is current and complete")
		Eventually(func() *batchv1.Job { return job(name) }, 2*time.Minute, 250*time.Millisecond).ShouldNot(BeNil())
		Expect(get("post", "{.status.currentRevision}")()).To(Equal(upd))
		Expect(podsOf("post", upd)).To(HaveLen(2))

		By("it fails on real-0: every pod goes back to the revision before, the spec unchanged")
		Eventually(finished(name), time.Minute, 250*time.Millisecond).Should(Equal("Failed"))
		ranOnRealNode(name, 1, "error: the release check failed")
		Eventually(progressing("post"), 30*time.Second, 250*time.Millisecond).Should(
			ContainSubstring("RolloutAborted: "))
		Expect(progressing("post")()).To(ContainSubstring("hook Job " + name + " (post) failed"))
		Expect(get("post", `{.metadata.annotations.apps\.mydeployment\.io/aborted-revision}`)()).To(Equal(upd))
		Eventually(func(g Gomega) {
			g.Expect(podsOf("post", stable)).To(HaveLen(2))
			g.Expect(pods(ns, "app=post")).To(HaveLen(2))
			for _, p := range pods(ns, "app=post") {
				g.Expect(ready(&p)).To(BeTrue(), p.Name)
			}
		}, 2*time.Minute, time.Second).Should(Succeed())
		Expect(answers(pods(ns, "app=post"))).To(Equal([]string{"v1", "v1"}))
		Eventually(get("post", "{.status.currentRevision}"), 30*time.Second, time.Second).Should(Equal(stable))
		Expect(get("post", "{.spec.template.spec.containers[0].image}")()).To(Equal(testweb("v2")), "the spec is not written")
		Expect(events("post", "HookFailed")).To(ContainSubstring("Warning Job " + name + " (post) failed"))
		Consistently(func() []string { return hookJobs("post") }, 5*time.Second, time.Second).Should(Equal([]string{name}),
			"no Job made again while aborted")
	})
})
