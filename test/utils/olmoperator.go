package utils

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/tools/clientcmd"
)

// OLMOperator is the operator's Deployment as an OLM (v0 or v1) installed
// it on the local cluster. Its pod runs on a kwok node, where no container
// runs: it is Running with an IP but nothing behind it. So a suite runs the
// manager binary on the host with exactly what OLM gave that pod (the
// container's environment, WATCH_NAMESPACE from the pod's
// olm.targetNamespaces annotation, the serving certificate OLM arranged in
// the webhook-cert volume) and makes the pod's IP an address of this host.
// kube-apiserver runs with --enable-aggregator-routing, so it calls the
// webhook at the Service's endpoint, the pod IP: that call reaches the host
// manager with OLM's certificate, which the webhook configuration's caBundle
// trusts. The host manager impersonates the pod's service account, so it has
// exactly the permissions OLM granted, in the namespaces OLM chose.
type OLMOperator struct {
	Namespace      string
	Deployment     string
	ServiceAccount string // the one the CSV's permissions are for
	// WorkDir holds the manager's log, kubeconfig and certificates.
	WorkDir string
	// Binary is the manager StartManager runs: bin/manager when empty, an
	// earlier release's (ReleaseManager) while that release is installed.
	Binary string

	manager *Process
	added   []string
}

// Manager is the running host manager, nil if none.
func (o *OLMOperator) Manager() *Process { return o.manager }

// Pod waits until the operator's Deployment has rolled out to a single
// Running pod and returns its name and IP.
func (o *OLMOperator) Pod() (name, ip string) {
	Eventually(func(g Gomega) {
		out, err := Kubectl("-n", o.Namespace, "get", "deployment", o.Deployment, "-o",
			"jsonpath={.status.replicas} {.status.updatedReplicas} {.status.availableReplicas} {.metadata.generation} {.status.observedGeneration}")
		g.Expect(err).NotTo(HaveOccurred())
		f := strings.Fields(out)
		g.Expect(f).To(HaveLen(5), out)
		g.Expect(f[:3]).To(Equal([]string{"1", "1", "1"}), "replicas updated available")
		g.Expect(f[3]).To(Equal(f[4]), "observed generation")
		out, err = Kubectl("-n", o.Namespace, "get", "pods", "-l", "control-plane=controller-manager", "-o",
			`jsonpath={range .items[*]}{.metadata.name} {.status.phase} {.status.podIP} {.metadata.deletionTimestamp}{"\n"}{end}`)
		g.Expect(err).NotTo(HaveOccurred())
		lines := GetNonEmptyLines(out)
		g.Expect(lines).To(HaveLen(1), "one operator pod, the old one gone")
		f = strings.Fields(lines[0])
		g.Expect(f).To(HaveLen(3), lines[0])
		g.Expect(f[1]).To(Equal("Running"))
		name, ip = f[0], f[2]
	}, 3*time.Minute, time.Second).Should(Succeed())
	return name, ip
}

// PodEnv is the manager container's environment as OLM (or the manifests)
// wrote it into the operator's Deployment, resolved for pod: plain values as
// they are, the pod's namespace (POD_NAMESPACE), and fields of the pod's
// annotations (WATCH_NAMESPACE) read from the pod.
func (o *OLMOperator) PodEnv(pod string) []string {
	out, err := Kubectl("-n", o.Namespace, "get", "deployment", o.Deployment, "-o", "json")
	Expect(err).NotTo(HaveOccurred(), out)
	var d appsv1.Deployment
	Expect(json.Unmarshal([]byte(out), &d)).To(Succeed())
	Expect(d.Spec.Template.Spec.Containers).NotTo(BeEmpty())
	annotation := regexp.MustCompile(`^metadata\.annotations\['([^']+)'\]$`)
	var env []string
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		switch {
		case e.ValueFrom == nil:
			env = append(env, e.Name+"="+e.Value)
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			env = append(env, e.Name+"="+o.Namespace)
		case e.ValueFrom.FieldRef != nil && annotation.MatchString(e.ValueFrom.FieldRef.FieldPath):
			key := annotation.FindStringSubmatch(e.ValueFrom.FieldRef.FieldPath)[1]
			v, err := Kubectl("-n", o.Namespace, "get", "pod", pod, "-o",
				"jsonpath={.metadata.annotations."+strings.ReplaceAll(key, ".", `\.`)+"}")
			Expect(err).NotTo(HaveOccurred())
			env = append(env, e.Name+"="+v)
		default:
			Fail(fmt.Sprintf("the suite cannot resolve env %s of the operator's container", e.Name))
		}
	}
	return env
}

