package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/mydeployment-io/mydeployment-operator/test/utils"
)

// Moving a running Deployment's pods to a MyDeployment and back (issue 41),
// with the real kube-controller-manager: its garbage collector orphans, its
// ReplicaSet controller adopts, its Deployment controller adopts the
// ReplicaSet, its HPA and disruption controllers follow the scale target.
// One Deployment goes through every spec: migrated at rest, rolled, ejected
// (the plugin stopped after each step), taken mid-rollout (the plugin stopped
// after each step), ejected again and migrated with the manager killed
// after each step.
var _ = Describe("migrate and eject on a local cluster", Ordered, func() {
	const ns = "e2e-migrate"
	var cs *kubernetes.Clientset
	BeforeAll(func() {
		cs = clientset()
		// The hand-over makes the PDB's and the HPA's target a MyDeployment,
		// which kube-controller-manager must be able to map (seen: the suite's
		// first spec, its PDB stuck at expectedPods 0 with "no matches for
		// kind MyDeployment" for over a minute).
		waitForKCMToKnowTheCRDs()
		utils.MustKubectl("create", "namespace", ns)
		utils.MustApply(fmt.Sprintf(migrateObjects, ns))
		Eventually(utils.JSONPath("{.status.availableReplicas}", "-n", ns, "deployment", "web"), 2*time.Minute, time.Second).Should(Equal("10"))
		Eventually(func() int { return readyEndpoints(cs, ns) }, time.Minute, time.Second).Should(Equal(10))
	})
	AfterAll(func() {
		// A failed eject leaves its finalizer, which would hold the namespace.
		_, _ = utils.Kubectl("-n", ns, "patch", "md", "web", "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
		_, _ = utils.Kubectl("delete", "namespace", ns, "--wait=false")
	})

	It("migrates a Deployment at rest: the same pods, never fewer than 10 ready or 10 ready endpoints, none created or deleted", func() {
		uids := podUIDs(cs, ns)
		Expect(uids).To(HaveLen(10))
		w := watchPodsOf(cs, ns, "web")
		e := watchEndpoints(cs, ns, "web")
		start := time.Now()
		out, err := plugin("", "-n", ns, "migrate", "deployment/web", "--timeout", "2m")
		Expect(err).NotTo(HaveOccurred(), out)
		_, _ = fmt.Fprintf(GinkgoWriter, "migrate took %s:\n%s\n", time.Since(start).Round(time.Millisecond), out)
		Expect(out).To(And(ContainSubstring("10 pods handed over to mydeployment.apps.mydeployment.io/web, none restarted"),
			ContainSubstring("horizontalpodautoscaler.autoscaling/web now targets MyDeployment web")))
		Expect(out).NotTo(ContainSubstring("warning"))
		r := w.result()
		Expect(r.added).To(BeEmpty(), "no pod created")
		Expect(r.deleted).To(BeEmpty(), "no pod deleted")
		Expect(r.fewestReady).To(BeNumerically(">=", 10), "ready pods at every event (%d events)", r.events)
		Expect(e()).To(BeNumerically(">=", 10), "ready endpoints of the Service at every event")
		Expect(podUIDs(cs, ns)).To(Equal(uids))
		expectMigrated(ns, 10)
		Expect(utils.MustKubectl("-n", ns, "get", "hpa", "web", "-o", "jsonpath={.spec.scaleTargetRef.apiVersion}/{.spec.scaleTargetRef.kind}/{.spec.scaleTargetRef.name}")).
			To(Equal("apps.mydeployment.io/v1beta1/MyDeployment/web"))
		By("the PodDisruptionBudget needed nothing: it counts the MyDeployment's pods through its scale")
		Eventually(utils.JSONPath("{.status.expectedPods}/{.status.currentHealthy}/{.status.disruptionsAllowed}", "-n", ns, "pdb", "web"),
			time.Minute, time.Second).Should(Equal("10/10/1"))
	})

	It("rolls a later image change through the MyDeployment within its bounds", func() {
		w := watchPodsOf(cs, ns, "web")
		utils.MustKubectl("-n", ns, "patch", "md", "web", "--type=json",
			"-p", `[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"nginx:1.28"}]`)
		out, err := plugin("", "-n", ns, "rollout", "status", "web", "--timeout", "2m")
		Expect(err).NotTo(HaveOccurred(), out)
		Eventually(func() []string { return podImages(cs, ns) }, time.Minute, time.Second).Should(HaveEach("nginx:1.28"))
		r := w.result()
		Expect(r.mostLive).To(BeNumerically("<=", 13), "replicas + maxSurge (25%% of 10, rounded up)")
		Expect(r.fewestReady).To(BeNumerically(">=", 8), "replicas - maxUnavailable (25%% of 10, rounded down)")
		Expect(podUIDs(cs, ns)).To(HaveLen(10))
	})

	It("ejects it, stopped after each step: a Deployment with one ReplicaSet owning the same pods, rolled out, none created or deleted", func() {
		uids := podUIDs(cs, ns)
		w := watchPodsOf(cs, ns, "web")
		stoppedAfterEach(ejectSteps, nil, "-n", ns, "eject", "md/web", "--timeout", "2m")
		out, err := plugin("", "-n", ns, "eject", "md/web", "--timeout", "2m")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("deployment.apps/web runs its 10 pods"))
		r := w.result()
		Expect(r.added).To(BeEmpty(), "no pod created")
		Expect(r.deleted).To(BeEmpty(), "no pod deleted")
		Expect(r.fewestReady).To(BeNumerically(">=", 10))
		Expect(podUIDs(cs, ns)).To(Equal(uids))
		expectEjected(cs, ns, 10)
		out, err = utils.Kubectl("-n", ns, "rollout", "status", "deployment/web", "--timeout=1m")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring(`deployment "web" successfully rolled out`))
	})

	It("migrates it mid-rollout, stopped after each step: two revisions, and the rollout completes under the MyDeployment within its bounds", func() {
		By("a rollout that waits for a readiness gate nobody sets: two ReplicaSets, 8 old pods ready and 5 new ones not")
		utils.MustKubectl("-n", ns, "patch", "deployment", "web", "--type=strategic", "-p",
			`{"spec":{"template":{"spec":{"readinessGates":[{"conditionType":"example.com/ready"}],"containers":[{"name":"web","image":"nginx:1.29"}]}}}}`)
		Eventually(utils.JSONPath("{.status.replicas}/{.status.updatedReplicas}/{.status.availableReplicas}", "-n", ns, "deployment", "web"),
			time.Minute, time.Second).Should(Equal("13/5/8"))
		Consistently(utils.JSONPath("{.status.replicas}/{.status.updatedReplicas}", "-n", ns, "deployment", "web"),
			2*time.Second, 500*time.Millisecond).Should(Equal("13/5"))
		uids := podUIDs(cs, ns)
		w := watchPodsOf(cs, ns, "web")
		stoppedAfterEach(migrateSteps, nil, "-n", ns, "migrate", "deployment/web", "--timeout", "2m")
		out, err := plugin("", "-n", ns, "migrate", "deployment/web", "--timeout", "2m")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(podUIDs(cs, ns)).To(Equal(uids))
		migrated := w.result()
		Expect(migrated.added).To(BeEmpty(), "no pod created")
		Expect(migrated.deleted).To(BeEmpty(), "no pod deleted")

		By("two revisions: 8 pods of the stable one (the current revision), 5 of the update revision")
		status := utils.MustKubectl("-n", ns, "get", "md", "web", "-o", "jsonpath={.status.currentRevision} {.status.updateRevision}")
		revs := strings.Fields(status)
		Expect(revs).To(HaveLen(2))
		Expect(revs[0]).NotTo(Equal(revs[1]))
		Expect(podsPerRevision(cs, ns)).To(Equal(map[string]int{revs[0]: 8, revs[1]: 5}))

		By("the gate set on every pod: the rollout completes, within maxSurge and maxUnavailable at every event")
		w = watchPodsOf(cs, ns, "web")
		stop := setReadinessGates(cs, ns, "example.com/ready")
		defer stop()
		out, err = plugin("", "-n", ns, "rollout", "status", "web", "--timeout", "2m")
		Expect(err).NotTo(HaveOccurred(), out)
		Eventually(func() []string { return podImages(cs, ns) }, time.Minute, time.Second).Should(And(HaveLen(10), HaveEach("nginx:1.29")))
		r := w.result()
		Expect(r.mostLive).To(BeNumerically("<=", 13))
		Expect(r.fewestReady).To(BeNumerically(">=", 8))
		onlyUpdated(cs, ns, uids, revs[1])
		expectMigrated(ns, 10)
	})

	It("ejects it and migrates it again with the manager killed after each step: none created or deleted", func() {
		out, err := plugin("", "-n", ns, "eject", "md/web", "--timeout", "2m")
		Expect(err).NotTo(HaveOccurred(), out)
		expectEjected(cs, ns, 10)
		uids := podUIDs(cs, ns)
		w := watchPodsOf(cs, ns, "web")
		stoppedAfterEach(migrateSteps, killManager, "-n", ns, "migrate", "deployment/web", "--timeout", "2m")
		out, err = plugin("", "-n", ns, "migrate", "deployment/web", "--timeout", "2m")
		Expect(err).NotTo(HaveOccurred(), out)
		r := w.result()
		Expect(r.added).To(BeEmpty(), "no pod created")
		Expect(r.deleted).To(BeEmpty(), "no pod deleted")
		Expect(r.fewestReady).To(BeNumerically(">=", 10))
		Expect(podUIDs(cs, ns)).To(Equal(uids))
		expectMigrated(ns, 10)
	})
})

