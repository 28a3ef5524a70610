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
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/mydeployment-io/mydeployment-operator/test/e2e/configroll"
	"github.com/mydeployment-io/mydeployment-operator/test/utils"
)

// samples is the namespace the suite runs the samples in.
const samples = "install-e2e"

var jsonpath = utils.JSONPath

var _ = Describe("dist/install.yaml on a cluster with no cert-manager", Ordered, func() {
	var ca []byte // the CA the manager made

	It("installs with the command its first line gives (server-side apply, as make deploy)", func() {
		install := filepath.Join(projectDir, "dist", "install.yaml")
		f, err := os.Open(install)
		Expect(err).NotTo(HaveOccurred())
		first, err := bufio.NewReader(f).ReadString('\n')
		_ = f.Close()
		Expect(err).NotTo(HaveOccurred())
		Expect(first).To(ContainSubstring("kubectl apply --server-side -f install.yaml"))
		By("client-side apply would work too: every object fits the 256 KiB last-applied annotation")
		raw, err := os.ReadFile(install)
		Expect(err).NotTo(HaveOccurred())
		decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
		objects := 0
		for {
			var obj map[string]any
			if err := decoder.Decode(&obj); err == io.EOF {
				break
			} else {
				Expect(err).NotTo(HaveOccurred())
			}
			if obj == nil {
				continue
			}
			objects++
			j, err := json.Marshal(obj)
			Expect(err).NotTo(HaveOccurred())
			Expect(len(j)).To(BeNumerically("<", 256*1024), "%s %v", obj["kind"], obj["metadata"])
		}
		Expect(objects).To(BeNumerically(">", 20))
		utils.MustKubectl("apply", "--server-side", "-f", install)
		for _, crd := range []string{"mydeployments", "applications"} {
			Eventually(utils.JSONPath(`{.status.conditions[?(@.type=="Established")].status}`,
				"crd", crd+".apps.mydeployment.io"), time.Minute, 200*time.Millisecond).Should(Equal("True"), crd)
		}

		By("the certificate's Secret exists, empty, and the webhook configuration trusts nothing yet")
		Expect(secretData()).To(BeEmpty())
		Expect(caBundles()).To(Equal([]string{"", ""}), "both webhooks, no caBundle")

		By("with no manager serving, failurePolicy Fail refuses every MyDeployment")
		utils.MustKubectl("create", "namespace", samples)
		out, err := utils.Kubectl("-n", samples, "apply", "-f", sample("apps_v1beta1_mydeployment.yaml"))
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring("failed calling webhook"))
	})

	It("runs the manager as each of the Deployment's two pods: the leader makes the certificate and injects its CA, and each is Ready only once its webhook serves", func() {
		Expect(jsonpath("{.spec.replicas}", "-n", operatorNamespace, "deployment", operatorDeployment)()).To(Equal("2"))
		Expect(jsonpath(`{.spec.template.spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.topologyKey}`,
			"-n", operatorNamespace, "deployment", operatorDeployment)()).To(Equal("kubernetes.io/hostname"),
			"the replicas prefer different nodes")
		Expect(jsonpath("{.spec.maxUnavailable}", "-n", operatorNamespace, "pdb", operatorDeployment)()).To(Equal("1"),
			"a drain takes one replica at a time")
		startPods(true)
		Expect(pods).To(HaveLen(2), "one host manager per pod")
		for _, p := range pods {
			Eventually(p.log, time.Minute, 200*time.Millisecond).Should(
				MatchRegexp(`"msg":"webhook certificate","mode":"self-managed","secret":"`+operatorNamespace+"/"+webhookSecret+`"`),
				"one log line says where the certificate comes from")
		}
		serviceAccount := pods[0].serviceAccount

		By("its service account may write that Secret and that webhook configuration, and no other")
		canI := func(args ...string) string {
			out, _ := utils.Kubectl(append(append([]string{"auth", "can-i"}, args...), "--as", serviceAccount)...)
			lines := utils.GetNonEmptyLines(out)
			if len(lines) == 0 {
				return out
			}
			return strings.TrimSpace(lines[len(lines)-1])
		}
		Expect(canI("update", "secret/"+webhookSecret, "-n", operatorNamespace)).To(Equal("yes"))
		Expect(canI("update", "secret/other", "-n", operatorNamespace)).To(Equal("no"))
		// It reads Secrets everywhere (rollout-on-config-change watches their
		// metadata and hashes the data a template references), but writes none
		// but its own certificate's.
		Expect(canI("list", "secrets", "-n", samples)).To(Equal("yes"))
		Expect(canI("update", "secrets", "-n", samples)).To(Equal("no"))
		Expect(canI("create", "secrets", "-n", samples)).To(Equal("no"))
		Expect(canI("delete", "secret/other", "-n", operatorNamespace)).To(Equal("no"))
		Expect(canI("update", "validatingwebhookconfigurations/"+webhookConfiguration)).To(Equal("yes"))
		Expect(canI("update", "validatingwebhookconfigurations/other")).To(Equal("no"))

		By("it may read a Deployment and list its ReplicaSets (adopt-from), and not watch or write them")
		Expect(canI("get", "deployments", "-n", samples)).To(Equal("yes"))
		Expect(canI("list", "replicasets", "-n", samples)).To(Equal("yes"))
		for _, verb := range []string{"watch", "patch", "delete"} {
			Expect(canI(verb, "deployments", "-n", samples)).To(Equal("no"), verb)
			Expect(canI(verb, "replicasets", "-n", samples)).To(Equal("no"), verb)
		}

		By("it may read Nodes (drain SurgeFirst), and not write them")
		Expect(canI("list", "nodes")).To(Equal("yes"))
		Expect(canI("watch", "nodes")).To(Equal("yes"))
		Expect(canI("patch", "nodes")).To(Equal("no"))

		By("the manager writes a CA and a serving certificate for the webhook Service into the Secret")
		Eventually(secretData, time.Minute, 500*time.Millisecond).Should(HaveKey("tls.crt"))
		data := secretData()
		Expect(data).To(HaveKey("tls.key"))
		Expect(data).To(HaveKey("ca.crt"))
		ca = data["ca.crt"]
		verifyServing(ca, data["tls.crt"])

		By("and injects the CA into both webhooks of its ValidatingWebhookConfiguration")
		want := base64.StdEncoding.EncodeToString(ca)
		Eventually(caBundles, time.Minute, 500*time.Millisecond).Should(Equal([]string{want, want}))

		By("only the leader rotates: the other replica runs no rotator")
		lead, other := leader()
		Expect(lead.log()).To(ContainSubstring(`"logger":"cert-rotation"`))
		Expect(other.log()).NotTo(ContainSubstring(`"logger":"cert-rotation"`))

		By("neither is Ready while the certificate is not in its volume")
		for _, p := range pods {
			Consistently(func() string { code, body := p.readyz(); return fmt.Sprint(code, " ", body) },
				3*time.Second, 500*time.Millisecond).Should(And(HavePrefix("500 "), ContainSubstring("[-]webhook failed")), p.name)
		}

		By("once each pod's kubelet (the suite) syncs its volume, its webhook server starts and it is Ready; both serve the Secret's certificate")
		syncAllVolumes()
		for _, p := range pods {
			Eventually(func() string { code, body := p.readyz(); return fmt.Sprint(code, " ", body) },
				3*time.Minute, time.Second).Should(HavePrefix("200 "), p.name)
			Expect(p.log()).To(ContainSubstring("webhook certificate ready"))
			Expect(servedCertificate(p.ip)).To(Equal(secretData()["tls.crt"]), "the address of pod %s serves the Secret's certificate", p.name)
		}
	})

	It("is called by the API server through its Service: a bad pod template is refused with its field named", func() {
		// The CRD's schema cannot see a negative quantity: only the webhook refuses it.
		out, err := utils.KubectlStdin(fmt.Sprintf(utils.InvalidMyDeployment, samples), "apply", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring(refusedByWebhook))
		Expect(out).NotTo(ContainSubstring("failed calling webhook"))
	})

	It("runs the samples: the MyDeployment and the Application become Ready", func() {
		utils.MustKubectl("-n", samples, "apply", "-f", sample("apps_v1beta1_mydeployment.yaml"))
		utils.MustKubectl("-n", samples, "apply", "-f", sample("apps_v1beta1_application.yaml"))
		Eventually(utils.JSONPath(`{.status.readyReplicas}/{.status.updatedReplicas}/{.status.conditions[?(@.type=="Available")].status}`,
			"-n", samples, "md", "mydeployment-sample"), 2*time.Minute, time.Second).Should(Equal("3/3/True"))
		Eventually(utils.JSONPath(`{.status.conditions[?(@.type=="Ready")].status}/{.status.service.readyEndpoints}`,
			"-n", samples, "mdapp", "application-sample"), 2*time.Minute, time.Second).Should(Equal("True/1"))
	})

	It("rolls a MyDeployment on a config change: the install lets it read config where it may create pods", func() {
		configroll.Check(samples)
	})

	It("lets a user bound only to the built-in edit ClusterRole create, scale and roll back MyDeployments and Applications; view may read, not write", func() {
		editUserLifecycle()
	})

	It("answers admission while the leader is killed: the other replica serves, then takes the lease and reconciles", func() {
		leaderKill()
	})

	It("makes a new certificate when its Secret loses it: the new CA is injected and the webhook serves on", func() {
		utils.MustKubectl("-n", operatorNamespace, "patch", "secret", webhookSecret, "--type=json",
			"-p", `[{"op":"remove","path":"/data"}]`)
		Eventually(func() []byte { return secretData()["ca.crt"] }, time.Minute, 500*time.Millisecond).
			Should(And(Not(BeEmpty()), Not(Equal(ca))))
		data := secretData()
		verifyServing(data["ca.crt"], data["tls.crt"])
		want := base64.StdEncoding.EncodeToString(data["ca.crt"])
		Eventually(caBundles, time.Minute, 500*time.Millisecond).Should(Equal([]string{want, want}))
		for _, p := range pods {
			Eventually(func() []byte { return servedCertificate(p.ip) }, 2*time.Minute, time.Second).
				Should(Equal(data["tls.crt"]), "the webhook server of pod %s reloads the certificate from its volume", p.name)
		}
		Eventually(func() string {
			out, _ := utils.KubectlStdin(fmt.Sprintf(utils.InvalidMyDeployment, samples), "apply", "-f", "-")
			return out
		}, time.Minute, time.Second).Should(ContainSubstring(refusedByWebhook))
	})

	var before map[string]string // the samples' objects and pods, by kind/name: their UIDs
	It("is removed by make undeploy, which keeps the CRDs, every MyDeployment and Application, and every pod", func() {
		// Before undeploy takes its RBAC away under it.
		for _, p := range pods {
			Expect(p.log()).NotTo(ContainSubstring("forbidden"), "the manifests' RBAC was enough for everything the manager of %s did", p.name)
		}
		before = workloads()
		Expect(before).To(HaveKey("mydeployment.apps.mydeployment.io/mydeployment-sample"))
		Expect(before).To(HaveKey("application.apps.mydeployment.io/application-sample"))
		out, err := utils.Run(exec.Command("make", "undeploy"))
		Expect(err).NotTo(HaveOccurred(), out)
		stopPods()
		Expect(out).NotTo(ContainSubstring("customresourcedefinition"))

		Eventually(func() string {
			out, err := utils.Kubectl("get", "namespace", operatorNamespace)
			if err != nil && strings.Contains(out, "NotFound") {
				return ""
			}
			return out
		}, 2*time.Minute, time.Second).Should(BeEmpty(), "the operator's namespace is gone: it held none of the samples")
		By("the CRDs, the objects and their pods stay, with the same UIDs")
		Consistently(workloads, 5*time.Second, time.Second).Should(Equal(before))
		By("no webhook configuration is left to refuse a write while no manager runs")
		out, err = utils.Kubectl("get", "validatingwebhookconfiguration", webhookConfiguration)
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring("NotFound"))
		utils.MustKubectl("-n", samples, "annotate", "md", "mydeployment-sample", "example.com/undeployed=yes")
	})

	It("deployed again, the manager takes them back with no pod created or deleted", func() {
		w := watchPodChanges(samples)
		utils.MustKubectl("apply", "--server-side", "-f", filepath.Join(projectDir, "dist", "install.yaml"))
		startPods(false)
		for _, p := range pods {
			Eventually(func() string { code, body := p.readyz(); return fmt.Sprint(code, " ", body) },
				3*time.Minute, time.Second).Should(HavePrefix("200 "), p.name)
		}
		Eventually(utils.JSONPath(`{.status.observedGeneration}/{.metadata.generation}/{.status.availableReplicas}`,
			"-n", samples, "md", "mydeployment-sample"), time.Minute, time.Second).Should(Equal("1/1/3"))
		Eventually(utils.JSONPath(`{.status.conditions[?(@.type=="Ready")].status}`, "-n", samples, "mdapp", "application-sample"),
			time.Minute, time.Second).Should(Equal("True"))
		Consistently(workloads, 5*time.Second, time.Second).Should(Equal(before))
		Expect(w()).To(BeEmpty(), "no pod created or deleted")
		for _, p := range pods {
			Expect(p.log()).NotTo(ContainSubstring("forbidden"), p.name)
		}
	})

	It("refuses make uninstall while they exist; with FORCE=true it deletes them and leaves nothing of ours", func() {
		// -o manifests: the CRDs were generated by the build; regenerating them
		// (uninstall's first prerequisite) would take a minute here.
		out, err := utils.Run(exec.Command("make", "-o", "manifests", "uninstall"))
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring("MyDeployments and Applications exist; deleting the CRDs would delete them and their pods"))
		Expect(out).To(ContainSubstring("kubectl mydeployment eject md/NAME"))
		Consistently(workloads, 2*time.Second, time.Second).Should(Equal(before))

		out, err = utils.Run(exec.Command("make", "undeploy"))
		Expect(err).NotTo(HaveOccurred(), out)
		stopPods()
		Eventually(func() string {
			out, err := utils.Kubectl("get", "namespace", operatorNamespace)
			if err != nil && strings.Contains(out, "NotFound") {
				return ""
			}
			return out
		}, 2*time.Minute, time.Second).Should(BeEmpty())
		out, err = utils.Run(exec.Command("make", "-o", "manifests", "uninstall", "FORCE=true"))
		Expect(err).NotTo(HaveOccurred(), out)
		By("the samples go first, and with them what they owned (deleted in the foreground)")
		Eventually(func() string {
			out, _ := utils.Kubectl("-n", samples, "get", "pods,services,ingresses,controllerrevisions", "-o", "name")
			return out
		}, 2*time.Minute, time.Second).Should(BeEmpty())
		utils.MustKubectl("delete", "namespace", samples)

		By("no cluster-scoped object of ours is left (CRDs, ClusterRoles and bindings, webhook configuration)")
		resources := utils.GetNonEmptyLines(utils.MustKubectl("api-resources", "--namespaced=false", "--verbs=list", "-o", "name"))
		Expect(resources).To(ContainElements("customresourcedefinitions.apiextensions.k8s.io",
			"clusterroles.rbac.authorization.k8s.io", "validatingwebhookconfigurations.admissionregistration.k8s.io"))
		var left []string
		for _, r := range resources {
			out, err := utils.Kubectl("get", r, "-o", "name")
			Expect(err).NotTo(HaveOccurred(), out)
			for _, name := range utils.GetNonEmptyLines(out) {
				if strings.Contains(name, "mydeployment") {
					left = append(left, name)
				}
			}
		}
		Expect(left).To(BeEmpty())
	})
})

