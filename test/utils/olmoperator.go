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
	"sort"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/tools/clientcmd"
)

// OLMOperator is the operator's Deployment as an OLM (v0 or v1) installed
// it on the local cluster. Its pods run on a kwok node, where no container
// runs: each is Running with an IP but nothing behind it. So a suite runs the
// manager binary on the host once per pod, with exactly what OLM gave that
// pod (the container's environment, WATCH_NAMESPACE from the pod's
// olm.targetNamespaces annotation, the serving certificate OLM arranged in
// the webhook-cert volume), bound to the pod's IP, which it makes an address
// of this host. kube-apiserver runs with --enable-aggregator-routing, so it
// calls the webhook at one of the Service's endpoints, a pod IP: that call
// reaches that pod's host manager with OLM's certificate, which the webhook
// configuration's caBundle trusts. The host managers impersonate the pods'
// service account, so they have exactly the permissions OLM granted, in the
// namespaces OLM chose; they elect a leader among themselves as the pods do.
type OLMOperator struct {
	Namespace      string
	Deployment     string
	ServiceAccount string // the one the CSV's permissions are for
	// WorkDir holds the managers' logs, kubeconfigs and certificates.
	WorkDir string
	// Binary is the manager StartManager runs: bin/manager when empty, an
	// earlier release's (ReleaseManager) while that release is installed.
	Binary string

	managers []*Process
	added    []string
}

// OperatorPod is one Running pod of the operator's Deployment.
type OperatorPod struct{ Name, IP string }

// Manager is the first pod's running host manager, nil if none.
func (o *OLMOperator) Manager() *Process {
	if len(o.managers) == 0 {
		return nil
	}
	return o.managers[0]
}

// Managers are the running host managers, one per operator pod, in the
// order of Pods.
func (o *OLMOperator) Managers() []*Process { return o.managers }

// Pods waits until the operator's Deployment has rolled out (spec.replicas
// pods, all updated and available, no pod of an older version left) and
// returns its Running pods, sorted by name.
func (o *OLMOperator) Pods() []OperatorPod {
	var pods []OperatorPod
	Eventually(func(g Gomega) {
		pods = nil
		out, err := Kubectl("-n", o.Namespace, "get", "deployment", o.Deployment, "-o",
			"jsonpath={.spec.replicas} {.status.replicas} {.status.updatedReplicas} {.status.availableReplicas} {.metadata.generation} {.status.observedGeneration}")
		g.Expect(err).NotTo(HaveOccurred())
		f := strings.Fields(out)
		g.Expect(f).To(HaveLen(6), out)
		g.Expect(f[1:4]).To(HaveEach(f[0]), "replicas updated available, against spec.replicas")
		g.Expect(f[4]).To(Equal(f[5]), "observed generation")
		out, err = Kubectl("-n", o.Namespace, "get", "pods", "-l", "control-plane=controller-manager", "-o",
			`jsonpath={range .items[*]}{.metadata.name} {.status.phase} {.status.podIP} {.metadata.deletionTimestamp}{"\n"}{end}`)
		g.Expect(err).NotTo(HaveOccurred())
		lines := GetNonEmptyLines(out)
		replicas, err := strconv.Atoi(f[0])
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(lines).To(HaveLen(replicas), "one operator pod per replica, the old ones gone")
		for _, l := range lines {
			p := strings.Fields(l)
			g.Expect(p).To(HaveLen(3), l)
			g.Expect(p[1]).To(Equal("Running"))
			pods = append(pods, OperatorPod{Name: p[0], IP: p[2]})
		}
	}, 3*time.Minute, time.Second).Should(Succeed())
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	return pods
}