// Who may run migrate and eject (docs/migrate.md): the plugin writes with
// its user's own rights. A user bound to the built-in edit ClusterRole in
// the namespace, with the project's editor role aggregated into it by
// kube-controller-manager (as make deploy and the bundle install it), runs
// migrate to the end; eject does every step but the last as that user and
// then stops: edit grants no delete on ControllerRevisions (apps), and
// neither does admin, who may not grant it either. With that one grant
// added, the same eject, run again, finishes.
var _ = Describe("migrate and eject as a user bound to edit", Ordered, func() {
	const (
		ns     = "e2e-migrate-edit"
		editor = "e2e-migrate-editor"
		admin  = "e2e-migrate-admin"
	)
	var cs *kubernetes.Clientset
	as := func(user string, args ...string) []string { return append([]string{"--as", user, "-n", ns}, args...) }
	BeforeAll(func() {
		cs = clientset()
		waitForKCMToKnowTheCRDs()
		utils.MustKubectl("apply", "-f", filepath.Join(projectDir, "config", "rbac", "mydeployment_editor_role.yaml"))
		utils.MustKubectl("create", "namespace", ns)
		utils.MustKubectl("-n", ns, "create", "rolebinding", "editor", "--clusterrole=edit", "--user="+editor)
		utils.MustKubectl("-n", ns, "create", "rolebinding", "admin", "--clusterrole=admin", "--user="+admin)
		By("kube-controller-manager aggregates the editor role into edit")
		Eventually(func() string {
			out, _ := utils.Kubectl(as(editor, "auth", "can-i", "create", "mydeployments.apps.mydeployment.io")...)
			return strings.TrimSpace(out)
		}, time.Minute, time.Second).Should(Equal("yes"))
		utils.MustApply(fmt.Sprintf(editObjects, ns))
		Eventually(utils.JSONPath("{.status.availableReplicas}", "-n", ns, "deployment", "web"), 2*time.Minute, time.Second).Should(Equal("3"))
	})
	AfterAll(func() {
		_, _ = utils.Kubectl("-n", ns, "patch", "md", "web", "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
		_, _ = utils.Kubectl("delete", "namespace", ns, "--wait=false")
		_, _ = utils.Kubectl("delete", "clusterrole", "mydeployment-editor-role")
	})

	It("the edit user migrates a Deployment: the same pods, the HPA re-pointed", func() {
		uids := podUIDs(cs, ns)
		out, err := plugin("", as(editor, "migrate", "deployment/web", "--timeout", "2m")...)
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("3 pods handed over to mydeployment.apps.mydeployment.io/web, none restarted"))
		Expect(podUIDs(cs, ns)).To(Equal(uids))
		expectMigrated(ns, 3)
	})

	It("the edit user's eject stops at deleting the ControllerRevisions, which neither edit nor admin grants; with that grant it finishes", func() {
		for _, user := range []string{editor, admin} {
			for _, check := range [][]string{{"list", "controllerrevisions.apps"}, {"delete", "controllerrevisions.apps"}} {
				out, _ := utils.Kubectl(as(user, append([]string{"auth", "can-i"}, check...)...)...)
				want := map[string]string{"list": "yes", "delete": "no"}[check[0]]
				Expect(strings.TrimSpace(out)).To(Equal(want), "%s may %v", user, check)
			}
		}
		uids := podUIDs(cs, ns)
		out, err := plugin("", as(editor, "eject", "md/web", "--timeout", "2m")...)
		_, _ = fmt.Fprintf(GinkgoWriter, "eject as %s:\n%s\n", editor, out)
		Expect(err).To(HaveOccurred(), out)
		Expect(out).To(And(
			ContainSubstring("finalizer apps.mydeployment.io/eject added"),
			MatchRegexp(`deployment\.apps/web owns replicaset\.apps/web-\S+`),
			ContainSubstring("horizontalpodautoscaler.autoscaling/web now targets Deployment web"),
			MatchRegexp(`deleting ControllerRevision web-\S+: .*forbidden: User "`+editor+`" cannot delete resource "controllerrevisions" in API group "apps"`)))
		By("left behind: the Deployment runs the pods, the MyDeployment waits on its finalizer")
		Expect(utils.MustKubectl("-n", ns, "get", "md", "web", "-o", "jsonpath={.metadata.finalizers}")).To(ContainSubstring("apps.mydeployment.io/eject"))
		Expect(utils.MustKubectl("-n", ns, "get", "controllerrevisions", "-o", "name")).NotTo(BeEmpty())
		Expect(podUIDs(cs, ns)).To(Equal(uids))

		By("an admin of the namespace may not grant what admin lacks; a cluster admin may")
		out, err = utils.Kubectl(as(admin, "create", "role", "revision-deleter", "--verb=delete", "--resource=controllerrevisions.apps")...)
		Expect(err).To(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("attempting to grant RBAC permissions not currently held"))

		By("granted delete on controllerrevisions, the same eject, run again, finishes")
		utils.MustKubectl("-n", ns, "create", "role", "revision-deleter", "--verb=delete", "--resource=controllerrevisions.apps")
		utils.MustKubectl("-n", ns, "create", "rolebinding", "revision-deleter", "--role=revision-deleter", "--user="+editor)
		out, err = plugin("", as(editor, "eject", "md/web", "--timeout", "2m")...)
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("deployment.apps/web runs its 3 pods"))
		Expect(podUIDs(cs, ns)).To(Equal(uids))
		expectEjected(cs, ns, 3)
	})

	It("a user with exactly the rights docs/migrate.md lists for migrate migrates, and one with those it lists for eject ejects", func() {
		rights := documentedRights()
		for i, command := range []string{"migrate", "eject"} {
			user := "e2e-migrate-docs-" + command
			var rules strings.Builder
			for _, r := range rights {
				if len(r.verbs[i]) > 0 {
					_, _ = fmt.Fprintf(&rules, "- apiGroups: [%q]\n  resources: [%q]\n  verbs: [%s]\n", r.group, r.resource, `"`+strings.Join(r.verbs[i], `", "`)+`"`)
				}
			}
			utils.MustApply(fmt.Sprintf("apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: %[1]s, namespace: %[2]s}\nrules:\n%[3]s"+
				"---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: %[1]s, namespace: %[2]s}\n"+
				"roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: %[1]s}\nsubjects: [{kind: User, name: %[1]s}]\n",
				user, ns, rules.String()))
		}
		uids := podUIDs(cs, ns)
		out, err := plugin("", as("e2e-migrate-docs-migrate", "migrate", "deployment/web", "--timeout", "2m")...)
		Expect(err).NotTo(HaveOccurred(), "docs/migrate.md's rights for migrate are not enough:\n%s", out)
		expectMigrated(ns, 3)
		out, err = plugin("", as("e2e-migrate-docs-eject", "eject", "md/web", "--timeout", "2m")...)
		Expect(err).NotTo(HaveOccurred(), "docs/migrate.md's rights for eject are not enough:\n%s", out)
		expectEjected(cs, ns, 3)
		Expect(podUIDs(cs, ns)).To(Equal(uids))
	})
})

