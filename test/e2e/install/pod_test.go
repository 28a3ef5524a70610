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
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/mydeployment-io/mydeployment-operator/test/utils"
)

// The names config/default gives (namePrefix and namespace).
const (
	operatorNamespace    = "mydeployment-operator-system"
	operatorDeployment   = "mydeployment-operator-controller-manager"
	webhookSecret        = "mydeployment-operator-webhook-server-cert"
	webhookConfiguration = "mydeployment-operator-validating-webhook-configuration"
	webhookService       = "mydeployment-operator-webhook-service"
)

// operator is the operator's Deployment (its pods and their resolved
// environment); pods are the managers run on the host as its pods.
var (
	operator = &utils.OLMOperator{Namespace: operatorNamespace, Deployment: operatorDeployment}
	pods     []*hostPod
)

// hostPod runs the manager binary on the host as the kubelet would run one
// pod of the operator Deployment, which kwok only pretends to run: the
// container's args and environment from the Deployment, a token of its
// service account (so it has exactly the RBAC the manifests grant), its
// secret volumes kept in step with their Secrets in a host directory of its
// own (as each pod's kubelet syncs them), and the pod's IP added to lo,
// where kube-apiserver (--enable-aggregator-routing) calls the webhook
// Service's endpoints. The addresses differ from the pod's: the webhook
// server binds the pod's IP (in a pod it binds :9443 of the pod's own
// network namespace; here the replicas share the host's), the probe and
// metrics servers free ports on 127.0.0.1; and leader election is told the
// namespace a pod reads from its service account's files.
type hostPod struct {
	name, ip string
	dir      string // its logs, kubeconfig and volumes
	// serviceAccount is the pod's, as RBAC names it.
	serviceAccount string
	probeAddr      string
	args, env      []string
	manager        *utils.Process
	starts         int // of its container
	volumes        []*secretVolume
	addedIP        bool
}

// startPods runs a host manager for each pod of the Deployment; with
// holdVolumes their secret volumes stay empty until syncVolumes.
func startPods(holdVolumes bool) {
	operator.WorkDir = workDir
	pods = nil
	for _, op := range operator.Pods() {
		p := &hostPod{name: op.Name, ip: op.IP, dir: filepath.Join(workDir, op.Name)}
		p.prepare()
		if !holdVolumes {
			p.syncVolumes()
		}
		p.run()
		pods = append(pods, p)
	}
}