// Pod is the first of Pods: a pod whose environment stands for all of them.
func (o *OLMOperator) Pod() (name, ip string) {
	p := o.Pods()[0]
	return p.Name, p.IP
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

// StartManager (re)starts the host managers as the operator pods OLM runs
// now, one per pod, with extra environment on top of each pod's.
func (o *OLMOperator) StartManager(projectDir string, extraEnv ...string) {
	o.StopManager()
	secret, err := Kubectl("-n", o.Namespace, "get", "deployment", o.Deployment, "-o",
		`jsonpath={.spec.template.spec.volumes[?(@.name=="webhook-cert")].secret.secretName}`)
	Expect(err).NotTo(HaveOccurred())
	Expect(secret).NotTo(BeEmpty(), "OLM mounts the webhook certificate it arranged as volume webhook-cert")
	sa, err := Kubectl("-n", o.Namespace, "get", "deployment", o.Deployment, "-o",
		"jsonpath={.spec.template.spec.serviceAccountName}")
	Expect(err).NotTo(HaveOccurred())
	Expect(sa).To(Equal(o.ServiceAccount))
	binary := o.binary(projectDir)
	pods := o.Pods()
	bindPod := bindsPodAddress(binary)
	if !bindPod && len(pods) > 1 {
		Fail(fmt.Sprintf("%s has no --webhook-bind-address, so its %d host managers cannot each bind their pod's IP", binary, len(pods)))
	}
	for _, pod := range pods {
		o.managers = append(o.managers, o.startOne(binary, bindPod, pod, secret, extraEnv))
	}
}

// startOne runs the manager on the host as pod, serving the webhook at the
// pod's IP (bound to it where bindPod) with the certificate in secret, and
// waits until it listens there.
func (o *OLMOperator) startOne(binary string, bindPod bool, pod OperatorPod, secret string, extraEnv []string) *Process {
	By(fmt.Sprintf("running the manager on the host as pod %s (%s)", pod.Name, pod.IP))
	if out, err := exec.Command("ip", "addr", "add", pod.IP+"/32", "dev", "lo").CombinedOutput(); err != nil {
		Expect(string(out)).To(Or(ContainSubstring("File exists"), ContainSubstring("already assigned")),
			"the suite adds the operator pod's IP to lo so kube-apiserver reaches the webhook (needs root / CAP_NET_ADMIN)")
	} else {
		o.added = append(o.added, pod.IP)
	}
	kubeconfig := Impersonating(ServiceAccountUser(o.Namespace, o.ServiceAccount),
		filepath.Join(o.WorkDir, "manager-"+pod.Name+".kubeconfig"))
	certDir := filepath.Join(o.WorkDir, "certs-"+pod.Name)
	Expect(os.MkdirAll(certDir, 0o700)).To(Succeed())
	for _, key := range []string{"tls.crt", "tls.key"} {
		var data []byte
		Eventually(func() error {
			out, err := Kubectl("-n", o.Namespace, "get", "secret", secret, "-o",
				`jsonpath={.data.`+strings.ReplaceAll(key, ".", `\.`)+`}`)
			if err == nil {
				data, err = base64.StdEncoding.DecodeString(out)
			}
			if err == nil && len(data) == 0 {
				err = fmt.Errorf("secret %s has no %s yet", secret, key)
			}
			return err
		}, time.Minute, time.Second).Should(Succeed())
		Expect(os.WriteFile(filepath.Join(certDir, key), data, 0o600)).To(Succeed())
	}

	addr := net.JoinHostPort(pod.IP, "9443")
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		_ = c.Close()
		Fail("something else already listens on " + addr + " (a manager left by an interrupted run?)")
	}
	env := append(o.PodEnv(pod.Name), extraEnv...)
	env = append(env, "KUBECONFIG="+kubeconfig)
	args := []string{"--webhook-cert-path=" + certDir,
		// Leader election as in the pods: the lease is in the operator's
		// namespace, which the install need not target.
		"--leader-elect", "--leader-election-namespace=" + o.Namespace,
		"--metrics-bind-address=0", "--health-probe-bind-address=127.0.0.1:0"}
	if bindPod {
		args = append(args, "--webhook-bind-address="+addr)
	}
	manager, err := Start("manager", filepath.Join(o.WorkDir, "manager-"+pod.Name+".log"), env,
		binary, args...)
	Expect(err).NotTo(HaveOccurred())
	Eventually(func() error {
		if exited, err := manager.Exited(); exited {
			StopTrying("the manager exited").Wrap(err).Now()
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
		}
		return err
	}, time.Minute, 200*time.Millisecond).Should(Succeed(), "the webhook server listens at the pod's address")
	return manager
}

func (o *OLMOperator) binary(projectDir string) string {
	if o.Binary != "" {
		return o.Binary
	}
	return filepath.Join(projectDir, "bin", "manager")
}

// bindsPodAddress says whether the manager binary has --webhook-bind-address
// (releases before 0.3.0 do not: their webhook server binds :9443 on every
// address, which serves a single pod's IP as well).
func bindsPodAddress(binary string) bool {
	out, _ := exec.Command(binary, "--help").CombinedOutput() // exits 0 or 2 after the usage
	return strings.Contains(string(out), "-webhook-bind-address")
}

// StopManager stops the host managers, if any run.
func (o *OLMOperator) StopManager() {
	for _, m := range o.managers {
		m.Stop()
	}
	o.managers = nil
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