// right is a row of docs/migrate.md's table of who may run the plugin:
// a resource and the verbs migrate (verbs[0]) and eject (verbs[1]) need.
type right struct {
	group, resource string
	verbs           [2][]string
}

// documentedRights reads the table under docs/migrate.md's "Who may run
// them".
func documentedRights() []right {
	GinkgoHelper()
	b, err := os.ReadFile(filepath.Join(projectDir, "docs", "migrate.md"))
	Expect(err).NotTo(HaveOccurred())
	text := string(b)
	start := strings.Index(text, "\n## Who may run them\n")
	Expect(start).To(BeNumerically(">=", 0), "docs/migrate.md has no section 'Who may run them'")
	text = text[start+1:]
	if end := strings.Index(text[1:], "\n## "); end >= 0 {
		text = text[:end+1]
	}
	code := regexp.MustCompile("`([^`]+)`")
	paren := regexp.MustCompile(`\s*\([^)]*\)`)
	var out []right
	for _, line := range strings.Split(text, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) != 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		names := code.FindAllStringSubmatch(cells[1], -1)
		r := right{resource: names[0][1]}
		if len(names) > 1 {
			r.group = names[1][1]
		}
		for i, cell := range cells[2:4] {
			for _, v := range strings.Split(paren.ReplaceAllString(cell, ""), ",") {
				if v = strings.TrimSpace(v); v != "" {
					r.verbs[i] = append(r.verbs[i], v)
				}
			}
		}
		out = append(out, r)
	}
	Expect(len(out)).To(BeNumerically(">=", 5), "read only %d rows of docs/migrate.md's rights table", len(out))
	return out
}