// workloads are the samples' MyDeployments, Applications, their children
// and pods, by kind/name: their UIDs.
func workloads() map[string]string {
	out := utils.MustKubectl("-n", samples, "get", "mydeployments,applications,pods,services,controllerrevisions",
		"-o", `jsonpath={range .items[*]}{.kind}/{.metadata.name}={.metadata.uid}{"\n"}{end}`)
	got := map[string]string{}
	for _, line := range utils.GetNonEmptyLines(out) {
		kind, uid, _ := strings.Cut(line, "=")
		kind, name, _ := strings.Cut(kind, "/")
		got[strings.ToLower(kind)+resourceGroup(kind)+"/"+name] = uid
	}
	return got
}

func resourceGroup(kind string) string {
	switch kind {
	case "MyDeployment", "Application":
		return ".apps.mydeployment.io"
	}
	return ""
}

// watchPodChanges watches ns's pods from now; the returned func stops it
// and says which were created or deleted meanwhile.
func watchPodChanges(ns string) func() []string {
	list, err := clientset.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	wctx, cancel := context.WithCancel(context.Background())
	wi, err := clientset.CoreV1().Pods(ns).Watch(wctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	Expect(err).NotTo(HaveOccurred())
	var mu sync.Mutex
	var changes []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range wi.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok && (ev.Type == watch.Added || ev.Type == watch.Deleted) {
				mu.Lock()
				changes = append(changes, fmt.Sprintf("%s %s", ev.Type, p.Name))
				mu.Unlock()
			}
		}
	}()
	return func() []string {
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return changes
	}
}

