package prometheus

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// The rollout the dashboard test drives: the built manager (bin/manager,
// as a user runs it) against a real kube-apiserver and etcd (envtest), a
// fake kubelet in this process, and one MyDeployment taken through what
// the dashboards show: a refused pod create (ReplicaFailure), a canary
// rollout in place, a drain, and a rollout aborted after its deadline.

var mdGVK = schema.GroupVersionKind{Group: "apps.mydeployment.io", Version: "v1beta1", Kind: "MyDeployment"}

const (
	objectName = "web"
	// holdFor keeps a passing state (a refused create) for a few scrapes:
	// Prometheus sees only what lasts a scrape interval.
	holdFor = 4 * scrapeInterval
	// badImage never becomes ready under the fake kubelet.
	badImage = "bad:3"
)

// cluster is envtest's API server with the CRDs, a client, and a
// kubeconfig for the manager.
type cluster struct {
	env        *envtest.Environment
	c          client.Client
	kubeconfig string
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		env.BinaryAssetsDirectory = filepath.Join(root, "bin", "k8s")
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting envtest (bin/k8s: make control-plane): %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	c, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	user, err := env.AddUser(envtest.User{Name: "manager", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	return &cluster{env: env, c: c, kubeconfig: path}
}

// startManager runs the built manager with its metrics on plain HTTP at a
// free local port and returns the metrics URL and its log file.
func startManager(t *testing.T, kubeconfig string) (url, logPath string) {
	t.Helper()
	bin := os.Getenv("MANAGER")
	if bin == "" {
		bin = filepath.Join(root, "bin", "manager")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("the manager binary: %v (make build)", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	logPath = filepath.Join(t.TempDir(), "manager.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	// --shards: one replica holding every slot (the same rollouts as
	// without), so that the dashboards' shard panels have data too.
	cmd := exec.Command(bin, "--metrics-bind-address="+addr, "--metrics-secure=false",
		"--health-probe-bind-address=0", "--status-batch-period=0",
		"--shards", "--leader-election-namespace=default", "--leader-elect-retry-period=500ms")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "ENABLE_WEBHOOKS=false")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = logFile.Close()
		if t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil {
				t.Logf("manager log (last 40 lines):\n%s", lastLines(string(b), 40))
			}
		}
	})
	return "http://" + addr + "/metrics", logPath
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// kubelet plays the kubelet for the pods of ns every tick until ctx ends:
// it binds each new pod to the first node that is not cordoned, reports
// its containers running the spec's images (restarted when an image
// changes in place), ready unless the image is badImage, and the pod Ready
// when its containers and readiness gates are; it finishes the deletion
// of terminating pods (a kubelet confirms it).
func kubelet(ctx context.Context, c client.Client, ns string, nodes []string) {
	for ctx.Err() == nil {
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(ns)); err == nil {
			for i := range pods.Items {
				playPod(ctx, c, &pods.Items[i], nodes)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func playPod(ctx context.Context, c client.Client, pod *corev1.Pod, nodes []string) {
	switch {
	case pod.DeletionTimestamp != nil:
		_ = c.Delete(ctx, pod, client.GracePeriodSeconds(0))
	case pod.Spec.NodeName == "":
		if node := schedulable(ctx, c, nodes); node != "" {
			_ = c.SubResource("binding").Create(ctx, pod, &corev1.Binding{
				ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
				Target:     corev1.ObjectReference{Kind: "Node", Name: node},
			})
		}
	default:
		if want := podStatus(pod); want != nil {
			_ = c.Status().Update(ctx, want) // a conflict: the next tick
		}
	}
}

// schedulable is the first of nodes that is not cordoned.
func schedulable(ctx context.Context, c client.Client, nodes []string) string {
	for _, name := range nodes {
		var node corev1.Node
		if c.Get(ctx, types.NamespacedName{Name: name}, &node) == nil && !node.Spec.Unschedulable {
			return name
		}
	}
	return ""
}

// podStatus is pod with the status a kubelet would report, or nil if it
// already has it.
func podStatus(p *corev1.Pod) *corev1.Pod {
	pod := p.DeepCopy()
	pod.Status.Phase = corev1.PodRunning
	old := map[string]corev1.ContainerStatus{}
	for _, s := range pod.Status.ContainerStatuses {
		old[s.Name] = s
	}
	ready := corev1.ConditionTrue
	pod.Status.ContainerStatuses = nil
	for _, ctr := range pod.Spec.Containers {
		s, ok := old[ctr.Name]
		if !ok || s.Image != ctr.Image {
			restarts := s.RestartCount
			if ok {
				restarts++
			}
			s = corev1.ContainerStatus{Name: ctr.Name, Image: ctr.Image, ImageID: "sha256:" + ctr.Image,
				Ready: ctr.Image != badImage, RestartCount: restarts, Started: ptr(true),
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}
		}
		if !s.Ready {
			ready = corev1.ConditionFalse
		}
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, s)
	}
	pod.Status.ObservedGeneration = pod.Generation
	for _, g := range pod.Spec.ReadinessGates {
		if c := condition(pod, g.ConditionType); c == nil || c.Status != corev1.ConditionTrue {
			ready = corev1.ConditionFalse
		}
	}
	if c := condition(pod, corev1.PodReady); c == nil {
		pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: ready, LastTransitionTime: metav1.Now()})
	} else if c.Status != ready {
		c.Status, c.LastTransitionTime = ready, metav1.Now()
	}
	if equality.Semantic.DeepEqual(pod.Status, p.Status) {
		return nil
	}
	return pod
}

func condition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// newObject is the MyDeployment the test drives: 3 pods of good:1, one
// surge pod at a time, updated in place, in canary steps, aborted when
// past its deadline, replaced make-before-break on draining nodes.
func newObject(ns string) *unstructured.Unstructured {
	md := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": objectName, "namespace": ns, "annotations": map[string]any{
			"apps.mydeployment.io/update-mode":  "InPlaceIfPossible",
			"apps.mydeployment.io/canary-steps": "1, pause 2s, 100%",
			"apps.mydeployment.io/on-failure":   "Abort",
			"apps.mydeployment.io/drain":        "SurgeFirst",
		}},
		"spec": map[string]any{
			"replicas":                int64(3),
			"progressDeadlineSeconds": int64(600),
			"selector":                map[string]any{"matchLabels": map[string]any{"app": objectName}},
			"strategy": map[string]any{"type": "RollingUpdate",
				"rollingUpdate": map[string]any{"maxSurge": int64(1), "maxUnavailable": int64(0)}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": objectName}},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "app", "image": "good:1"}}},
			},
		},
	}}
	md.SetGroupVersionKind(mdGVK)
	return md
}