// editObjects is the Deployment and HPA the edit user moves; format it
// with the namespace.
const editObjects = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: %[1]s}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "nginx:1.27", resources: {requests: {cpu: 100m}}}]
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: %[1]s}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 3
  maxReplicas: 6
  metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}}]
`

// migrateObjects is the Deployment the specs move, with a Service, a
// PodDisruptionBudget and an HPA; format it with the namespace.
const migrateObjects = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: %[1]s}
spec:
  replicas: 10
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "nginx:1.27", ports: [{containerPort: 80}], resources: {requests: {cpu: 100m}}}]
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: %[1]s}
spec:
  selector: {app: web}
  ports: [{port: 80}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: %[1]s}
spec:
  maxUnavailable: 1
  selector: {matchLabels: {app: web}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: %[1]s}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 10
  maxReplicas: 20
  metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}}]
`

// plugin runs bin/kubectl-mydeployment, stopped after step unless it is "".
func plugin(step string, args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(projectDir, "bin", "kubectl-mydeployment"), args...)
	cmd.Env = append(os.Environ(), "MYDEPLOYMENT_PLUGIN_STOP_AFTER="+step)
	return utils.Run(cmd)
}

// The steps of migrate and eject, as MYDEPLOYMENT_PLUGIN_STOP_AFTER names them.
var (
	migrateSteps = []string{"create", "pause", "record", "delete-deployment", "delete-replicasets", "handover"}
	ejectSteps   = []string{"finalizer", "delete", "orphaned", "label", "replicaset", "deployment", "revisions"}
)

