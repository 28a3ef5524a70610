// Package inflight is what an operator upgrade must leave alone: workloads
// in each state a rollout can be in when the upgrade lands, made by the old
// operator and checked under the new one. The OLM v0 and OLM v1 suites
// (test/e2e/olm, test/e2e/olmv1) both drive it:
//
//	w := inflight.Create(ns, pluginPath) // old operator running (CreateWith: other images)
//	w.WaitSettled()                      // the canary held at its pause
//	w.StartInPlace()                     // partway through an in-place update
//	w.Snapshot()
//	... the upgrade; the old manager stops ...
//	w.ExpectUnderWay()                   // the in-place update is in flight
//	... the new manager starts ...
//	w.ExpectKept()                       // every UID, the hold, Ready
//	w.ExpectGoesOn()                     // promote, and a rollout through the PDB
package inflight

import (
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck

	"github.com/mydeployment-io/mydeployment-operator/test/utils"
)

// The workloads, by name.
const (
	// Plain is a MyDeployment with no opt-in, settled.
	Plain = "plain"
	// Canary is held at the pause of its canary steps "1, pause, 100%":
	// 1 of 3 pods on the new template, until `rollout promote`.
	Canary = "canary"
	// InPlace updates its 5 pods in place one at a time, each available
	// only inPlaceMinReady after it restarts: an update that lasts long
	// enough for an upgrade to land in its middle.
	InPlace = "inplace"
	// Guarded rolls out through Evictions (respect-pdb) under its own
	// PodDisruptionBudget.
	Guarded = "guarded"
	// App is a five-line Application with a Service, an Ingress, an HPA
	// and a PodDisruptionBudget.
	App = "shop"
)

const (
	inPlaceReplicas = 5
	inPlaceMinReady = 15 // seconds
)

// Images are what the workloads run: Old at first, New after a template
// change, both serving on Port.
type Images struct {
	Old, New string
	Port     int
	// InPlaceMinReady is how long (seconds) each pod updated in place waits
	// to count as available: 15 if 0. Longer keeps the update under way
	// through a slower upgrade.
	InPlaceMinReady int
}

// Fake are the images of the suites on kwok's fake nodes, where nothing is
// pulled or run.
var Fake = Images{Old: "nginx:1.27", New: "nginx:1.28", Port: 80}

// kinds are every kind whose objects the upgrade must leave as they are.
const kinds = "pods,controllerrevisions,mydeployments,applications,services,ingresses,horizontalpodautoscalers,poddisruptionbudgets"

// Workloads is the set in one namespace.
type Workloads struct {
	Namespace string
	// Plugin is bin/kubectl-mydeployment.
	Plugin string

	images   Images
	uids     map[string]string // kind/name -> uid
	restarts map[string]string // pod name -> its containers' restart counts
	readyAt  string            // when the Application last became Ready
}

func md(name, annotations, spec, image string) string {
	return fmt.Sprintf(`apiVersion: apps.mydeployment.io/v1beta1
kind: MyDeployment
metadata:
  name: %[1]s
  annotations: {%[2]s}
spec:
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec: {containers: [{name: web, image: %[4]s}]}
%[3]s
---
`, name, annotations, spec, image)
}

// Create applies the workloads into namespace ns (it must exist and be
// served by the operator), running the Fake images.
func Create(ns, plugin string) *Workloads {
	GinkgoHelper()
	return CreateWith(ns, plugin, Fake)
}

// CreateWith is Create with the images img (a real node's: images it can
// pull and run).
func CreateWith(ns, plugin string, img Images) *Workloads {
	GinkgoHelper()
	w := &Workloads{Namespace: ns, Plugin: plugin, images: img}
	By("creating workloads in " + ns + ": a plain MyDeployment, a canary, one to update in place, one behind a PodDisruptionBudget, an Application")
	yaml := md(Plain, "", "  replicas: 2", img.Old) +
		md(Canary, `apps.mydeployment.io/canary-steps: "1, pause, 100%"`, "  replicas: 3", img.Old) +
		md(InPlace, `apps.mydeployment.io/update-mode: InPlaceIfPossible`, fmt.Sprintf(
			"  replicas: %d\n  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 0, maxUnavailable: 1}}", inPlaceReplicas), img.Old) +
		md(Guarded, `apps.mydeployment.io/respect-pdb: "true"`, "  replicas: 2", img.Old) +
		fmt.Sprintf(`apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: %[1]s}
spec: {maxUnavailable: 1, selector: {matchLabels: {app: %[1]s}}}
---
apiVersion: apps.mydeployment.io/v1beta1
kind: Application
metadata: {name: %[2]s}
spec:
  deployment:
    image: %[3]s
    port: %[4]d
  service: {}
  ingress:
    rules: [{host: shop.example.com}]
  autoscaling: {minReplicas: 1, maxReplicas: 3}
  disruptionBudget: {maxUnavailable: 1}
`, Guarded, App, img.Old, img.Port)
	out, err := utils.KubectlStdin(yaml, "-n", ns, "apply", "-f", "-")
	Expect(err).NotTo(HaveOccurred(), out)
	return w
}

