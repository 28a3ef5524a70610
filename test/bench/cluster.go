package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// cluster is a kwokctl cluster (binary runtime) the benchmark owns: its
// state lives under workDir/clusters/name and it is deleted when done.
type cluster struct {
	name, root, workDir string
	kubeconfig          string
	auditLog            string
}

func (c *cluster) state() string { return filepath.Join(c.workDir, "clusters", c.name) }

// stages is the file of kwok Stages every party's pods are played with:
// hack/kwok/stages.yaml, the local cluster's (hack/local-cluster.sh).
func (c *cluster) stages() string { return filepath.Join(c.root, "hack", "kwok", "stages.yaml") }

func (c *cluster) bin(p string) string {
	return filepath.Join(c.root, "bin", p)
}

// auditPolicy records every resource request once, when it completes, at
// Metadata level (verb, resource, user agent, timestamps; no bodies).
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: None
  nonResourceURLs: ["*"]
- level: Metadata
`

// up starts the cluster with every client at qps/burst and kcm's deployment
// and replicaset workers at workers, then adds nodes fake nodes that each
// hold podsPerNode pods (kwok's default template holds 110 and a /24).
func (c *cluster) up(ctx context.Context, cfg *config) error {
	c.down()
	if err := os.MkdirAll(c.workDir, 0o755); err != nil {
		return err
	}
	policy := filepath.Join(c.workDir, c.name+"-audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o644); err != nil {
		return err
	}
	qps, burst := fmt.Sprint(cfg.QPS), fmt.Sprint(cfg.Burst)
	args := []string{"create", "cluster", "--name", c.name, "--runtime", "binary",
		"--etcd-binary", c.bin("k8s/etcd"),
		"--kube-apiserver-binary", c.bin("k8s/kube-apiserver"),
		"--kube-controller-manager-binary", c.bin("k8s/kube-controller-manager"),
		"--kube-scheduler-binary", c.bin("k8s/kube-scheduler"),
		"--kwok-controller-binary", c.bin("kwok"),
		"--kubeconfig", "", "--wait", "90s",
		"--kube-audit-policy", policy,
		// kwok plays the kubelet with the local cluster's Stages (readiness
		// gates, image restarts, resizes), so in-place updates work; the file
		// holds Stages only, so kwok's parallelism keeps its defaults.
		"-c", c.stages(),
		// kwokctl v0.8.0 files the n-th component it meets under the index of
		// its first extra arg (cluster.go, mutationComponentPatches), and
		// panics on that component's next arg unless the two agree: the
		// first three args name the three components, in that order.
		"--extra-args", "kube-controller-manager=kube-api-qps=" + qps,
		"--extra-args", "kube-scheduler=kube-api-qps=" + qps,
		"--extra-args", "kube-apiserver=audit-log-mode=batch",
		// A batch of audit events is written within a second (the default
		// waits up to 30 s for 400 events): the counts are read 3 s after
		// the last scenario, and a quiet window late in the run was seen
		// empty, its batch not yet written (writes_at_rest then had no figure).
		"--extra-args", "kube-apiserver=audit-log-batch-max-wait=1s",
		// A party's cleanup deletes its namespace's pods with one
		// DeleteCollection, which the API server works through one pod at a
		// time by default: 5,000 pods outlasted the request (a minute) and
		// each cleanup took about three, a sixth of a run of record. No
		// scenario deletes a collection (the controllers, the garbage
		// collector and the raw client delete pod by pod), so only the
		// cleanups, which are never timed, go faster.
		"--extra-args", "kube-apiserver=delete-collection-workers=10",
		"--extra-args", "kube-controller-manager=kube-api-burst=" + burst,
		"--extra-args", "kube-scheduler=kube-api-burst=" + burst,
		"--extra-args", "kube-controller-manager=concurrent-deployment-syncs=" + fmt.Sprint(cfg.Workers),
		"--extra-args", "kube-controller-manager=concurrent-replicaset-syncs=" + fmt.Sprint(cfg.Workers),
		// One instance of each, as in a test cluster: with leader election,
		// a lease renewal that times out on a saturated API server (the raw
		// client keeps 500 creates in flight) makes the component exit, and
		// the scenario then waits for pods nobody schedules.
		"--extra-args", "kube-scheduler=leader-elect=false",
		"--extra-args", "kube-controller-manager=leader-elect=false",
	}
	if cfg.KwokPodWork != kwokDefaultPodWorkers {
		conf := filepath.Join(c.workDir, c.name+"-kwok.yaml")
		if err := os.WriteFile(conf, []byte(kwokConfiguration(cfg.KwokPodWork)), 0o644); err != nil {
			return err
		}
		args = append(args, "-c", conf)
	}
	if addr := os.Getenv("ADVERTISE_ADDRESS"); addr != "" {
		args = append(args, "--extra-args", "kube-apiserver=advertise-address="+addr)
	}
	if out, err := c.kwokctl(ctx, args...); err != nil {
		return fmt.Errorf("kwokctl create cluster: %w\n%s", err, out)
	}
	c.kubeconfig = filepath.Join(c.state(), "kubeconfig.yaml")
	c.auditLog = filepath.Join(c.state(), "logs", "audit.log")
	// create exits 0 even when the apiserver never came up: check ourselves.
	if err := poll(ctx, 60*time.Second, 500*time.Millisecond, func() bool {
		return c.kubectl(ctx, "get", "--raw", "/readyz") == nil
	}); err != nil {
		return fmt.Errorf("kube-apiserver not ready (logs in %s/logs): %w", c.state(), err)
	}
	if out, err := c.kwokctl(ctx, "scale", "node", "--name", c.name, "--replicas", fmt.Sprint(cfg.Nodes),
		"--param", fmt.Sprintf(".allocatable.pods=%d", cfg.PodsPerNode),
		"--param", fmt.Sprintf(`.podCIDRs=["10.0.0.0/%d"]`, podCIDRPrefix(cfg.PodsPerNode))); err != nil {
		return fmt.Errorf("kwokctl scale node: %w\n%s", err, out)
	}
	if err := c.kubectl(ctx, "wait", "--for=condition=Ready", "node", "--all", "--timeout=60s"); err != nil {
		return err
	}
	// The CRD, then poll Established (kubectl wait fails on a CRD with no conditions yet).
	if err := c.kubectl(ctx, "apply", "--server-side", "-f", filepath.Join(c.root, "config", "crd", "bases")); err != nil {
		return err
	}
	return poll(ctx, 60*time.Second, 200*time.Millisecond, func() bool {
		out, err := c.kubectlOut(ctx, "get", "crd", "mydeployments.apps.mydeployment.io",
			"-o", `jsonpath={.status.conditions[?(@.type=="Established")].status}`)
		return err == nil && out == "True"
	})
}

// podCIDRPrefix is the pod CIDR's prefix length a node needs to give each
// of its pods an address: /20 (4,094 addresses) or larger.
func podCIDRPrefix(podsPerNode int) int {
	prefix := 20
	for prefix > 8 && 1<<(32-prefix) < podsPerNode+2 {
		prefix--
	}
	return prefix
}

// kwokDefaultPodWorkers is kwok v0.8.0's podPlayStageParallelism default.
const kwokDefaultPodWorkers = 4

// kwokConfiguration sets kwok's pod workers. A KwokConfiguration given to
// kwokctl replaces kwok's whole configuration, so every parallelism is
// listed (kwok exits on a zero one): the others at kwok's defaults.
func kwokConfiguration(podWorkers int) string {
	return fmt.Sprintf(`apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  podPlayStageParallelism: %d
  nodePlayStageParallelism: 4
  nodeLeaseParallelism: 4
  podsOnNodeSyncParallelism: 1
