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

package install

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mydeployment-io/mydeployment-operator/test/utils"
)

// The users of the roles test, known to RBAC only through the RoleBindings
// the test makes (kubectl --as impersonates them).
const (
	editor    = "e2e-editor" // bound to the built-in edit ClusterRole
	viewer    = "e2e-viewer" // bound to the built-in view ClusterRole
	rolesNS   = "roles-e2e"
	webMD     = `{"apiVersion":"apps.mydeployment.io/v1beta1","kind":"MyDeployment","metadata":{"name":"web"},"spec":{"replicas":1,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","image":"nginx:1.27"}]}}}}`
	shopApp   = `{"apiVersion":"apps.mydeployment.io/v1beta1","kind":"Application","metadata":{"name":"shop"},"spec":{"deployment":{"image":"nginx:1.27","replicas":1,"port":80},"service":{}}}`
	imagePath = "{.spec.template.spec.containers[0].image}"
)

// as runs kubectl in the roles namespace as user.
func as(user string, args ...string) (string, error) {
	return utils.Kubectl(append([]string{"-n", rolesNS, "--as", user}, args...)...)
}

// mustAs is as, failing on an error.
func mustAs(user string, args ...string) string {
	GinkgoHelper()
	out, err := as(user, args...)
	Expect(err).NotTo(HaveOccurred(), out)
	return out
}

// plugin runs the kubectl plugin (make plugin) in the roles namespace as user.
func plugin(user string, args ...string) string {
	GinkgoHelper()
	cmd := exec.Command(filepath.Join(projectDir, "bin", "kubectl-mydeployment"),
		append([]string{"-n", rolesNS, "--as", user}, args...)...)
	out, err := utils.Run(cmd)
	Expect(err).NotTo(HaveOccurred(), out)
	return out
}

// available waits until the MyDeployment has n pods, all of the update
// revision and available, running image.
func available(md string, n int, image string) {
	GinkgoHelper()
	Eventually(utils.JSONPath("{.status.updatedReplicas}/{.status.availableReplicas}/{.status.replicas} "+imagePath,
		"-n", rolesNS, "md", md), 2*time.Minute, 500*time.Millisecond).Should(Equal(fmt.Sprintf("%d/%d/%d %s", n, n, n, image)))
}

// editUserLifecycle: with the roles in config/rbac aggregated into the
// built-in ClusterRoles by kube-controller-manager (which envtest does not
// run, hence here), a user bound only to `edit` in a namespace creates,
// scales and rolls back a MyDeployment and an Application, and a user bound
// to `view` reads them and changes nothing.
func editUserLifecycle() {
	utils.MustKubectl("create", "namespace", rolesNS)
	utils.MustKubectl("-n", rolesNS, "create", "rolebinding", "editor", "--clusterrole=edit", "--user="+editor)
	utils.MustKubectl("-n", rolesNS, "create", "rolebinding", "viewer", "--clusterrole=view", "--user="+viewer)

	By("the built-in roles carry ours once kube-controller-manager aggregates them")
	canI := func(user, verb, resource string) func() string {
		return func() string {
			out, _ := as(user, "auth", "can-i", verb, resource)
			return strings.TrimSpace(out)
		}
	}
	for _, r := range []string{"mydeployments", "applications"} {
		for _, verb := range []string{"create", "delete", "patch"} {
			Eventually(canI(editor, verb, r+".apps.mydeployment.io"), time.Minute, time.Second).Should(Equal("yes"), verb+" "+r)
		}
		Eventually(canI(editor, "patch", r+".apps.mydeployment.io/scale"), time.Minute, time.Second).Should(Equal("yes"), r+"/scale")
		Eventually(canI(viewer, "list", r+".apps.mydeployment.io"), time.Minute, time.Second).Should(Equal("yes"), r)
		Expect(canI(viewer, "create", r+".apps.mydeployment.io")()).To(Equal("no"), r)
		Expect(canI(viewer, "patch", r+".apps.mydeployment.io/scale")()).To(Equal("no"), r+"/scale")
	}

	By("the edit user creates, scales (kubectl scale md), changes and rolls back (the plugin's rollout undo) a MyDeployment")
	out, err := utils.KubectlStdin(webMD, "-n", rolesNS, "--as", editor, "create", "-f", "-")
	Expect(err).NotTo(HaveOccurred(), out)
	available("web", 1, "nginx:1.27")
	mustAs(editor, "scale", "md", "web", "--replicas=2")
	available("web", 2, "nginx:1.27")
	// kubectl set image refuses custom resources: a patch of the template.
	mustAs(editor, "patch", "md", "web", "--type=json",
		"-p", `[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"nginx:1.28"}]`)
	available("web", 2, "nginx:1.28")
	Expect(plugin(editor, "rollout", "history", "web")).To(MatchRegexp(`(?m)^1 `), "the editor reads the revisions")
	Expect(plugin(editor, "rollout", "undo", "web")).To(ContainSubstring("rolled back"))
	available("web", 2, "nginx:1.27")

	By("the edit user creates, scales (kubectl scale mdapp) and rolls back an Application (its spec: the Application owns its MyDeployment's template)")
	out, err = utils.KubectlStdin(shopApp, "-n", rolesNS, "--as", editor, "create", "-f", "-")
	Expect(err).NotTo(HaveOccurred(), out)
	available("shop", 1, "nginx:1.27")
	mustAs(editor, "scale", "mdapp", "shop", "--replicas=2")
	available("shop", 2, "nginx:1.27")
	mustAs(editor, "patch", "mdapp", "shop", "--type=merge", "-p", `{"spec":{"deployment":{"image":"nginx:1.28"}}}`)
	available("shop", 2, "nginx:1.28")
	mustAs(editor, "patch", "mdapp", "shop", "--type=merge", "-p", `{"spec":{"deployment":{"image":"nginx:1.27"}}}`)
	available("shop", 2, "nginx:1.27")
	Expect(plugin(editor, "rollout", "history", "shop")).To(MatchRegexp(`(?m)^3 `),
		"back to the first template: its revision renumbered, as a Deployment's rollback does")
	Eventually(utils.JSONPath(`{.status.conditions[?(@.type=="Ready")].status}`, "-n", rolesNS, "mdapp", "shop"),
		time.Minute, time.Second).Should(Equal("True"))

	By("the view user reads both kinds, and may not create, scale or change them")
	Expect(mustAs(viewer, "get", "md,mdapp", "-o", "name")).To(
		And(ContainSubstring("mydeployment.apps.mydeployment.io/web"), ContainSubstring("application.apps.mydeployment.io/shop")))
	for _, args := range [][]string{
		{"scale", "md", "web", "--replicas=1"},
		{"scale", "mdapp", "shop", "--replicas=1"},
		{"patch", "md", "web", "--type=merge", "-p", `{"spec":{"paused":true}}`},
		{"delete", "mdapp", "shop"},
	} {
		out, err := as(viewer, args...)
		Expect(err).To(HaveOccurred(), "%v", args)
		Expect(out).To(ContainSubstring("forbidden"), "%v", args)
	}
	out, err = utils.KubectlStdin(strings.Replace(webMD, `"name":"web"`, `"name":"viewers"`, 1),
		"-n", rolesNS, "--as", viewer, "create", "-f", "-")
	Expect(err).To(HaveOccurred())
	Expect(out).To(ContainSubstring("forbidden"))

	utils.MustKubectl("delete", "namespace", rolesNS, "--wait=false")
}