func (w *Workloads) get(path string, args ...string) func() string {
	return utils.JSONPath(path, append([]string{"-n", w.Namespace}, args...)...)
}

func (w *Workloads) kubectl(args ...string) string {
	GinkgoHelper()
	out, err := utils.Kubectl(append([]string{"-n", w.Namespace}, args...)...)
	Expect(err).NotTo(HaveOccurred(), out)
	return out
}

// available is "updated/available/replicas observed=generation" of a MyDeployment.
func (w *Workloads) available(name string) func() string {
	return w.get("{.status.updatedReplicas}/{.status.availableReplicas}/{.status.replicas} {.status.observedGeneration}={.metadata.generation}", "md", name)
}

// settledAt polls MyDeployment name until its n pods are updated and
// available and its generation observed: "settled", or what it is.
func (w *Workloads) settledAt(name string, n int) func() string {
	return func() string {
		st := w.available(name)()
		counts, gens, _ := strings.Cut(st, " ")
		observed, gen, _ := strings.Cut(gens, "=")
		if counts == settled(n) && observed == gen && gen != "" {
			return "settled"
		}
		return st
	}
}

func (w *Workloads) progressing(name string) func() string {
	return w.get(`{.status.conditions[?(@.type=="Progressing")].reason}: {.status.conditions[?(@.type=="Progressing")].message}`, "md", name)
}

func settled(n int) string {
	return fmt.Sprintf("%[1]d/%[1]d/%[1]d", n)
}

// WaitSettled waits for every workload to be available, then changes the
// canary's template and waits until it is held at its pause.
func (w *Workloads) WaitSettled() {
	GinkgoHelper()
	for name, n := range map[string]int{Plain: 2, Canary: 3, InPlace: inPlaceReplicas, Guarded: 2, App: 1} {
		Eventually(w.settledAt(name, n), 2*time.Minute, time.Second).Should(Equal("settled"), name)
	}
	Eventually(w.get(`{.status.conditions[?(@.type=="Ready")].status}`, "mdapp", App), 2*time.Minute, time.Second).
		Should(Equal("True"), "the Application is Ready: every child there, its Service with an endpoint")
	for _, child := range []string{"service", "ingress", "hpa", "pdb"} {
		w.kubectl("get", child, App)
	}

	By("a new template for the canary: one pod moves, then it waits for a promote")
	w.kubectl("patch", "md", Canary, "--type=json", "-p",
		`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"`+w.images.New+`"}]`)
	Eventually(w.progressing(Canary), time.Minute, time.Second).Should(Equal("CanaryPaused: step 2 of 3: paused until promote"))
	Expect(w.available(Canary)()).To(HavePrefix("1/3/3 "))
}

func (w *Workloads) minReady() int {
	if w.images.InPlaceMinReady > 0 {
		return w.images.InPlaceMinReady
	}
	return inPlaceMinReady
}

// StartInPlace changes the in-place workload's image and waits until the
// update is under way: a pod started, not all of them done.
func (w *Workloads) StartInPlace() {
	GinkgoHelper()
	By(fmt.Sprintf("an image change updating %d pods in place, one at a time, each available %d s after its restart", inPlaceReplicas, w.minReady()))
	w.kubectl("patch", "md", InPlace, "--type=json", "-p", fmt.Sprintf(
		`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"%s"},{"op":"add","path":"/spec/minReadySeconds","value":%d}]`,
		w.images.New, w.minReady()))
	Eventually(w.get("{.status.updatedReplicas}", "md", InPlace), time.Minute, 200*time.Millisecond).
		ShouldNot(BeElementOf("", "0"), "the first pod is on its way")
}

