// Package shards is the e2e of active-active shards (issue 56): manager
// replicas run with --shards as host processes on a local cluster (make
// test-shards starts it twice: with the API server's ShardedListAndWatch on,
// then off; SHARDS_SERVER_FILTERS says which this run has), 300
// MyDeployments in 60 namespaces and 3 Applications among them, a replica
// killed, replicas scaled 3 -> 5 -> 2. What it asserts is what a user sees: each MyDeployment synced by
// exactly one replica (its series on one replica's /metrics), every pod
// made once, each replica's cache (a third of the pods where the server
// filters, every pod where it does not).
package shards

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/test/utils"
)

const (
	operatorNS = "mydeployment-system"
	// namespaces x perNamespace MyDeployments; the names spread over the
	// hash's slots (docs/architecture.md, "Where namespaces fall").
	namespaces, perNamespace = 60, 5
	// apps Applications (one MyDeployment and Service each), in the first
	// namespaces: a whole app's children in one slot.
	apps = 3
	// The Leases' timing, short as the chaos suite's.
	leaseDuration = 6 * time.Second
	retryPeriod   = time.Second
)

var (
	projectDir string
	kubeconfig string
	filtered   bool
	c          client.Client
	cs         kubernetes.Interface
)

func TestShards(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "shards e2e")
}

var _ = BeforeSuite(func() {
	var err error
	projectDir, err = utils.GetProjectDir()
	Expect(err).NotTo(HaveOccurred())
	kubeconfig = os.Getenv("KUBECONFIG")
	Expect(kubeconfig).NotTo(BeEmpty(), "KUBECONFIG must point at the local cluster (make test-shards sets it)")
	filtered, err = strconv.ParseBool(os.Getenv("SHARDS_SERVER_FILTERS"))
	Expect(err).NotTo(HaveOccurred(), "SHARDS_SERVER_FILTERS: true or false, as the cluster's ShardedListAndWatch")
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	cfg.QPS, cfg.Burst = 200, 400
	scheme := runtime.NewScheme()
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(appsv1beta1.AddToScheme(scheme)).To(Succeed())
	c, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	cs = kubernetes.NewForConfigOrDie(cfg)

	By("installing the CRDs")
	utils.MustInstallCRDs(projectDir)
	Expect(client.IgnoreAlreadyExists(c.Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNS}}))).To(Succeed())
})

// replica is one manager process with --shards.
type replica struct {
	name    string
	proc    *utils.Process
	metrics string
}

func startReplica(name string) *replica {
	mport, err := utils.FreePort()
	Expect(err).NotTo(HaveOccurred())
	r := &replica{name: name, metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", mport)}
	logPath := filepath.Join(projectDir, "bin", "shards-e2e", fmt.Sprintf("%s-%d.log", name, time.Now().UnixNano()))
	Expect(os.MkdirAll(filepath.Dir(logPath), 0o755)).To(Succeed())
	r.proc, err = utils.Start(name, logPath, []string{"ENABLE_WEBHOOKS=false", "POD_NAME=" + name, "KUBECONFIG=" + kubeconfig},
		filepath.Join(projectDir, "bin", "manager"), "--shards", "--leader-elect",
		"--leader-election-namespace="+operatorNS, "--leader-elect-lease-duration="+leaseDuration.String(),
		"--leader-elect-renew-deadline=4s", "--leader-elect-retry-period="+retryPeriod.String(),
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", mport), "--metrics-secure=false",
		"--health-probe-bind-address=127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(r.proc.Stop)
	return r
}

// scrape is a replica's series of interest: the shard gauges by name,
// and the MyDeployments it reports (mydeployment_spec_replicas).
type scrape struct {
	gauges  map[string]float64
	objects map[types.NamespacedName]bool
}

func (r *replica) scrape() (scrape, error) {
	s := scrape{gauges: map[string]float64{}, objects: map[types.NamespacedName]bool{}}
	resp, err := http.Get(r.metrics)
	if err != nil {
		return s, err
	}
	defer func() { _ = resp.Body.Close() }()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "mydeployment_shard_"):
			name, value, _ := strings.Cut(line, " ")
			v, err := strconv.ParseFloat(value, 64)
			if err == nil {
				s.gauges[name] = v
			}
		case strings.HasPrefix(line, "mydeployment_spec_replicas{"):
			s.objects[types.NamespacedName{Namespace: label(line, "namespace"), Name: label(line, "name")}] = true
		}
	}
	return s, sc.Err()
}

