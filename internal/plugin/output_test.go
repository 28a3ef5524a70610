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
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// kubectl runs the kubectl of the envtest assets against the suite's API
// server in ns, as a user would beside the plugin.
func kubectl(ns string, args ...string) (string, error) {
	bin := filepath.Join(filepath.Dir(testEnv.ControlPlane.APIServer.Path), "kubectl")
	cmd := exec.Command(bin, append([]string{"--kubeconfig", kubeconfig, "-n", ns}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), &exec.ExitError{ProcessState: cmd.ProcessState, Stderr: stderr.Bytes()}
	}
	return string(out), nil
}

// labelled creates a MyDeployment called name with labels on its metadata.
func labelled(ns, name string, labels map[string]string) *appsv1beta1.MyDeployment {
	md := createMD(ns, name, "nginx:1", 1)
	patch := md.DeepCopy()
	patch.Labels = labels
	Expect(k8sClient.Update(ctx, patch)).To(Succeed())
	return patch
}

var _ = Describe("get -o, as kubectl prints", func() {
	var ns string
	BeforeEach(func() {
		ns = newNamespace()
		labelled(ns, "web", map[string]string{"app": "web", "tier": "front"})
		labelled(ns, "api", map[string]string{"app": "api", "tier": "back"})
		labelled(ns, "batch", map[string]string{"app": "batch"})
	})

	It("prints names, JSONPath and go-templates as kubectl get does", func() {
		for _, args := range [][]string{
			{"-o", "name"},
			{"-o", "jsonpath={.items[*].metadata.name}"},
			{"-o", `go-template={{range .items}}{{.metadata.name}} {{.kind}}{{"\n"}}{{end}}`},
			{"web", "-o", "jsonpath={.apiVersion} {.kind} {.metadata.labels.tier}"},
			{"web", "-o", "name"},
		} {
			want, err := kubectl(ns, append([]string{"get", "mydeployments"}, args...)...)
			Expect(err).NotTo(HaveOccurred())
			r := runPlugin(ns, append([]string{"get"}, args...)...)
			Expect(r.code).To(Equal(0), r.err)
			Expect(r.out).To(Equal(want), "get %v", args)
		}
	})

	It("prints one object, or a List, with apiVersion and kind and no managedFields", func() {
		r := runPlugin(ns, "get", "web", "-o", "json")
		Expect(r.code).To(Equal(0), r.err)
		var one map[string]any
		Expect(json.Unmarshal([]byte(r.out), &one)).To(Succeed())
		Expect(one).To(HaveKeyWithValue("apiVersion", "apps.mydeployment.io/v1beta1"))
		Expect(one).To(HaveKeyWithValue("kind", "MyDeployment"))
		Expect(one["metadata"]).NotTo(HaveKey("managedFields"))

		r = runPlugin(ns, "get", "-o", "json")
		Expect(r.code).To(Equal(0), r.err)
		var list struct {
			APIVersion, Kind string
			Items            []map[string]any
		}
		Expect(json.Unmarshal([]byte(r.out), &list)).To(Succeed())
		Expect(list.APIVersion + " " + list.Kind).To(Equal("v1 List"))
		Expect(list.Items).To(HaveLen(3))
		Expect(list.Items[0]).To(HaveKeyWithValue("kind", "MyDeployment"))
	})

	It("round-trips -o yaml through kubectl apply --dry-run=server, one object and a List", func() {
		for _, args := range [][]string{{"web"}, {}} {
			r := runPlugin(ns, append(append([]string{"get"}, args...), "-o", "yaml")...)
			Expect(r.code).To(Equal(0), r.err)
			file := filepath.Join(GinkgoT().TempDir(), "md.yaml")
			Expect(os.WriteFile(file, []byte(r.out), 0o600)).To(Succeed())
			out, err := kubectl(ns, "apply", "--dry-run=server", "-f", file)
			Expect(err).NotTo(HaveOccurred(), "kubectl apply of:\n%s", r.out)
			Expect(out).To(ContainSubstring("mydeployment.apps.mydeployment.io/web"))
			Expect(out).To(ContainSubstring("(server dry run)"))
		}
	})

	It("filters with -l as kubectl does", func() {
		for _, sel := range []string{"tier=front", "tier==front", "tier!=front", "tier in (front,back)", "tier notin (front)",
			"tier", "!tier", "app=web,tier=front", "app=nope"} {
			want, err := kubectl(ns, "get", "mydeployments", "-l", sel, "-o", "name")
			Expect(err).NotTo(HaveOccurred())
			r := runPlugin(ns, "get", "-l", sel, "-o", "name")
			Expect(r.code).To(Equal(0), r.err)
			Expect(r.out).To(Equal(want), "-l %q", sel)
		}
		r := runPlugin(ns, "get", "-l", "tier=front")
		Expect(rows(r.out)).To(HaveLen(2))
		Expect(rows(r.out)[1][0]).To(Equal("web"))

		r = runPlugin(ns, "get", "-l", "tier in (front")
		Expect(r.code).To(Equal(1))
		Expect(r.err).To(HavePrefix(`error: unable to parse the selector "tier in (front": `))
		r = runPlugin(ns, "get", "web", "-l", "tier=front")
		Expect(r.err).To(Equal("error: name cannot be provided when a selector is specified\n"))
	})
})