// uidsNow lists every object of kinds in the namespace as kind/name -> uid.
func (w *Workloads) uidsNow() map[string]string {
	GinkgoHelper()
	out := w.kubectl("get", kinds, "-o", `jsonpath={range .items[*]}{.kind}/{.metadata.name}={.metadata.uid}{"\n"}{end}`)
	uids := map[string]string{}
	for _, l := range utils.GetNonEmptyLines(out) {
		k, uid, _ := strings.Cut(l, "=")
		uids[k] = uid
	}
	return uids
}

// restartsNow lists every pod's containers' restart counts, "0 0" for two
// containers that never restarted.
func (w *Workloads) restartsNow() map[string]string {
	GinkgoHelper()
	out := w.kubectl("get", "pods", "-o", `jsonpath={range .items[*]}{.metadata.name}={.status.containerStatuses[*].restartCount}{"\n"}{end}`)
	restarts := map[string]string{}
	for _, l := range utils.GetNonEmptyLines(out) {
		pod, counts, _ := strings.Cut(l, "=")
		restarts[pod] = counts
	}
	return restarts
}

// Snapshot records every object's UID, every container's restart count and
// when the Application became Ready.
func (w *Workloads) Snapshot() {
	GinkgoHelper()
	// A pod the previous release deleted before now (the canary's replaced
	// pod, still in its grace period) is gone by the check, and the upgrade
	// did not delete it (seen: "Pod/canary-...: deleted" after an upgrade
	// that deleted nothing): recorded once no pod is terminating.
	Eventually(w.get(`{.items[?(@.metadata.deletionTimestamp)].metadata.name}`, "pods"), 2*time.Minute, time.Second).
		Should(BeEmpty(), "pods still terminating before the snapshot")
	w.uids = w.uidsNow()
	w.restarts = w.restartsNow()
	w.readyAt = w.get(`{.status.conditions[?(@.type=="Ready")].lastTransitionTime}`, "mdapp", App)()
	Expect(w.readyAt).NotTo(BeEmpty())
	By(fmt.Sprintf("%d objects recorded in %s before the upgrade", len(w.uids), w.Namespace))
}

// changes lists what differs between the snapshot and now, kinds filtering
// the keys ("" all): created, deleted and re-created objects.
func (w *Workloads) changes(kinds ...string) []string {
	GinkgoHelper()
	now := w.uidsNow()
	var out []string
	of := func(key string) bool {
		kind, _, _ := strings.Cut(key, "/")
		return len(kinds) == 0 || slices.Contains(kinds, kind)
	}
	for k, uid := range w.uids {
		switch {
		case !of(k):
		case now[k] == "":
			out = append(out, k+": deleted")
		case now[k] != uid:
			out = append(out, fmt.Sprintf("%s: re-created (uid %s, was %s)", k, now[k], uid))
		}
	}
	for k := range now {
		if _, ok := w.uids[k]; !ok && of(k) {
			out = append(out, k+": created")
		}
	}
	slices.Sort(out)
	return out
}

// inPlacePods counts the in-place workload's pods and those whose spec
// runs the new image.
func (w *Workloads) inPlacePods() (all, moved int) {
	GinkgoHelper()
	images := strings.Fields(w.kubectl("get", "pods", "-l", "app="+InPlace, "-o", "jsonpath={.items[*].spec.containers[0].image}"))
	for _, img := range images {
		if img == w.images.New {
			moved++
		}
	}
	return len(images), moved
}

// ExpectUnderWay checks that the in-place update is still under way: some
// pods moved, not all. Between the old manager's stop and the new one's
// start (test-olm, test-olmv1) it is what the new manager is to finish;
// while OLM holds an upgrade (test-runbundle) it is what holds it.
func (w *Workloads) ExpectUnderWay() {
	GinkgoHelper()
	all, moved := w.inPlacePods()
	updated := w.get("{.status.updatedReplicas}", "md", InPlace)()
	By(fmt.Sprintf("the in-place update is under way: %d of %d pods on %s, status.updatedReplicas %s", moved, all, w.images.New, updated))
	Expect(all).To(Equal(inPlaceReplicas))
	Expect(moved).To(BeNumerically("<", inPlaceReplicas),
		"the in-place update finished before the upgrade landed: nothing was in flight (raise Images.InPlaceMinReady)")
	Expect(updated).NotTo(BeElementOf("", "0"), "the in-place update had started")
}