// prepare reads what the pod runs with from the Deployment: its service
// account's token, its volumes, its args and environment; and adds its IP
// to lo.
func (p *hostPod) prepare() {
	Expect(podRange.Contains(net.ParseIP(p.ip))).To(BeTrue(),
		"the pod's IP %s is in this cluster's own pod range %s, no other suite's", p.ip, podRange)
	Expect(os.MkdirAll(p.dir, 0o755)).To(Succeed())
	d, err := clientset.AppsV1().Deployments(operatorNamespace).Get(context.Background(), operatorDeployment, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	spec := d.Spec.Template.Spec
	Expect(spec.Containers).To(HaveLen(1))
	c := spec.Containers[0]
	Expect(c.Command).To(Equal([]string{"/manager"}), "the image runs the manager binary")

	p.serviceAccount = utils.ServiceAccountUser(operatorNamespace, spec.ServiceAccountName)
	By("giving the host manager of " + p.name + " a token of the pod's service account " + spec.ServiceAccountName)
	token := utils.MustKubectl("create", "token", spec.ServiceAccountName, "-n", operatorNamespace, "--duration=2h")
	kubeconfig := tokenKubeconfig(strings.TrimSpace(token), filepath.Join(p.dir, "manager.kubeconfig"))

	mounts := map[string]string{} // the pod's mount path: the host directory
	for _, m := range c.VolumeMounts {
		i := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
		Expect(i).NotTo(Equal(-1), "volume %s", m.Name)
		v := spec.Volumes[i]
		Expect(v.Secret).NotTo(BeNil(), "the suite mounts secret volumes only (volume %s)", v.Name)
		dir := filepath.Join(p.dir, "volumes", v.Name)
		Expect(os.MkdirAll(dir, 0o700)).To(Succeed())
		mounts[m.MountPath] = dir
		p.volumes = append(p.volumes, &secretVolume{secret: v.Secret.SecretName, dir: dir})
	}

	for _, a := range c.Args {
		for path, dir := range mounts {
			a = strings.ReplaceAll(a, path, dir)
		}
		switch {
		case strings.HasPrefix(a, "--health-probe-bind-address="):
			p.probeAddr = freeAddr()
			a = "--health-probe-bind-address=" + p.probeAddr
		case strings.HasPrefix(a, "--metrics-bind-address="):
			a = "--metrics-bind-address=" + freeAddr()
		}
		p.args = append(p.args, a)
	}
	Expect(p.probeAddr).NotTo(BeEmpty(), "the Deployment sets --health-probe-bind-address (its probes use it)")
	p.args = append(p.args, "--leader-election-namespace="+operatorNamespace,
		"--webhook-bind-address="+net.JoinHostPort(p.ip, "9443"))
	p.env = append(operator.PodEnv(p.name), "KUBECONFIG="+kubeconfig)

	By(fmt.Sprintf("adding the pod's IP %s to lo", p.ip))
	if out, err := exec.Command("ip", "addr", "add", p.ip+"/32", "dev", "lo").CombinedOutput(); err != nil {
		Expect(string(out)).To(Or(ContainSubstring("File exists"), ContainSubstring("already assigned")),
			"the suite adds the operator pod's IP to lo so kube-apiserver reaches the webhook (needs root / CAP_NET_ADMIN)")
	} else {
		p.addedIP = true
	}
}

// run starts the manager process, as the kubelet starts (or restarts) the
// pod's container.
func (p *hostPod) run() {
	addr := net.JoinHostPort(p.ip, "9443")
	if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		_ = conn.Close()
		Fail("something already listens on " + addr + ", where the webhook server of pod " + p.name +
			" binds (a host manager left by an interrupted run?)")
	}
	By(fmt.Sprintf("running bin/manager %s as pod %s", strings.Join(p.args, " "), p.name))
	log := "manager.log" // then manager-restart-1.log, ... : each start's log whole
	if p.starts > 0 {
		log = fmt.Sprintf("manager-restart-%d.log", p.starts)
	}
	p.starts++
	var err error
	p.manager, err = utils.Start("manager", filepath.Join(p.dir, log), p.env,
		filepath.Join(projectDir, "bin", "manager"), p.args...)
	Expect(err).NotTo(HaveOccurred())
}

// syncVolumes starts keeping the secret volumes in step with their Secrets.
func (p *hostPod) syncVolumes() {
	for _, v := range p.volumes {
		v.start()
	}
}

