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

package olm

import (
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/mydeployment-io/mydeployment-operator/test/utils"
)

// The operator's Deployment that OLM creates runs on a kwok node, where no
// container runs: its pod is Running with an IP but nothing behind it. So
// the suite runs the manager binary on the host with exactly what OLM gave
// that pod (WATCH_NAMESPACE from the olm.targetNamespaces annotation,
// OPERATOR_CONDITION_NAME, the serving certificate OLM generated) and makes
// the pod's IP an address of this host. kube-apiserver runs with
// --enable-aggregator-routing, so it calls the webhook at the Service's
// endpoint, the pod IP: that call reaches the host manager with OLM's
// certificate, which the ValidatingWebhookConfiguration's caBundle trusts.
// The host manager impersonates the pod's service account, so it has
// exactly the permissions OLM granted the CSV, in the namespaces OLM chose.

const (
	operatorNamespace  = "md-system"
	operatorDeployment = "mydeployment-operator-controller-manager"
	// operatorServiceAccount is the one the CSV's permissions are for.
	operatorServiceAccount = "mydeployment-operator-controller-manager"
)

var (
	manager      *utils.Process
	addedAddress []string
)

// operatorPod waits until the operator's Deployment has rolled out to a
// single Running pod and returns its name and IP.
func operatorPod() (name, ip string) {
	Eventually(func(g Gomega) {
		out, err := utils.Kubectl("-n", operatorNamespace, "get", "deployment", operatorDeployment, "-o",
			"jsonpath={.status.replicas} {.status.updatedReplicas} {.status.availableReplicas} {.metadata.generation} {.status.observedGeneration}")
		g.Expect(err).NotTo(HaveOccurred())
		f := strings.Fields(out)
		g.Expect(f).To(HaveLen(5), out)
		g.Expect(f[:3]).To(Equal([]string{"1", "1", "1"}), "replicas updated available")
		g.Expect(f[3]).To(Equal(f[4]), "observed generation")
		out, err = utils.Kubectl("-n", operatorNamespace, "get", "pods", "-l", "control-plane=controller-manager", "-o",
			`jsonpath={range .items[*]}{.metadata.name} {.status.phase} {.status.podIP} {.metadata.deletionTimestamp}{"\n"}{end}`)
		g.Expect(err).NotTo(HaveOccurred())
		lines := utils.GetNonEmptyLines(out)
		g.Expect(lines).To(HaveLen(1), "one operator pod, the old one gone")
		f = strings.Fields(lines[0])
		g.Expect(f).To(HaveLen(3), lines[0])
		g.Expect(f[1]).To(Equal("Running"))
		name, ip = f[0], f[2]
	}, 3*time.Minute, time.Second).Should(Succeed())
	return name, ip
}