// stoppedAfterEach runs the plugin with args once per step, stopped after
// it as if killed there, and calls then (unless nil) after each run.
func stoppedAfterEach(steps []string, then func(), args ...string) {
	GinkgoHelper()
	for _, step := range steps {
		out, err := plugin(step, args...)
		Expect(err).To(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("error: stopped after step " + step))
		if then != nil {
			then()
		}
	}
}

// killManager SIGKILLs the suite's manager and starts it again.
func killManager() {
	Expect(manager.Process.Signal(syscall.SIGKILL)).To(Succeed())
	_ = manager.Wait()
	logFile, err := os.OpenFile(managerLog, os.O_APPEND|os.O_WRONLY, 0o644)
	Expect(err).NotTo(HaveOccurred())
	next := exec.Command(manager.Path, manager.Args[1:]...)
	next.Env, next.Stdout, next.Stderr = manager.Env, logFile, logFile
	Expect(next.Start()).To(Succeed())
	manager = next
}

// expectMigrated checks the MyDeployment web took over: replicas pods
// available, no adopt-from left, no Deployment or ReplicaSet left, no pod
// without a controller.
func expectMigrated(ns string, replicas int) {
	GinkgoHelper()
	want := fmt.Sprintf("%d/%d/%d", replicas, replicas, replicas)
	Eventually(utils.JSONPath("{.status.replicas}/{.status.updatedReplicas}/{.status.availableReplicas}", "-n", ns, "md", "web"),
		time.Minute, time.Second).Should(Equal(want))
	Expect(utils.MustKubectl("-n", ns, "get", "md", "web", "-o", "jsonpath={.metadata.annotations}")).NotTo(ContainSubstring("adopt-"))
	update := utils.MustKubectl("-n", ns, "get", "md", "web", "-o", "jsonpath={.status.updateRevision}")
	Eventually(func() []string {
		return utils.GetNonEmptyLines(utils.MustKubectl("-n", ns, "get", "pods", "-o",
			`jsonpath={range .items[*]}{.metadata.labels.controller-revision-hash}{"\n"}{end}`))
	}, time.Minute, time.Second).Should(And(HaveLen(replicas), HaveEach(update)), "every pod labelled with the revision it runs")
	Expect(utils.MustKubectl("-n", ns, "get", "deployments,replicasets", "-o", "name")).To(BeEmpty())
	Expect(orphans(ns)).To(BeEmpty())
}