// scenario drives the MyDeployment of ns through every state the
// dashboards show, waiting for each; it fails t if one is not reached.
func (cl *cluster) scenario(ctx context.Context, t *testing.T, ns string) {
	c := cl.c
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"node-a", "node-b"} {
		must(c.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}))
	}
	kctx, stop := context.WithCancel(ctx)
	defer stop()
	go kubelet(kctx, c, ns, []string{"node-a", "node-b"})

	// A ResourceQuota of no pods, its status written as kube-controller-
	// manager would: kube-apiserver refuses every pod create until it goes.
	none := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "hold", Namespace: ns},
		Spec: corev1.ResourceQuotaSpec{Hard: none}}
	must(c.Create(ctx, quota))
	quota.Status = corev1.ResourceQuotaStatus{Hard: none, Used: none}
	must(c.Status().Update(ctx, quota))
	md := newObject(ns)
	must(c.Create(ctx, md))
	cl.waitFor(ctx, t, md, "ReplicaFailure=True (pod creates refused)", func(o *unstructured.Unstructured) bool {
		return conditionIs(o, "ReplicaFailure", "True", "")
	})
	time.Sleep(holdFor) // a few scrapes see it
	must(c.Delete(ctx, quota))
	cl.waitFor(ctx, t, md, "3 pods available", complete("good:1"))

	cl.setImage(ctx, t, md, "good:2", 0)
	cl.waitFor(ctx, t, md, "the canary rollout to good:2 complete", complete("good:2"))

	var node corev1.Node
	must(c.Get(ctx, types.NamespacedName{Name: "node-a"}, &node))
	node.Spec.Unschedulable = true
	must(c.Update(ctx, &node))
	cl.waitFor(ctx, t, md, "every pod moved off the drained node-a", func(o *unstructured.Unstructured) bool {
		return complete("good:2")(o) && cl.podsOn(ctx, ns, "node-a") == 0
	})

	cl.setImage(ctx, t, md, badImage, 3)
	cl.waitFor(ctx, t, md, "the rollout to bad:3 aborted", func(o *unstructured.Unstructured) bool {
		return conditionIs(o, "Progressing", "False", "RolloutAborted")
	})
	cl.waitFor(ctx, t, md, "every pod back on good:2", func(o *unstructured.Unstructured) bool {
		return available(o) == 3 && cl.podsRunning(ctx, ns, "good:2") == 3
	})
}