// startManager (re)starts the host manager as the operator pod OLM runs now.
func startManager() {
	stopManager()
	pod, ip := operatorPod()
	By(fmt.Sprintf("running the manager on the host as pod %s (%s)", pod, ip))
	if out, err := exec.Command("ip", "addr", "add", ip+"/32", "dev", "lo").CombinedOutput(); err != nil {
		Expect(string(out)).To(Or(ContainSubstring("File exists"), ContainSubstring("already assigned")),
			"the OLM suite adds the operator pod's IP to lo so kube-apiserver reaches the webhook (needs root / CAP_NET_ADMIN)")
	} else {
		addedAddress = append(addedAddress, ip)
	}

	get := func(jsonpath string, args ...string) string {
		out, err := utils.Kubectl(append([]string{"-n", operatorNamespace, "get"}, append(args, "-o", "jsonpath="+jsonpath)...)...)
		Expect(err).NotTo(HaveOccurred())
		return out
	}
	watch := get(`{.metadata.annotations.olm\.targetNamespaces}`, "pod", pod)
	condition := get(`{.spec.template.spec.containers[0].env[?(@.name=="OPERATOR_CONDITION_NAME")].value}`,
		"deployment", operatorDeployment)
	Expect(get(`{.spec.template.spec.serviceAccountName}`, "deployment", operatorDeployment)).To(Equal(operatorServiceAccount))
	kubeconfig := impersonating(serviceAccountUser(operatorNamespace, operatorServiceAccount),
		filepath.Join(workDir, "manager-"+pod+".kubeconfig"))
	secret := get(`{.spec.template.spec.volumes[?(@.name=="webhook-cert")].secret.secretName}`,
		"deployment", operatorDeployment)
	Expect(secret).NotTo(BeEmpty(), "OLM mounts the webhook certificate it made as volume webhook-cert")
	certDir := filepath.Join(workDir, "certs-"+pod)
	Expect(os.MkdirAll(certDir, 0o700)).To(Succeed())
	for _, key := range []string{"tls.crt", "tls.key"} {
		data, err := base64.StdEncoding.DecodeString(get(`{.data.`+strings.ReplaceAll(key, ".", `\.`)+`}`, "secret", secret))
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(filepath.Join(certDir, key), data, 0o600)).To(Succeed())
	}

	if c, err := net.DialTimeout("tcp", net.JoinHostPort(ip, "9443"), time.Second); err == nil {
		_ = c.Close()
		Fail("something else already listens on " + ip + ":9443 (a manager left by an interrupted run?)")
	}
	var err error
	manager, err = utils.Start("manager", filepath.Join(workDir, "manager-"+pod+".log"),
		// OPERATOR_NAMESPACE: in a pod operator-lib reads the namespace from
		// the service account's files, which a host process has not.
		[]string{"WATCH_NAMESPACE=" + watch, "OPERATOR_CONDITION_NAME=" + condition, "OPERATOR_NAMESPACE=" + operatorNamespace,
			"KUBECONFIG=" + kubeconfig},
		// Leader election as in the pod: the lease is in the operator's
		// namespace, which the OperatorGroup need not target.
		filepath.Join(projectDir, "bin", "manager"), "--webhook-cert-path="+certDir,
		"--leader-elect", "--leader-election-namespace="+operatorNamespace,
		"--metrics-bind-address=0", "--health-probe-bind-address=127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	Eventually(func() error {
		if exited, err := manager.Exited(); exited {
			StopTrying("the manager exited").Wrap(err).Now()
		}
		c, err := net.DialTimeout("tcp", net.JoinHostPort(ip, "9443"), time.Second)
		if err == nil {
			_ = c.Close()
		}
		return err
	}, time.Minute, 200*time.Millisecond).Should(Succeed(), "the webhook server listens at the pod's address")
}

// serviceAccountUser is the user name RBAC knows service account ns/name by.
func serviceAccountUser(ns, name string) string { return "system:serviceaccount:" + ns + ":" + name }

// impersonating writes to path a copy of $KUBECONFIG whose users act as user.
func impersonating(user, path string) string {
	cfg, err := clientcmd.LoadFromFile(os.Getenv("KUBECONFIG"))
	Expect(err).NotTo(HaveOccurred())
	for _, a := range cfg.AuthInfos {
		a.Impersonate = user
	}
	Expect(clientcmd.WriteToFile(*cfg, path)).To(Succeed())
	return path
}

// canI is `kubectl auth can-i VERB RESOURCE -n NS --as USER`: "yes" or "no"
// (anything else is returned whole, for the failure message).
func canI(user, ns, verb, resource string) func() string {
	return func() string {
		out, _ := utils.Kubectl("auth", "can-i", verb, resource, "-n", ns, "--as", user)
		if lines := utils.GetNonEmptyLines(out); len(lines) > 0 {
			if last := strings.TrimSpace(lines[len(lines)-1]); last == "yes" || last == "no" {
				return last
			}
		}
		return out
	}
}

func stopManager() {
	manager.Stop()
	manager = nil
}

func removeAddresses() {
	for _, ip := range addedAddress {
		_ = exec.Command("ip", "addr", "del", ip+"/32", "dev", "lo").Run()
	}
	addedAddress = nil
}