// expectEjected checks Deployment web took over: one ReplicaSet it
// controls, controlling every pod; no MyDeployment, revision or orphan
// left; the HPA targets the Deployment.
func expectEjected(cs *kubernetes.Clientset, ns string, replicas int) {
	GinkgoHelper()
	rss, err := cs.AppsV1().ReplicaSets(ns).List(context.Background(), metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	Expect(rss.Items).To(HaveLen(1), "one ReplicaSet")
	rs := rss.Items[0]
	Expect(metav1.GetControllerOf(&rs).Kind).To(Equal("Deployment"))
	pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=web"})
	Expect(err).NotTo(HaveOccurred())
	Expect(pods.Items).To(HaveLen(replicas))
	for _, p := range pods.Items {
		Expect(metav1.GetControllerOf(&p).UID).To(Equal(rs.UID), "pod %s is the ReplicaSet's", p.Name)
		Expect(p.Labels).NotTo(HaveKey("controller-revision-hash"))
	}
	Expect(utils.MustKubectl("-n", ns, "get", "mydeployments,controllerrevisions", "-o", "name")).To(BeEmpty())
	Expect(utils.MustKubectl("-n", ns, "get", "hpa", "web", "-o", "jsonpath={.spec.scaleTargetRef.kind}")).To(Equal("Deployment"))
	Expect(orphans(ns)).To(BeEmpty())
}

// orphans are ns's pods with no controller.
func orphans(ns string) []string {
	out := utils.MustKubectl("-n", ns, "get", "pods", "-o", "json")
	var list corev1.PodList
	Expect(json.Unmarshal([]byte(out), &list)).To(Succeed())
	var names []string
	for _, p := range list.Items {
		if metav1.GetControllerOf(&p) == nil {
			names = append(names, p.Name)
		}
	}
	return names
}

// podUIDs are the UIDs of ns's live pods, sorted.
func podUIDs(cs *kubernetes.Clientset, ns string) []types.UID {
	var out []types.UID
	for _, p := range livePods(cs, ns) {
		out = append(out, p.UID)
	}
	slices.Sort(out)
	return out
}

func livePods(cs *kubernetes.Clientset, ns string) []corev1.Pod {
	GinkgoHelper()
	list, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	return slices.DeleteFunc(list.Items, func(p corev1.Pod) bool { return p.DeletionTimestamp != nil })
}

func podImages(cs *kubernetes.Clientset, ns string) []string {
	var out []string
	for _, p := range livePods(cs, ns) {
		out = append(out, p.Spec.Containers[0].Image)
	}
	return out
}

func podsPerRevision(cs *kubernetes.Clientset, ns string) map[string]int {
	out := map[string]int{}
	for _, p := range livePods(cs, ns) {
		out[p.Labels["controller-revision-hash"]]++
	}
	return out
}

// onlyUpdated are those of uids whose pod is of revision rev now.
func onlyUpdated(cs *kubernetes.Clientset, ns string, uids []types.UID, rev string) []types.UID {
	var out []types.UID
	for _, p := range livePods(cs, ns) {
		if slices.Contains(uids, p.UID) && p.Labels["controller-revision-hash"] == rev {
			out = append(out, p.UID)
		}
	}
	Expect(out).To(HaveLen(5), "the 5 pods of the new ReplicaSet stay through the rollout")
	return out
}

// setReadinessGates sets condition True on every pod of ns that lacks it,
// until stopped: what a load balancer controller would do.
func setReadinessGates(cs *kubernetes.Clientset, ns, condition string) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	patch := fmt.Appendf(nil, `{"status":{"conditions":[{"type":%q,"status":"True"}]}}`, condition)
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err == nil {
				for _, p := range list.Items {
					if !slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool { return string(c.Type) == condition }) {
						_, _ = cs.CoreV1().Pods(ns).Patch(ctx, p.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return func() { cancel(); <-done }
}

// readyEndpoints counts the ready endpoints of service's EndpointSlices.
func readyEndpoints(cs *kubernetes.Clientset, ns string) int {
	list, err := cs.DiscoveryV1().EndpointSlices(ns).List(context.Background(),
		metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=web"})
	Expect(err).NotTo(HaveOccurred())
	n := 0
	for i := range list.Items {
		n += readyIn(&list.Items[i])
	}
	return n
}

func readyIn(s *discoveryv1.EndpointSlice) int {
	n := 0
	for _, e := range s.Endpoints {
		if e.Conditions.Ready != nil && *e.Conditions.Ready {
			n++
		}
	}
	return n
}

// watchEndpoints follows service's EndpointSlices; the returned func stops
// and says the fewest ready endpoints at any event.
func watchEndpoints(cs *kubernetes.Clientset, ns, service string) func() int {
	GinkgoHelper()
	ctx, cancel := context.WithCancel(context.Background())
	opts := metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + service}
	list, err := cs.DiscoveryV1().EndpointSlices(ns).List(ctx, opts)
	Expect(err).NotTo(HaveOccurred())
	ready := map[string]int{}
	for i := range list.Items {
		ready[list.Items[i].Name] = readyIn(&list.Items[i])
	}
	sum := func() int {
		n := 0
		for _, r := range ready {
			n += r
		}
		return n
	}
	fewest := sum()
	opts.ResourceVersion = list.ResourceVersion
	wi, err := cs.DiscoveryV1().EndpointSlices(ns).Watch(ctx, opts)
	Expect(err).NotTo(HaveOccurred())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range wi.ResultChan() {
			if s, ok := ev.Object.(*discoveryv1.EndpointSlice); ok {
				if ev.Type == watch.Deleted {
					delete(ready, s.Name)
				} else {
					ready[s.Name] = readyIn(s)
				}
				fewest = min(fewest, sum())
			}
		}
	}()
	return func() int { cancel(); <-done; return fewest }
}