// ExpectKept checks, under the new manager, that the in-place update
// finishes in place and that the upgrade changed nothing: every object's
// UID (pods, ControllerRevisions, the Application's children: none
// created, deleted or re-created), the canary's hold and the Application's
// Ready since before the upgrade.
func (w *Workloads) ExpectKept() {
	GinkgoHelper()
	By("the in-place update finishes in place")
	Eventually(w.settledAt(InPlace, inPlaceReplicas), 5*time.Minute, time.Second).Should(Equal("settled"))

	By("every pod, ControllerRevision and child kept its UID; the upgrade made no revision")
	Expect(w.changes()).To(BeEmpty(), "objects the upgrade created, deleted or re-created")
	all, moved := w.inPlacePods()
	Expect([]int{all, moved}).To(Equal([]int{inPlaceReplicas, inPlaceReplicas}), "every pod runs the new image")
	restarts := strings.Fields(w.kubectl("get", "pods", "-l", "app="+InPlace, "-o", "jsonpath={.items[*].status.containerStatuses[0].restartCount}"))
	Expect(restarts).To(HaveEach("1"), "each container restarted once, in its pod")
	inPlace := map[string]bool{}
	for _, p := range strings.Fields(w.kubectl("get", "pods", "-l", "app="+InPlace, "-o", "jsonpath={.items[*].metadata.name}")) {
		inPlace[p] = true
	}
	var restarted []string
	for pod, now := range w.restartsNow() {
		if was, ok := w.restarts[pod]; ok && !inPlace[pod] && now != was {
			restarted = append(restarted, fmt.Sprintf("%s: restarts %s, were %s", pod, now, was))
		}
	}
	Expect(restarted).To(BeEmpty(), "containers the upgrade restarted (those updated in place aside)")
	for name, n := range map[string]int{Plain: 2, Guarded: 2, App: 1} {
		Expect(w.settledAt(name, n)()).To(Equal("settled"), name)
	}

	By("the canary is still held at its pause")
	Expect(w.progressing(Canary)()).To(Equal("CanaryPaused: step 2 of 3: paused until promote"))
	Expect(w.available(Canary)()).To(HavePrefix("1/3/3 "))

	By("the Application stayed Ready")
	Expect(w.get(`{.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].lastTransitionTime}`, "mdapp", App)()).
		To(Equal("True "+w.readyAt), "Ready, and not once otherwise since before the upgrade")
}

// ExpectGoesOn checks the new manager carries on what the old one left: the
// canary completes on `rollout promote` (with no new revision), and a
// rollout of the guarded workload goes through its PodDisruptionBudget by
// evictions.
func (w *Workloads) ExpectGoesOn() {
	GinkgoHelper()
	By("kubectl mydeployment rollout promote: the canary completes")
	out, err := utils.Run(exec.Command(w.Plugin, "-n", w.Namespace, "rollout", "promote", Canary))
	Expect(err).NotTo(HaveOccurred(), out)
	Eventually(w.settledAt(Canary, 3), 2*time.Minute, time.Second).Should(Equal("settled"))
	Eventually(w.progressing(Canary), time.Minute, time.Second).Should(HavePrefix("NewRevisionAvailable: "))
	Expect(w.changes("ControllerRevision")).To(BeEmpty(), "the promote made no revision")

	By("a rollout of the guarded workload goes through its PodDisruptionBudget")
	w.kubectl("patch", "md", Guarded, "--type=json", "-p",
		`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"`+w.images.New+`"}]`)
	Eventually(w.settledAt(Guarded, 2), 2*time.Minute, time.Second).Should(Equal("settled"))
	Eventually(func() string {
		return w.get(`{.items[*].message}`, "events", "--field-selector", "reason=Evicted,involvedObject.name="+Guarded)()
	}, time.Minute, time.Second).ShouldNot(BeEmpty(), "an Evicted event: pods went through the Eviction API")
	// The pods that stay: on a real node an evicted pod is listed until its
	// containers stop (deletionTimestamp set).
	images := func() []string {
		var staying []string
		out := w.kubectl("get", "pods", "-l", "app="+Guarded, "-o",
			`jsonpath={range .items[*]}{.spec.containers[0].image} {.metadata.deletionTimestamp}{"\n"}{end}`)
		for _, l := range utils.GetNonEmptyLines(out) {
			if f := strings.Fields(l); len(f) == 1 {
				staying = append(staying, f[0])
			}
		}
		return staying
	}
	Eventually(images, time.Minute, time.Second).Should(And(HaveLen(2), HaveEach(w.images.New)))
}