// readyz is the manager's /readyz?verbose: its status code and body (0 while it does not answer).
func (p *hostPod) readyz() (int, string) {
	if exited, err := p.manager.Exited(); exited {
		StopTrying("the manager of " + p.name + " exited").Wrap(err).Now()
	}
	client := http.Client{Timeout: 2 * time.Second}
	resp, err := client.Get("http://" + p.probeAddr + "/readyz?verbose")
	if err != nil {
		return 0, err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// log is the manager's output so far (of its last start).
func (p *hostPod) log() string {
	out, err := os.ReadFile(p.manager.Log)
	Expect(err).NotTo(HaveOccurred())
	return string(out)
}

// leads says whether the manager's log says it took the leader lease.
func (p *hostPod) leads() bool {
	return strings.Contains(p.log(), `"logger":"leaderelection","msg":"Successfully acquired lease"`)
}

// stop stops the manager and the volume syncs and removes the address it
// added. Safe to call twice.
func (p *hostPod) stop() {
	p.manager.Stop()
	for _, v := range p.volumes {
		v.stop()
	}
	p.volumes = nil
	if p.addedIP {
		_ = exec.Command("ip", "addr", "del", p.ip+"/32", "dev", "lo").Run()
		p.addedIP = false
	}
}

// stopPods stops every host manager.
func stopPods() {
	for _, p := range pods {
		p.stop()
	}
}

// syncAllVolumes plays every pod's kubelet syncing its secret volumes.
func syncAllVolumes() {
	for _, p := range pods {
		p.syncVolumes()
	}
}

// leader is the pod whose manager leads; it fails unless exactly one does.
func leader() (lead, other *hostPod) {
	GinkgoHelper()
	var leaders []*hostPod
	Eventually(func() []*hostPod {
		leaders = nil
		for _, p := range pods {
			if p.leads() {
				leaders = append(leaders, p)
			}
		}
		return leaders
	}, time.Minute, 200*time.Millisecond).Should(HaveLen(1), "exactly one manager takes the lease")
	Expect(pods).To(HaveLen(2))
	if pods[0] == leaders[0] {
		return pods[0], pods[1]
	}
	return pods[1], pods[0]
}

// tokenKubeconfig writes to path $KUBECONFIG's current cluster with a user
// that presents token.
func tokenKubeconfig(token, path string) string {
	cfg, err := clientcmd.LoadFromFile(os.Getenv("KUBECONFIG"))
	Expect(err).NotTo(HaveOccurred())
	cluster := cfg.Clusters[cfg.Contexts[cfg.CurrentContext].Cluster]
	Expect(cluster).NotTo(BeNil())
	out := clientcmdapi.NewConfig()
	out.Clusters["cluster"] = cluster
	out.AuthInfos["pod"] = &clientcmdapi.AuthInfo{Token: token}
	out.Contexts["pod"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: "pod"}
	out.CurrentContext = "pod"
	Expect(clientcmd.WriteToFile(*out, path)).To(Succeed())
	return path
}

func freeAddr() string {
	port, err := utils.FreePort()
	Expect(err).NotTo(HaveOccurred())
	return fmt.Sprintf("127.0.0.1:%d", port)
}

// secretVolume keeps dir holding the Secret's keys as files, as the kubelet
// keeps a pod's secret volume (its AtomicWriter): each key a symlink into
// ..data, itself a symlink to a directory holding one version of all the
// keys, swapped in one rename, so a reader never sees a new certificate
// beside an old key.
type secretVolume struct {
	secret, dir string
	once        sync.Once
	cancel      context.CancelFunc
	done        chan struct{}
	version     int
}

func (v *secretVolume) start() {
	v.once.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		v.cancel, v.done = cancel, make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(v.done)
			for {
				v.sync(ctx)
				select {
				case <-ctx.Done():
					return
				case <-time.After(500 * time.Millisecond):
				}
			}
		}()
	})
}

func (v *secretVolume) sync(ctx context.Context) {
	s, err := clientset.CoreV1().Secrets(operatorNamespace).Get(ctx, v.secret, metav1.GetOptions{})
	if err != nil {
		return // the kubelet retries too
	}
	data := filepath.Join(v.dir, "..data")
	files, _ := filepath.Glob(filepath.Join(data, "*"))
	same := len(files) == len(s.Data)
	for key, want := range s.Data {
		if got, err := os.ReadFile(filepath.Join(data, key)); err != nil || !bytes.Equal(got, want) {
			same = false
		}
	}
	if same {
		return
	}
	v.version++
	version := fmt.Sprintf("..%d", v.version)
	Expect(os.Mkdir(filepath.Join(v.dir, version), 0o700)).To(Succeed())
	for key, content := range s.Data {
		Expect(os.WriteFile(filepath.Join(v.dir, version, key), content, 0o600)).To(Succeed())
	}
	old, _ := os.Readlink(data)
	tmp := filepath.Join(v.dir, "..data_tmp")
	_ = os.Remove(tmp)
	Expect(os.Symlink(version, tmp)).To(Succeed())
	Expect(os.Rename(tmp, data)).To(Succeed())
	links, _ := filepath.Glob(filepath.Join(v.dir, "*"))
	for _, l := range links {
		// Keys gone from the Secret (the ..-names are the volume's own).
		if k := filepath.Base(l); !strings.HasPrefix(k, "..") && s.Data[k] == nil {
			_ = os.Remove(l)
		}
	}
	for key := range s.Data {
		if _, err := os.Lstat(filepath.Join(v.dir, key)); err != nil {
			Expect(os.Symlink(filepath.Join("..data", key), filepath.Join(v.dir, key))).To(Succeed())
		}
	}
	if old != "" {
		Expect(os.RemoveAll(filepath.Join(v.dir, old))).To(Succeed())
	}
}

func (v *secretVolume) stop() {
	if v.cancel != nil {
		v.cancel()
		<-v.done
	}
}