var _ = Describe("get --watch", func() {
	It("prints the table, then a row for each change, until the command ends", func() {
		ns := newNamespace()
		web := createMD(ns, "web", "nginx:1", 2)
		var out, errOut syncBuffer
		cmd := NewRootCommand(Options{IOStreams: IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut}, Now: testNow})
		cmd.SetArgs([]string{"--kubeconfig", kubeconfig, "-n", ns, "get", "-w"})
		wctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- cmd.ExecuteContext(wctx) }()
		Eventually(out.String).Should(HavePrefix("NAME  READY"))

		rolled(web, 2, 2, 2, true, cond(appsv1beta1.ConditionProgressing, corev1.ConditionTrue, appsv1beta1.ReasonNewRevisionAvailable))
		Eventually(func() []string { return lastRow(out.String()) }).Should(
			Equal([]string{"web", "2/2", "2", "2", "<none>", "Available"}))
		setAnnotation(web, appsv1beta1.PartitionAnnotation, "1")
		rolled(web, 2, 1, 2, false, cond(appsv1beta1.ConditionProgressing, corev1.ConditionTrue, appsv1beta1.ReasonPartitionAvailable))
		Eventually(out.String).Should(ContainSubstring("Held at partition 1"))
		Expect(strings.Count(out.String(), "NAME")).To(Equal(1), "one header")

		stop()
		Eventually(done, 10*time.Second).Should(Receive(BeNil()))
		Expect(errOut.String()).To(BeEmpty())
	})
})

// lastRow is the first six fields of the last line of a table (AGE on).
func lastRow(table string) []string {
	lines := strings.Split(strings.TrimSpace(table), "\n")
	f := strings.Fields(lines[len(lines)-1])
	return f[:min(6, len(f))]
}

var _ = Describe("completion", func() {
	It("completes verbs, MyDeployment names and namespaces through cobra's __complete", func() {
		ns := newNamespace()
		createMD(ns, "web", "nginx:1", 1)
		createMD(ns, "worker", "nginx:1", 1)
		createMD(ns, "api", "nginx:1", 1)
		// As kubectl_complete-mydeployment runs it: __complete, then the words typed.
		complete := func(args ...string) []string {
			var out, errOut bytes.Buffer
			code := Run(append([]string{"__complete", "--kubeconfig", kubeconfig, "-n", ns}, args...),
				Options{IOStreams: IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut}})
			Expect(code).To(Equal(0), errOut.String())
			return strings.Split(strings.TrimSpace(out.String()), "\n")
		}
		Expect(complete("")).To(ContainElements(HavePrefix("get\t"), HavePrefix("rollout\t")))
		Expect(complete("rollout", "st")).To(Equal([]string{"status\tShow the status of the rollout", ":4"}))
		Expect(complete("get", "w")).To(Equal([]string{"web", "worker", ":4"}))
		Expect(complete("rollout", "status", "")).To(Equal([]string{"api", "web", "worker", ":4"}))
		Expect(complete("rollout", "undo", "api", "")).To(Equal([]string{":4"}), "one NAME only")
		Expect(complete("get", "-n", ns[:len(ns)-2])).To(ContainElement(ns))
	})
})