// refusedByWebhook is how kubectl shows the webhook's refusal of
// utils.InvalidMyDeployment: the field, named.
const refusedByWebhook = `The MyDeployment "negative-cpu" is invalid: spec.template.spec.containers[0].resources.requests[cpu]: Invalid value: "-1"`

func sample(name string) string { return filepath.Join(projectDir, "config", "samples", name) }

// secretData is the webhook certificate Secret's data (nil if unreadable).
func secretData() map[string][]byte {
	s, err := clientset.CoreV1().Secrets(operatorNamespace).Get(context.Background(), webhookSecret, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return s.Data
}

// caBundles are the caBundles of the ValidatingWebhookConfiguration's
// webhooks (base64, as kubectl shows them), in order.
func caBundles() []string {
	c, err := clientset.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(context.Background(),
		webhookConfiguration, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	var out []string
	for _, w := range c.Webhooks {
		out = append(out, base64.StdEncoding.EncodeToString(w.ClientConfig.CABundle))
	}
	return out
}

// verifyServing fails unless certPEM is valid now, for serving, under caPEM,
// for the webhook Service's DNS name (what the API server checks).
func verifyServing(caPEM, certPEM []byte) {
	GinkgoHelper()
	pool := x509.NewCertPool()
	Expect(pool.AppendCertsFromPEM(caPEM)).To(BeTrue(), "ca.crt is a PEM certificate")
	block, _ := pem.Decode(certPEM)
	Expect(block).NotTo(BeNil(), "tls.crt is PEM")
	cert, err := x509.ParseCertificate(block.Bytes)
	Expect(err).NotTo(HaveOccurred())
	_, err = cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: webhookService + "." + operatorNamespace + ".svc",
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	Expect(err).NotTo(HaveOccurred())
}

// servedCertificate is the PEM of the certificate served at ip:9443 (nil if none).
func servedCertificate(ip string) []byte {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", net.JoinHostPort(ip, "9443"),
		&tls.Config{InsecureSkipVerify: true}) //nolint:gosec // we read the certificate, then compare it
	if err != nil {
		return nil
	}
	defer func() { _ = conn.Close() }()
	certs := conn.ConnectionState().PeerCertificates
	if len(certs) == 0 {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: certs[0].Raw})
}