// StartManager (re)starts the host manager as the operator pod OLM runs now,
// with extra environment on top of the pod's.
func (o *OLMOperator) StartManager(projectDir string, extraEnv ...string) {
	o.StopManager()
	pod, ip := o.Pod()
	By(fmt.Sprintf("running the manager on the host as pod %s (%s)", pod, ip))
	if out, err := exec.Command("ip", "addr", "add", ip+"/32", "dev", "lo").CombinedOutput(); err != nil {
		Expect(string(out)).To(Or(ContainSubstring("File exists"), ContainSubstring("already assigned")),
			"the suite adds the operator pod's IP to lo so kube-apiserver reaches the webhook (needs root / CAP_NET_ADMIN)")
	} else {
		o.added = append(o.added, ip)
	}

	get := func(jsonpath string, args ...string) string {
		out, err := Kubectl(append([]string{"-n", o.Namespace, "get"}, append(args, "-o", "jsonpath="+jsonpath)...)...)
		Expect(err).NotTo(HaveOccurred())
		return out
	}
	Expect(get(`{.spec.template.spec.serviceAccountName}`, "deployment", o.Deployment)).To(Equal(o.ServiceAccount))
	kubeconfig := Impersonating(ServiceAccountUser(o.Namespace, o.ServiceAccount),
		filepath.Join(o.WorkDir, "manager-"+pod+".kubeconfig"))
	secret := get(`{.spec.template.spec.volumes[?(@.name=="webhook-cert")].secret.secretName}`, "deployment", o.Deployment)
	Expect(secret).NotTo(BeEmpty(), "OLM mounts the webhook certificate it arranged as volume webhook-cert")
	certDir := filepath.Join(o.WorkDir, "certs-"+pod)
	Expect(os.MkdirAll(certDir, 0o700)).To(Succeed())
	for _, key := range []string{"tls.crt", "tls.key"} {
		var data []byte
		Eventually(func() error {
			var err error
			data, err = base64.StdEncoding.DecodeString(get(`{.data.`+strings.ReplaceAll(key, ".", `\.`)+`}`, "secret", secret))
			if err == nil && len(data) == 0 {
				err = fmt.Errorf("secret %s has no %s yet", secret, key)
			}
			return err
		}, time.Minute, time.Second).Should(Succeed())
		Expect(os.WriteFile(filepath.Join(certDir, key), data, 0o600)).To(Succeed())
	}

	if c, err := net.DialTimeout("tcp", net.JoinHostPort(ip, "9443"), time.Second); err == nil {
		_ = c.Close()
		Fail("something else already listens on " + ip + ":9443 (a manager left by an interrupted run?)")
	}
	env := append(o.PodEnv(pod), extraEnv...)
	env = append(env, "KUBECONFIG="+kubeconfig)
	var err error
	o.manager, err = Start("manager", filepath.Join(o.WorkDir, "manager-"+pod+".log"), env,
		// Leader election as in the pod: the lease is in the operator's
		// namespace, which the install need not target.
		o.binary(projectDir), "--webhook-cert-path="+certDir,
		"--leader-elect", "--leader-election-namespace="+o.Namespace,
		"--metrics-bind-address=0", "--health-probe-bind-address=127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	Eventually(func() error {
		if exited, err := o.manager.Exited(); exited {
			StopTrying("the manager exited").Wrap(err).Now()
		}
		c, err := net.DialTimeout("tcp", net.JoinHostPort(ip, "9443"), time.Second)
		if err == nil {
			_ = c.Close()
		}
		return err
	}, time.Minute, 200*time.Millisecond).Should(Succeed(), "the webhook server listens at the pod's address")
}

func (o *OLMOperator) binary(projectDir string) string {
	if o.Binary != "" {
		return o.Binary
	}
	return filepath.Join(projectDir, "bin", "manager")
}

// StopManager stops the host manager, if one runs.
func (o *OLMOperator) StopManager() {
	o.manager.Stop()
	o.manager = nil
}

// RemoveAddresses removes the pod IPs StartManager added to lo.
func (o *OLMOperator) RemoveAddresses() {
	for _, ip := range o.added {
		_ = exec.Command("ip", "addr", "del", ip+"/32", "dev", "lo").Run()
	}
	o.added = nil
}

// ServiceAccountUser is the user name RBAC knows service account ns/name by.
func ServiceAccountUser(ns, name string) string { return "system:serviceaccount:" + ns + ":" + name }

// Impersonating writes to path a copy of $KUBECONFIG whose users act as user.
func Impersonating(user, path string) string {
	cfg, err := clientcmd.LoadFromFile(os.Getenv("KUBECONFIG"))
	Expect(err).NotTo(HaveOccurred())
	for _, a := range cfg.AuthInfos {
		a.Impersonate = user
	}
	Expect(clientcmd.WriteToFile(*cfg, path)).To(Succeed())
	return path
}