func label(line, key string) string {
	_, rest, _ := strings.Cut(line, key+`="`)
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

// scrapeAll scrapes each replica; an error fails the caller's Eventually.
func scrapeAll(g Gomega, rs []*replica) []scrape {
	out := make([]scrape, len(rs))
	for i, r := range rs {
		var err error
		out[i], err = r.scrape()
		g.Expect(err).NotTo(HaveOccurred(), r.name)
	}
	return out
}

// shared waits until rs hold the 64 slots between them, each some.
func shared(rs []*replica) {
	Eventually(func(g Gomega) {
		total := 0.0
		for i, s := range scrapeAll(g, rs) {
			g.Expect(s.gauges["mydeployment_shard_slots"]).To(BeNumerically(">", 0), rs[i].name+" holds slots")
			total += s.gauges["mydeployment_shard_slots"]
		}
		g.Expect(total).To(Equal(64.0), "the replicas hold the 64 slots between them")
	}, 2*time.Minute, time.Second).Should(Succeed())
}

// creations counts the pods created per MyDeployment, from a watch opened
// before the first was made: a pod made twice is counted twice.
type creations struct {
	mu    sync.Mutex
	seen  map[types.UID]bool
	count map[types.NamespacedName]int
}

func watchCreations(ctx context.Context) *creations {
	cr := &creations{seen: map[types.UID]bool{}, count: map[types.NamespacedName]int{}}
	w, err := cs.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{LabelSelector: "app=shards-e2e"})
	Expect(err).NotTo(HaveOccurred())
	go func() {
		defer GinkgoRecover()
		for e := range w.ResultChan() {
			pod, ok := e.Object.(*corev1.Pod)
			if !ok || e.Type != watch.Added {
				continue
			}
			cr.mu.Lock()
			if !cr.seen[pod.UID] {
				cr.seen[pod.UID] = true
				cr.count[types.NamespacedName{Namespace: pod.Namespace, Name: pod.Labels["md"]}]++
			}
			cr.mu.Unlock()
		}
	}()
	DeferCleanup(w.Stop)
	return cr
}

// exceeding are the MyDeployments with more pods created than want.
func (cr *creations) exceeding(want int) []string {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	var out []string
	for key, n := range cr.count {
		if n > want {
			out = append(out, fmt.Sprintf("%s: %d", key, n))
		}
	}
	return out
}

func nsName(i int) string { return fmt.Sprintf("team-%d-prod", i) }

func newMD(ns, name string, replicas int32) *appsv1beta1.MyDeployment {
	labels := map[string]string{"app": "shards-e2e", "md": name}
	md := &appsv1beta1.MyDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	md.Spec.Replicas = ptr.To(replicas)
	md.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
	md.Spec.Template.Labels = labels
	md.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app", Image: "registry.local/app:1"}}
	return md
}

