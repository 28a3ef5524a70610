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

package e2e

import (
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mydeployment-io/mydeployment-operator/test/utils"
)

// The Application sample (issue 19) as a user drives it with kubectl. Its
// Service's EndpointSlices are written by kube-controller-manager's
// EndpointSlice controller from the pods kwok runs (kwok gives them IPs), so
// the endpoints the Application reports are real ones.
var _ = Describe("Application on a local cluster", Ordered, func() {
	const (
		ns   = "e2e-application"
		name = "application-sample"
		// The pods' label when the Application leaves the selector out.
		pods = "app.kubernetes.io/name=" + name
	)
	BeforeAll(func() {
		_, err := utils.Kubectl("create", "namespace", ns)
		Expect(err).NotTo(HaveOccurred())
	})
	AfterAll(func() {
		_, _ = utils.Kubectl("delete", "namespace", ns, "--wait=false")
	})

	kubectl := func(args ...string) string {
		GinkgoHelper()
		out, err := utils.Kubectl(append([]string{"-n", ns}, args...)...)
		Expect(err).NotTo(HaveOccurred(), out)
		return out
	}
	get := func(kind, jsonpath string) func() string {
		return func() string {
			out, _ := utils.Kubectl("-n", ns, "get", kind, name, "-o", "jsonpath="+jsonpath)
			return out
		}
	}
	// ready is what `kubectl get mdapp` would have a user wait for: Ready=True
	// for the current generation.
	ready := get("mdapp", `{.status.conditions[?(@.type=="Ready")].status}/{.status.observedGeneration}/{.metadata.generation}`)
	readyNow := func() string {
		g := get("mdapp", "{.metadata.generation}")()
		return "True/" + g + "/" + g
	}
	// live lists one field per pod that is not terminating.
	live := func(field string) []string {
		var out []string
		for _, l := range utils.GetNonEmptyLines(kubectl("get", "pods", "-l", pods, "-o",
			`jsonpath={range .items[*]}{.metadata.deletionTimestamp}|`+field+`{"\n"}{end}`)) {
			if deleting, value, _ := strings.Cut(l, "|"); deleting == "" {
				out = append(out, value)
			}
		}
		sort.Strings(out)
		return out
	}
	// endpoints are the ready addresses of the Service's EndpointSlices.
	endpoints := func() []string {
		var out []string
		for _, l := range utils.GetNonEmptyLines(kubectl("get", "endpointslices", "-l", "kubernetes.io/service-name="+name, "-o",
			`jsonpath={range .items[*].endpoints[*]}{.conditions.ready}|{.addresses[0]}{"\n"}{end}`)) {
			if r, addr, _ := strings.Cut(l, "|"); r == "true" {
				out = append(out, addr)
			}
		}
		sort.Strings(out)
		return out
	}

	It("runs the five-line sample: Ready, with its pods as the Service's endpoints, and kubectl get mdapp says so", func() {
		kubectl("apply", "-f", filepath.Join(projectDir, "config", "samples", "apps_v1beta1_application.yaml"))
		Eventually(ready, 2*time.Minute, time.Second).Should(Equal(readyNow()))
		Expect(get("mdapp", `{.status.availableReplicas}/{.status.service.readyEndpoints}/{.status.conditions[?(@.type=="Available")].status}`)()).
			To(Equal("1/1/True"))
		Expect(get("mdapp", "{.status.service.clusterIP}")()).To(And(Not(BeEmpty()), Equal(get("svc", "{.spec.clusterIP}")())))
		podIPs := live("{.status.podIP}")
		Expect(podIPs).To(HaveLen(1))
		Expect(podIPs[0]).NotTo(BeEmpty(), "kwok gave the pod an IP")
		Expect(endpoints()).To(Equal(podIPs), "kube-controller-manager made the pod the Service's endpoint")
		Expect(get("svc", "{.spec.ports[0].name}/{.spec.ports[0].port}/{.spec.ports[0].targetPort}")()).
			To(Equal("http/80/http"), "ports defaulted from the container's")

		By("its Ingress: the URL column shows what the Ingress rule says")
		Expect(get("ingress", "{.spec.rules[0].http.paths[0].backend.service.name}/{.spec.rules[0].http.paths[0].backend.service.port.name}")()).
			To(Equal(name+"/http"), "a rule without paths routes to the Application's Service")
		host, path := get("ingress", "{.spec.rules[0].host}")(), get("ingress", "{.spec.rules[0].http.paths[0].path}")()
		Expect(host).NotTo(BeEmpty(), "the sample's Ingress rule names a host")
		url := "http://" + host + path
		Expect(get("mdapp", "{.status.urls}")()).To(Equal(`["` + url + `"]`))
		table := utils.GetNonEmptyLines(kubectl("get", "mdapp"))
		Expect(table).To(HaveLen(2))
		Expect(strings.Fields(table[0])).To(Equal([]string{"NAME", "READY", "AVAILABLE", "URL", "AGE"}))
		Expect(strings.Fields(table[1])[:4]).To(Equal([]string{name, "True", "1", url}))

		out, err := utils.Kubectl("-n", ns, "get", "app")
		Expect(err).To(HaveOccurred(), "app is Argo CD's short name, not ours: %s", out)

		uid := get("mdapp", "{.metadata.uid}")()
		for _, kind := range []string{"md", "svc", "ingress"} {
			Expect(get(kind, `{.metadata.ownerReferences[?(@.controller==true)].uid}`)()).To(Equal(uid), kind+" is controlled by the Application")
		}
	})

	It("rolls an image change through its MyDeployment", func() {
		kubectl("scale", "mdapp", name, "--replicas=3")
		Eventually(get("mdapp", "{.status.availableReplicas}/{.status.service.readyEndpoints}"), 2*time.Minute, time.Second).
			Should(Equal("3/3"), "kubectl scale mdapp passes through to the MyDeployment")
		Expect(get("md", "{.spec.replicas}")()).To(Equal("3"))
		Eventually(endpoints, time.Minute, time.Second).Should(Equal(live("{.status.podIP}")))

		kubectl("patch", "mdapp", name, "--type=json", "-p",
			`[{"op":"replace","path":"/spec/deployment/image","value":"nginx:1.28"}]`)
		Eventually(get("md", "{.spec.template.spec.containers[0].image}"), time.Minute, time.Second).Should(Equal("nginx:1.28"))
		Eventually(func() []string { return live("{.spec.containers[0].image}") }, 2*time.Minute, time.Second).
			Should(Equal([]string{"nginx:1.28", "nginx:1.28", "nginx:1.28"}))
		Eventually(get("md", `{.status.updatedReplicas}/{.status.availableReplicas}/{.status.conditions[?(@.type=="Progressing")].reason}`),
			time.Minute, time.Second).Should(Equal("3/3/NewRevisionAvailable"))
		Eventually(ready, time.Minute, time.Second).Should(Equal(readyNow()))
		Eventually(get("mdapp", `{.status.updatedReplicas}/{.status.conditions[?(@.type=="Progressing")].reason}`), time.Minute, time.Second).
			Should(Equal("3/NewRevisionAvailable"), "Progressing mirrors the MyDeployment's")
		Eventually(endpoints, time.Minute, time.Second).Should(Equal(live("{.status.podIP}")), "the new pods are the endpoints")
	})

	It("makes its HTTPRoute once the Gateway API CRDs are installed, and shows the route's URL", func() {
		const routed = "routed"
		app := `apiVersion: apps.mydeployment.io/v1beta1
kind: Application
metadata:
  name: routed
spec:
  deployment: {image: "nginx:1.27", replicas: 1, port: 80}
  service: {}
  route:
    parentRefs: [{name: gateway}]
    hostnames: [routed.example.com]
`
		getRouted := func(kind, jsonpath string) func() string {
			return func() string {
				out, _ := utils.Kubectl("-n", ns, "get", kind, routed, "-o", "jsonpath="+jsonpath)
				return out
			}
		}
		out, err := utils.KubectlStdin(app, "-n", ns, "apply", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), out)
		By("no Gateway API on the cluster: a condition that says so, and the rest of the app runs")
		Eventually(getRouted("mdapp", `{.status.conditions[?(@.type=="Ready")].reason}`), time.Minute, time.Second).
			Should(Equal("RouteCRDAbsent"))
		Eventually(getRouted("mdapp", "{.status.availableReplicas}"), 2*time.Minute, time.Second).Should(Equal("1"))

		By("the HTTPRoute CRD installed while the manager runs")
		cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/gateway-api")
		cmd.Dir = projectDir
		dir, err := utils.Run(cmd)
		Expect(err).NotTo(HaveOccurred(), dir)
		crd := filepath.Join(strings.TrimSpace(dir), "config", "crd", "standard", "gateway.networking.k8s.io_httproutes.yaml")
		out, err = utils.Kubectl("apply", "--server-side", "-f", crd)
		Expect(err).NotTo(HaveOccurred(), out)
		Eventually(getRouted("httproute", "{.spec.hostnames[0]}/{.spec.rules[0].backendRefs[0].name}/{.metadata.ownerReferences[0].kind}"),
			2*time.Minute, time.Second).Should(Equal("routed.example.com/routed/Application"))
		Eventually(getRouted("mdapp", "{.status.urls}"), time.Minute, time.Second).Should(ContainSubstring("http://routed.example.com/"))
		table := utils.GetNonEmptyLines(kubectl("get", "mdapp", routed))
		Expect(table).To(HaveLen(2))
		Expect(strings.Fields(table[1])[3]).To(HavePrefix("http://routed.example.com/"), "the URL column shows the route's")
		kubectl("delete", "mdapp", routed, "--wait=true")
	})

	It("splits its route's traffic through a canary's steps, keeping a filter added to the route by hand", func() {
		canaryTrafficOnRoute(ns) // after the test above: the Gateway API CRDs are installed
	})

	It("sends stated weights to few pods: 2% and 10% to one pod of ten, 50% to five, capped by the Ready pods on the way", func() {
		weightStepsOnRoute(ns) // after the tests above: the Gateway API CRDs are installed
	})

	It("aborts a rollout with weight steps: the route's weight to 0 first, the canary pods a drain delay later", func() {
		weightAbortOnRoute(ns) // after the tests above: the Gateway API CRDs are installed
	})

	It("aborts a canary whose analysis fails, its route back to the one Service", func() {
		abortedTrafficOnRoute(ns) // after the tests above: the Gateway API CRDs are installed
	})

	It("deletes its MyDeployment, Service and Ingress with it", func() {
		kubectl("delete", "mdapp", name, "--wait=true")
		Eventually(func() []string {
			return utils.GetNonEmptyLines(kubectl("get", "md,svc,ingress,pods,endpointslices", "-o", "name"))
		}, 2*time.Minute, time.Second).Should(BeEmpty())
	})
})