`, podWorkers)
}

// down deletes the cluster and waits until none of its processes is left.
func (c *cluster) down() {
	pids := map[string]int{}
	for _, comp := range components {
		if pid, err := c.pid(comp); err == nil {
			pids[comp] = pid
		}
	}
	if _, err := os.Stat(c.state()); err != nil {
		return
	}
	_, _ = c.kwokctl(context.Background(), "delete", "cluster", "--name", c.name)
	// kwokctl returns before its processes exit; wait, then make sure.
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if alive(pid) {
			if p, err := os.FindProcess(pid); err == nil {
				_ = p.Kill()
			}
		}
	}
	_ = os.RemoveAll(c.state())
}

// pid reads a component's pid from kwokctl's pid file (no trailing newline).
func (c *cluster) pid(component string) (int, error) {
	b, err := os.ReadFile(filepath.Join(c.state(), "pids", component+".pid"))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// components are the cluster's processes, as kwokctl names their pid files.
var components = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok-controller"}

// dead returns an error naming the first component that is no longer running.
func (c *cluster) dead() error {
	for _, comp := range components {
		if pid, err := c.pid(comp); err != nil || !alive(pid) {
			return fmt.Errorf("%s is not running (its log is in %s/logs)", comp, c.state())
		}
	}
	return nil
}

func alive(pid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return err == nil
}

func (c *cluster) kwokctl(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, c.bin("kwokctl"), args...)
	cmd.Env = append(os.Environ(), "KWOK_WORKDIR="+c.workDir, "KWOK_KUBECTL_BINARY="+c.bin("kubectl"))
	return cmd.CombinedOutput()
}

func (c *cluster) kubectl(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, c.bin("kubectl"), append([]string{"--kubeconfig", c.kubeconfig}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

func (c *cluster) kubectlOut(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, c.bin("kubectl"), append([]string{"--kubeconfig", c.kubeconfig}, args...)...).Output()
	return strings.TrimSpace(string(out)), err
}

// poll calls cond every interval until it holds or timeout passes.
func poll(ctx context.Context, timeout, interval time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}
