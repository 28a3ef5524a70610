// Package configroll is issue 39's check for every way the operator is
// installed (OLM v0 in each install mode, OLM v1, dist/install.yaml): in a
// namespace the operator serves, a MyDeployment with
// rollout-on-config-change reading a ConfigMap (envFrom) and a Secret (a
// volume) rolls on an edit of either's data, and a plain MyDeployment beside
// it scales. It proves the install grants the config reads where the
// operator may create pods, and that the config watch starts under exactly
// that grant.
//
//	configroll.Check(ns) // the operator serves ns
package configroll

import (
	"fmt"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck

	"github.com/mydeployment-io/mydeployment-operator/test/utils"
)

const (
	// Reader opts in and reads ConfigMap "cfg" and Secret "sec".
	Reader = "config-reader"
	// Plain opts in to nothing.
	Plain = "config-plain"
)

func objects(ns string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, namespace: %[1]s}
data: {LEVEL: info}
---
apiVersion: v1
kind: Secret
metadata: {name: sec, namespace: %[1]s}
stringData: {password: one}
---
apiVersion: apps.mydeployment.io/v1beta1
kind: MyDeployment
metadata:
  name: %[2]s
  namespace: %[1]s
  annotations: {apps.mydeployment.io/rollout-on-config-change: "true"}
spec:
  replicas: 2
  selector: {matchLabels: {app: %[2]s}}
  template:
    metadata: {labels: {app: %[2]s}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        envFrom: [{configMapRef: {name: cfg}}]
        volumeMounts: [{name: sec, mountPath: /etc/sec}]
      volumes: [{name: sec, secret: {secretName: sec}}]
---
apiVersion: apps.mydeployment.io/v1beta1
kind: MyDeployment
metadata: {name: %[3]s, namespace: %[1]s}
spec:
  replicas: 1
  selector: {matchLabels: {app: %[3]s}}
  template:
    metadata: {labels: {app: %[3]s}}
    spec: {containers: [{name: web, image: nginx:1.27}]}
`, ns, Reader, Plain)
}

// settled is "updated/available/replicas" when a MyDeployment of n pods is
// rolled out and its generation observed, else what it is.
func settled(ns, name string, n int) func() string {
	return func() string {
		st := utils.JSONPath("{.status.updatedReplicas}/{.status.availableReplicas}/{.status.replicas} {.status.observedGeneration}={.metadata.generation}",
			"-n", ns, "md", name)()
		counts, gens, _ := strings.Cut(st, " ")
		observed, gen, _ := strings.Cut(gens, "=")
		if counts == fmt.Sprintf("%[1]d/%[1]d/%[1]d", n) && observed == gen && gen != "" {
			return "settled"
		}
		return st
	}
}

// hashes lists the distinct config-hash annotations of Reader's live pods.
func hashes(ns string) []string {
	out, _ := utils.Kubectl("-n", ns, "get", "pods", "-l", "app="+Reader, "-o",
		`jsonpath={range .items[*]}{.metadata.deletionTimestamp}|{.metadata.annotations.apps\.mydeployment\.io/config-hash}{"\n"}{end}`)
	var hs []string
	for _, l := range utils.GetNonEmptyLines(out) {
		if deleting, h, _ := strings.Cut(l, "|"); deleting == "" && !slices.Contains(hs, h) {
			hs = append(hs, h)
		}
	}
	slices.Sort(hs)
	return hs
}

// podUIDs lists the UIDs of the live pods of MyDeployment name.
func podUIDs(ns, name string) []string {
	out, _ := utils.Kubectl("-n", ns, "get", "pods", "-l", "app="+name, "-o",
		`jsonpath={range .items[*]}{.metadata.deletionTimestamp}|{.metadata.uid}{"\n"}{end}`)
	var uids []string
	for _, l := range utils.GetNonEmptyLines(out) {
		if deleting, uid, _ := strings.Cut(l, "|"); deleting == "" {
			uids = append(uids, uid)
		}
	}
	return uids
}

// Check runs the scenario in ns, which the running operator serves, and
// deletes what it made.
func Check(ns string) {
	GinkgoHelper()
	By("in " + ns + ": a MyDeployment reading a ConfigMap and a Secret, with rollout-on-config-change, and a plain one beside it")
	out, err := utils.KubectlStdin(objects(ns), "apply", "-f", "-")
	Expect(err).NotTo(HaveOccurred(), out)
	// What it made goes, pods too, before the caller goes on: suites that
	// count a namespace's pods (test-install's undeploy) come after it.
	defer func() {
		_, _ = utils.Kubectl("-n", ns, "delete", "md", Reader, Plain, "--cascade=foreground", "--wait=true", "--timeout=60s")
		_, _ = utils.Kubectl("-n", ns, "delete", "configmap/cfg", "secret/sec", "--wait=false")
		Eventually(func() string {
			out, _ := utils.Kubectl("-n", ns, "get", "pods", "-l", "app in ("+Reader+","+Plain+")", "-o", "name")
			return out
		}, time.Minute, time.Second).Should(BeEmpty(), "the scenario's pods are gone")
	}()
	Eventually(settled(ns, Reader, 2), 2*time.Minute, time.Second).Should(Equal("settled"), Reader)
	Eventually(settled(ns, Plain, 1), 2*time.Minute, time.Second).Should(Equal("settled"), Plain)
	Expect(hashes(ns)).To(HaveExactElements(HavePrefix("configmap/cfg=")),
		"the pods carry one config hash: the operator read the config (no ConfigAccessDenied)")

	for _, edit := range []struct{ what, patch string }{
		{"configmap/cfg", `{"data":{"LEVEL":"debug"}}`},
		{"secret/sec", `{"stringData":{"password":"two"}}`},
	} {
		By("an edit of " + edit.what + "'s data rolls every pod of " + Reader)
		before, h := podUIDs(ns, Reader), hashes(ns)
		revision := utils.JSONPath("{.status.updateRevision}", "-n", ns, "md", Reader)
		was := revision()
		out, err := utils.Kubectl("-n", ns, "patch", edit.what, "--type=merge", "-p", edit.patch)
		Expect(err).NotTo(HaveOccurred(), out)
		Eventually(revision, time.Minute, time.Second).ShouldNot(Equal(was), "a new revision")
		Eventually(func() string {
			if st := settled(ns, Reader, 2)(); st != "settled" {
				return st
			}
			now := podUIDs(ns, Reader)
			for _, uid := range now {
				if slices.Contains(before, uid) {
					return "pod " + uid + " not replaced"
				}
			}
			if hs := hashes(ns); len(hs) != 1 || slices.Equal(hs, h) {
				return fmt.Sprintf("config hashes %v, were %v", hs, h)
			}
			return fmt.Sprintf("%d pods replaced", len(now))
		}, 2*time.Minute, time.Second).Should(Equal("2 pods replaced"))
	}

	By(Plain + " reconciles beside it: it scales")
	out, err = utils.Kubectl("-n", ns, "scale", "md", Plain, "--replicas=2")
	Expect(err).NotTo(HaveOccurred(), out)
	Eventually(settled(ns, Plain, 2), time.Minute, time.Second).Should(Equal("settled"), Plain)
}