// forAll runs f on every MyDeployment, 20 at a time.
func forAll(f func(ns, name string) error) {
	sem := make(chan struct{}, 20)
	var wg sync.WaitGroup
	errs := make(chan error, namespaces*perNamespace)
	for i := 1; i <= namespaces; i++ {
		for j := range perNamespace {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				if err := f(nsName(i), fmt.Sprintf("web-%d", j)); err != nil {
					errs <- err
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		Expect(err).NotTo(HaveOccurred())
	}
}

func scaleAll(replicas int32) {
	patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)))
	forAll(func(ns, name string) error {
		return c.Patch(context.Background(), &appsv1beta1.MyDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, patch)
	})
	appPatch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"deployment":{"replicas":%d}}}`, replicas)))
	for i := 1; i <= apps; i++ {
		Expect(c.Patch(context.Background(), &appsv1beta1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: nsName(i), Name: "app"}},
			appPatch)).To(Succeed())
	}
}

func newApplication(ns string) *appsv1beta1.Application {
	app := &appsv1beta1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}}
	app.Spec.Deployment = appsv1beta1.ApplicationDeploymentSpec{Image: "registry.local/app:1", Port: 8080, Replicas: ptr.To(int32(1))}
	app.Spec.Service = &appsv1beta1.ApplicationServiceSpec{}
	return app
}

// appsReady waits until every Application says Ready for its generation
// with want pods ready, and its Service exists.
func appsReady(want int32) {
	Eventually(func(g Gomega) {
		for i := 1; i <= apps; i++ {
			var app appsv1beta1.Application
			g.Expect(c.Get(context.Background(), types.NamespacedName{Namespace: nsName(i), Name: "app"}, &app)).To(Succeed())
			g.Expect(app.Status.ObservedGeneration).To(Equal(app.Generation), app.Namespace)
			g.Expect(app.Status.ReadyReplicas).To(Equal(want), app.Namespace)
			g.Expect(meta.IsStatusConditionTrue(app.Status.Conditions, "Ready")).To(BeTrue(), app.Namespace)
			var svc corev1.Service
			g.Expect(c.Get(context.Background(), types.NamespacedName{Namespace: nsName(i), Name: "app"}, &svc)).To(Succeed())
		}
	}, 3*time.Minute, 2*time.Second).Should(Succeed())
}

// availableAll waits until every MyDeployment's status reports want
// replicas available for its generation, and that many pods live.
func availableAll(want int32) time.Duration {
	start := time.Now()
	Eventually(func(g Gomega) {
		var list appsv1beta1.MyDeploymentList
		g.Expect(c.List(context.Background(), &list, client.MatchingLabels{"e2e": "shards"})).To(Succeed())
		g.Expect(list.Items).To(HaveLen(namespaces * perNamespace))
		behind := 0
		for _, md := range list.Items {
			s := md.Status
			if s.ObservedGeneration < md.Generation || s.Replicas != want || s.AvailableReplicas != want || s.UpdatedReplicas != want {
				behind++
			}
		}
		g.Expect(behind).To(BeZero(), "MyDeployments not yet at %d available", want)
		var pods corev1.PodList
		g.Expect(c.List(context.Background(), &pods, client.MatchingLabels{"app": "shards-e2e"})).To(Succeed())
		live := 0
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil {
				live++
			}
		}
		g.Expect(live).To(Equal(int(want)*namespaces*perNamespace), "live pods")
	}, 5*time.Minute, 2*time.Second).Should(Succeed())
	return time.Since(start)
}

// onePerObject checks that each MyDeployment is reported by exactly one
// replica, and what each caches: about a third of the pods where the
// server filters (its slots' only), every pod where it does not.
func onePerObject(rs []*replica, podsPerObject int) {
	all := namespaces * perNamespace
	Eventually(func(g Gomega) {
		scrapes := scrapeAll(g, rs)
		reporters := map[types.NamespacedName]int{}
		slotPods := 0.0
		for i, s := range scrapes {
			for key := range s.objects {
				if strings.HasPrefix(key.Namespace, "team-") {
					reporters[key]++
				}
			}
			g.Expect(s.gauges["mydeployment_shard_server_filtered"]).To(Equal(map[bool]float64{true: 1}[filtered]), rs[i].name)
			pods, cached := s.gauges["mydeployment_shard_pods"], s.gauges["mydeployment_shard_cached_pods"]
			slotPods += pods
			if filtered {
				g.Expect(cached).To(Equal(pods), "%s caches its slots' pods only", rs[i].name)
			} else {
				g.Expect(cached).To(BeNumerically(">=", (all+apps)*podsPerObject), "%s caches every pod", rs[i].name)
			}
		}
		g.Expect(reporters).To(HaveLen(all+apps), "every MyDeployment (the Applications' too) synced by a replica")
		for key, n := range reporters {
			g.Expect(n).To(Equal(1), "%s synced by %d replicas", key, n)
		}
		g.Expect(slotPods).To(BeNumerically("==", (all+apps)*podsPerObject), "the replicas' slots' pods add up to all")
		share := float64((all+apps)*podsPerObject) / float64(len(rs))
		for i, s := range scrapes {
			pods := s.gauges["mydeployment_shard_pods"]
			g.Expect(math.Abs(pods-share)).To(BeNumerically("<=", share*0.6),
				"%s holds %v of %d pods: about a %d-th", rs[i].name, pods, (all+apps)*podsPerObject, len(rs))
		}
	}, 2*time.Minute, 2*time.Second).Should(Succeed())
}

// scaledTo scales every object to n pods and checks what each step
// checks: all available, each object on one replica, no pod made twice.
func scaledTo(rs []*replica, created *creations, n int32) {
	scaleAll(n)
	GinkgoWriter.Printf("all available at %d in %s\n", n, availableAll(n))
	appsReady(n)
	onePerObject(rs, int(n))
	Expect(created.exceeding(int(n))).To(BeEmpty(), "no pod created twice")
}

var _ = Describe("Shards: replicas share the namespaces", Ordered, func() {
	It("syncs each MyDeployment on one replica through a kill and 3 -> 5 -> 2 replicas", func() {
		ctx, cancel := context.WithCancel(context.Background())
		DeferCleanup(cancel)
		created := watchCreations(ctx)

		By("three replicas share the 64 slots")
		rs := []*replica{startReplica("r0"), startReplica("r1"), startReplica("r2")}
		shared(rs)

		By(fmt.Sprintf("%d MyDeployments in %d namespaces, one pod each", namespaces*perNamespace, namespaces))
		for i := 1; i <= namespaces; i++ {
			Expect(client.IgnoreAlreadyExists(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsName(i)}}))).To(Succeed())
		}
		forAll(func(ns, name string) error {
			md := newMD(ns, name, 1)
			md.Labels = map[string]string{"e2e": "shards"}
			return c.Create(ctx, md)
		})
		for i := 1; i <= apps; i++ {
			Expect(c.Create(ctx, newApplication(nsName(i)))).To(Succeed())
		}
		GinkgoWriter.Printf("all available at 1 in %s\n", availableAll(1))
		appsReady(1)
		onePerObject(rs, 1)

		By("r1 SIGKILLed: the others take its namespaces within a lease duration and a sync")
		rs[1].proc.Kill()
		killed := time.Now()
		rs = []*replica{rs[0], rs[2]}
		shared(rs)
		took := time.Since(killed)
		GinkgoWriter.Printf("the survivors hold every slot %s after the kill\n", took.Round(100*time.Millisecond))
		Expect(took).To(BeNumerically("<=", leaseDuration+5*retryPeriod), "slots taken within a lease duration and a few rounds")
		scaledTo(rs, created, 2)

		By("3 -> 5: three replicas join the two")
		rs = append(rs, startReplica("r3"), startReplica("r4"), startReplica("r5"))
		shared(rs)
		scaledTo(rs, created, 3)

		By("5 -> 2: three replicas stop gracefully")
		for _, r := range rs[2:] {
			r.proc.Stop()
		}
		rs = rs[:2]
		shared(rs)
		scaledTo(rs, created, 4)
	})
})
