// Package memory measures what the manager's memory costs: the resident
// set of the built manager, run as a process against envtest, with and
// without 1,000 Secrets of 100 KB in the cluster (issue 33: the config
// watch must keep no Secret data in memory). It runs only when asked:
//
//	MEMORY_TEST=1 KUBEBUILDER_ASSETS=$PWD/bin/k8s go test ./test/memory/ -v -count=1 -timeout 20m
package memory

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

const (
	secrets    = 1000
	secretSize = 100 * 1024
	// limit is the acceptance: the manager's RSS may grow by less.
	limit = 20 << 20
)

func TestConfigWatchMemory(t *testing.T) {
	if os.Getenv("MEMORY_TEST") == "" {
		t.Skip("set MEMORY_TEST=1 (and KUBEBUILDER_ASSETS) to measure the manager's memory")
	}
	ctx := context.Background()
	root := filepath.Join("..", "..")
	env := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join(root, "config", "crd", "bases")}, ErrorIfCRDPathMissing: true}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = appsv1beta1.AddToScheme(scheme)
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	admin, err := env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := admin.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "kubeconfig"), kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	manager := filepath.Join(dir, "manager")
	build := exec.Command("go", "build", "-o", manager, "./cmd")
	build.Dir, build.Stdout, build.Stderr = root, os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		t.Fatalf("building the manager: %v", err)
	}

	// One opted-in MyDeployment reading ten of the Secrets (made before
	// they exist: it waits with ConfigMissing, then reads and hashes them).
	md := optedIn("default", 10)
	if err := c.Create(ctx, md); err != nil {
		t.Fatal(err)
	}

	without := measure(t, manager, dir, "without")
	start := time.Now()
	createSecrets(t, ctx, c)
	t.Logf("created %d Secrets of %d KB (each with kubectl's last-applied annotation holding its data again) in %s",
		secrets, secretSize/1024, time.Since(start).Round(time.Second))
	with := measure(t, manager, dir, "with")
	t.Logf("manager RSS: %.1f MiB without the Secrets, %.1f MiB with them: %+.1f MiB (limit %d MiB)",
		mib(without), mib(with), mib(with-without), limit>>20)
	if with-without >= limit {
		t.Errorf("the manager's RSS grew by %.1f MiB with the Secrets, want < %d MiB", mib(with-without), limit>>20)
	}
	got := &appsv1beta1.MyDeployment{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(md), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.UpdateRevision == "" {
		t.Errorf("the opted-in MyDeployment has no revision: the manager did not read its Secrets (status %+v)", got.Status)
	}
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// optedIn is a MyDeployment reading the Secrets secret-0 to secret-(n-1).
func optedIn(ns string, n int) *appsv1beta1.MyDeployment {
	md := &appsv1beta1.MyDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reader",
			Annotations: map[string]string{appsv1beta1.RolloutOnConfigChangeAnnotation: "true"}},
		Spec: appsv1beta1.MyDeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "reader"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "reader"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
			},
		},
	}
	for i := range n {
		md.Spec.Template.Spec.Containers[0].EnvFrom = append(md.Spec.Template.Spec.Containers[0].EnvFrom,
			corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: fmt.Sprintf("secret-%d", i)}}})
	}
	return md
}

// createSecrets creates the Secrets, 8 at a time, each with random data and
// the last-applied annotation kubectl apply would write (its data again):
// a metadata cache that kept annotations would hold it.
func createSecrets(t *testing.T, ctx context.Context, c client.Client) {
	var wg sync.WaitGroup
	errs := make(chan error, secrets)
	next := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				data := make([]byte, secretSize)
				_, _ = rand.Read(data)
				s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("secret-%d", i)},
					Data: map[string][]byte{"blob": data}}
				applied, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Secret",
					"metadata": map[string]string{"name": s.Name, "namespace": s.Namespace},
					"data":     map[string]string{"blob": base64.StdEncoding.EncodeToString(data)}})
				s.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": string(applied)}
				if err := c.Create(ctx, s); err != nil {
					errs <- err
				}
			}
		}()
	}
	for i := range secrets {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("creating Secrets: %v", err)
	}
}

// measure runs the manager until it is ready and has synced, then samples
// its RSS for 10 s and returns the largest sample.
func measure(t *testing.T, manager, dir, name string) int64 {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	probe := l.Addr().String()
	_ = l.Close()
	logFile, err := os.Create(filepath.Join(dir, "manager-"+name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(manager, "--metrics-bind-address=0", "--health-probe-bind-address="+probe)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(dir, "kubeconfig"), "ENABLE_WEBHOOKS=false")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get("http://" + probe + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the manager (%s) was not ready in 2 minutes; log in %s", name, logFile.Name())
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(10 * time.Second) // caches synced, the MyDeployment synced
	var most int64
	for range 20 {
		rss := rssOf(t, cmd.Process.Pid)
		most = max(most, rss)
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("%s: RSS up to %.1f MiB", name, mib(most))
	return most
}

// rssOf reads VmRSS of pid from /proc.
func rssOf(t *testing.T, pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}