// setImage changes the template's image (and, if deadline > 0, the
// progress deadline in seconds): a new revision.
func (cl *cluster) setImage(ctx context.Context, t *testing.T, md *unstructured.Unstructured, image string, deadline int64) {
	t.Helper()
	spec := map[string]any{"template": map[string]any{"spec": map[string]any{
		"containers": []any{map[string]any{"name": "app", "image": image}}}}}
	if deadline > 0 {
		spec["progressDeadlineSeconds"] = deadline
	}
	patch := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	data, err := patch.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.c.Patch(ctx, md, client.RawPatch(types.MergePatchType, data)); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls md until ok says what; it fails t after a minute.
func (cl *cluster) waitFor(ctx context.Context, t *testing.T, md *unstructured.Unstructured, what string, ok func(*unstructured.Unstructured) bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		cur := &unstructured.Unstructured{}
		cur.SetGroupVersionKind(mdGVK)
		err := cl.c.Get(ctx, client.ObjectKeyFromObject(md), cur)
		if err == nil && ok(cur) {
			t.Logf("%s (%s)", what, time.Now().Format(time.TimeOnly))
			return
		}
		if time.Now().After(deadline) {
			status, _, _ := unstructured.NestedMap(cur.Object, "status")
			t.Fatalf("waiting for %s: still not there after a minute (err %v); status: %v", what, err, status)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// complete says the rollout to image is complete: every pod updated and
// available, nothing old left, and the pods run it.
func complete(image string) func(*unstructured.Unstructured) bool {
	return func(o *unstructured.Unstructured) bool {
		gen := o.GetGeneration()
		observed, _, _ := unstructured.NestedInt64(o.Object, "status", "observedGeneration")
		updated, _, _ := unstructured.NestedInt64(o.Object, "status", "updatedReplicas")
		replicas, _, _ := unstructured.NestedInt64(o.Object, "status", "replicas")
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		img := ""
		if len(containers) == 1 {
			img, _, _ = unstructured.NestedString(containers[0].(map[string]any), "image")
		}
		return img == image && observed == gen && updated == 3 && replicas == 3 && available(o) == 3 &&
			conditionIs(o, "Progressing", "True", "NewRevisionAvailable")
	}
}

func available(o *unstructured.Unstructured) int64 {
	n, _, _ := unstructured.NestedInt64(o.Object, "status", "availableReplicas")
	return n
}

// conditionIs says o has the condition typ with status (and reason, if not empty).
func conditionIs(o *unstructured.Unstructured, typ, status, reason string) bool {
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			return m["status"] == status && (reason == "" || m["reason"] == reason)
		}
	}
	return false
}

// podsOn counts the live pods of ns on node.
func (cl *cluster) podsOn(ctx context.Context, ns, node string) int {
	return cl.countPods(ctx, ns, func(p *corev1.Pod) bool { return p.Spec.NodeName == node })
}

// podsRunning counts the live pods of ns whose container runs image.
func (cl *cluster) podsRunning(ctx context.Context, ns, image string) int {
	return cl.countPods(ctx, ns, func(p *corev1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].Image == image
	})
}

func (cl *cluster) countPods(ctx context.Context, ns string, match func(*corev1.Pod) bool) int {
	var pods corev1.PodList
	if err := cl.c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		return -1
	}
	n := 0
	for i := range pods.Items {
		if pods.Items[i].DeletionTimestamp == nil && match(&pods.Items[i]) {
			n++
		}
	}
	return n
}

// newNamespace creates the namespace the rollout runs in.
func (cl *cluster) newNamespace(ctx context.Context, t *testing.T) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "dashboards-"}}
	if err := cl.c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}
