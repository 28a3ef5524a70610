// Package chaos tortures the built manager on the local cluster (make chaos;
// a short run is part of make test): SIGKILL restarts at random moments,
// an API client that fails writes and delays reads, leader failover between
// two managers, deletion and ownership, while a watcher outside the operator
// checks the invariants after every pod event. It needs KUBECONFIG pointing
// at a cluster with kube-controller-manager (garbage collection) and kwok.
package chaos

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/faultclient"
)

var (
	full   = flag.Bool("chaos.full", false, "the full run (make chaos): 100+ changes, 20+ kills, 5 failovers")
	report = flag.String("chaos.report", "", "write the figures into this Markdown file, between its chaos markers")
	// focus hunts one corner's findings: with -run naming a phase, a
	// finding one full run in ten shows comes up within minutes.
	focus = flag.String("chaos.corner", "", "make every corner this one (by its name in the figures, e.g. \"orphan delete and re-create\") and one change in two a corner")
	// optinFocus does the same for one opt-in change.
	optinFocus = flag.String("chaos.optin", "", "make every opt-in change this one where it applies (by its name in the figures, e.g. \"abort to stable\") and one change in two an opt-in")

	projectDir, logDir string
	managerKubeconfig  string
	suite              *env
	figures            = &figureBook{}
)

// env is what every phase shares.
type env struct {
	kubeconfig    string
	c             client.Client
	cs            kubernetes.Interface
	w             *watcher
	changeTimeout time.Duration
	// inFlight counts changes not yet converged (kills while > 0 land mid-rollout).
	inFlight atomic.Int64
	// cordon is held by the one drain change that has a node cordoned.
	cordon sync.Mutex
}

func TestMain(m *testing.M) {
	flag.Parse()
	kubeconfig := os.Getenv("KUBECONFIG")
	if kubeconfig == "" {
		fmt.Println("test/chaos: KUBECONFIG is not set; run it with make chaos or make test-chaos-short")
		os.Exit(0)
	}
	wd, _ := os.Getwd()
	projectDir = filepath.Join(wd, "..", "..")
	logDir = filepath.Join(projectDir, "bin", "chaos", "logs")
	_ = os.RemoveAll(logDir)
	must(os.MkdirAll(logDir, 0o755))

	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	must(err)
	cfg.QPS, cfg.Burst = 200, 400
	scheme := runtime.NewScheme()
	must(clientgoscheme.AddToScheme(scheme))
	must(appsv1beta1.AddToScheme(scheme))
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	must(err)
	cs, err := kubernetes.NewForConfig(cfg)
	must(err)

	out, err := kubectl("apply", "--server-side", "-f", filepath.Join(projectDir, "config", "crd", "bases"))
	if err != nil {
		fmt.Println(out)
		must(err)
	}
	for i := 0; ; i++ {
		out, _ := kubectl("get", "crd", "mydeployments.apps.mydeployment.io",
			"-o", `jsonpath={.status.conditions[?(@.type=="Established")].status}`)
		if out == "True" {
			break
		}
		if i > 300 {
			must(fmt.Errorf("CRD not established"))
		}
		time.Sleep(100 * time.Millisecond)
	}

	ctx, cancel := context.WithCancel(context.Background())
	suite = &env{kubeconfig: kubeconfig, c: c, cs: cs, w: newWatcher(), changeTimeout: 2 * time.Minute}
	readyCh := make(chan struct{})
	watchErr := make(chan error, 1)
	go func() { watchErr <- suite.w.run(ctx, cs, readyCh) }()
	select {
	case <-readyCh:
	case err := <-watchErr:
		must(err)
	}
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	must(err)
	statuses := &statusWatcher{}
	go statuses.run(ctx, wc, suite.w.tracks)
	managerKubeconfig, err = installRBAC(ctx)
	must(err)
	unlabel, err := labelZones(ctx, c)
	must(err)
	start := time.Now()
	code := m.Run()
	cancel()
	figures.total = time.Since(start)
	suite.w.checkStatuses(statuses)
	figures.note("status: %d writes claiming a complete rollout or 0 replicas were checked against the pods at their resourceVersion",
		statuses.count())
	unlabel()
	noteAnalysis()
	noteHooks()
	noteWaves()
	events, created, violations := suite.w.snapshot()
	figures.events, figures.created, figures.violations = events, created, violations
	text := figures.markdown()
	fmt.Println(text)
	if *report != "" && code == 0 {
		must(writeReport(*report, text))
	}
	if len(violations) > 0 && code == 0 {
		code = 1
	}
	os.Exit(code)
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "test/chaos:", err)
		os.Exit(1)
	}
}

func kubectl(args ...string) (string, error) {
	out, err := exec.Command(filepath.Join(projectDir, "bin", "kubectl"), args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func newNamespace(t *testing.T, name string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: name + "-"}}
	if err := suite.c.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	// Each phase starts on an idle cluster: its MyDeployments go when it ends
	// (the garbage collector then deletes their pods: no bounds from then on).
	t.Cleanup(func() {
		suite.w.untrackNamespace(ns.Name)
		_ = suite.c.Delete(context.Background(), ns)
	})
	return ns.Name
}

// requireNoViolations fails t with the invariant violations seen so far.
func requireNoViolations(t *testing.T) {
	t.Helper()
	if _, _, v := suite.w.snapshot(); len(v) > 0 {
		t.Fatalf("%d invariant violations, first ones:\n%s", len(v), strings.Join(v[:min(len(v), 20)], "\n"))
	}
}

// scale picks the full or the short figure.
func scale(short, long int) int {
	if *full {
		return long
	}
	return short
}

// faultsOf counts the faults the managers' logs report (writes, reads).
func faultsOf(ms ...*manager) (writes, reads int) {
	for _, m := range ms {
		total := m.count(`"msg":"` + faultclient.LogMessage + `"`)
		r := m.count(`"verb":"read"`)
		writes, reads = writes+total-r, reads+r
	}
	return writes, reads
}

// killer SIGKILLs m at random moments (every 0.5-3 s) and restarts it
// after 1-1.5 s, until stop is called; it counts kills and those that
// landed while a change was in flight.
//
// Why not at once: a pod create the killed process sent can still land in
// the API server after it died, and a replacement started within
// milliseconds can list the pods before it does and create the pod again
// (a loaded machine saw one such duplicate). Every controller has this
// window; a deployed manager runs with --leader-elect, whose lease (15 s)
// keeps a replacement waiting far longer than any request in flight. The
// restarts here run without leader election, so they wait a second.
type killer struct {
	kills, midRollout atomic.Int64
	stop              func()
}

func startKiller(t *testing.T, m *manager) *killer {
	k := &killer{}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Duration(500+rand.IntN(2500)) * time.Millisecond):
			}
			if suite.inFlight.Load() > 0 {
				k.midRollout.Add(1)
			}
			m.kill()
			k.kills.Add(1)
			time.Sleep(time.Second + time.Duration(rand.IntN(500))*time.Millisecond)
			if err := m.start(); err != nil {
				t.Errorf("restarting the manager: %v", err)
				return
			}
		}
	})
	k.stop = func() { close(done); wg.Wait() }
	return k
}

// tortureWithKills runs the workload while a killer restarts the manager
// (with faults, if any), until the changes and at least minKills are done.
func tortureWithKills(t *testing.T, name, phase string, mds, changes, minKills int, opening []optinChange, env ...string) {
	ctx := context.Background()
	ns := newNamespace(t, "chaos-"+name)
	m := newManager(name, env)
	if err := m.start(); err != nil {
		t.Fatal(err)
	}
	defer m.stop()
	k := startKiller(t, m)
	start := time.Now()
	res := suite.runWorkload(ctx, t, workload{ns: ns, count: mds, changes: changes, corners: true, optins: true,
		opening: opening, moreWhen: func() bool { return k.kills.Load() < int64(minKills) }})
	k.stop()
	writes, reads := faultsOf(m)
	figures.add(phaseFigures{name: phase, mds: mds, res: res, kills: int(k.kills.Load()),
		writeFaults: writes, readFaults: reads, duration: time.Since(start)})
	figures.note("%s: %d of the %d kills landed while a rollout or scale change was in flight; corners: %s; opt-ins: %s",
		phase, k.midRollout.Load(), k.kills.Load(), res.cornersNote(), res.optinsNote())
	if len(res.failures) > 0 {
		t.Fatalf("rollouts that did not complete:\n%s\nmanager log:\n%s", strings.Join(res.failures, "\n"), m.tail(40))
	}
	if k.kills.Load() < int64(minKills) {
		t.Fatalf("only %d kills, want at least %d", k.kills.Load(), minKills)
	}
	requireNoViolations(t)
}

// TestRestarts: rollouts and scale changes over many MyDeployments while the
// manager is SIGKILLed at random moments and restarted. It opens with each
// variant of rollout hooks and a zone waves rollout: the manager killed
// mid-hook and mid-wave.
func TestRestarts(t *testing.T) {
	opening := []optinChange{optinWaves}
	for range hookVariants {
		opening = append(opening, optinHooks)
	}
	tortureWithKills(t, "restarts", "restarts (SIGKILL)", scale(4, 10), scale(10, 100), scale(4, 20), opening)
}

// TestRestartsWithAPIFaults (full run only): both at once.
func TestRestartsWithAPIFaults(t *testing.T) {
	if !*full {
		t.Skip("full run only (make chaos)")
	}
	tortureWithKills(t, "restarts-faults", "restarts + API faults", 8, 60, 15, nil, faults)
}

// faults: 10% of the manager's writes fail (InternalError or Conflict), 5%
// of its creates and deletes succeed but answer a timeout (a lost reply),
// 20% of its reads are delayed up to 200ms.
var faults = faultclient.EnvVar + "=writes=0.1,lost=0.05,reads=0.2,delay=200ms"

// TestAPIFaults: the same workload under those faults.
func TestAPIFaults(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "chaos-faults")
	m := newManager("faults", []string{faults})
	if err := m.start(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res := suite.runWorkload(ctx, t, workload{ns: ns, count: scale(3, 8), changes: scale(6, 60), corners: true, optins: true, pdb: true,
		opening: []optinChange{optinConfigEdit, optinDrain}})
	m.stop()
	writes, reads := faultsOf(m)
	figures.add(phaseFigures{name: "API faults (10% writes fail, 5% replies lost, 20% reads delayed)", mds: scale(3, 8), res: res,
		writeFaults: writes, readFaults: reads, duration: time.Since(start)})
	if len(res.failures) > 0 {
		t.Fatalf("rollouts that did not complete:\n%s\nmanager log:\n%s", strings.Join(res.failures, "\n"), m.tail(40))
	}
	figures.note("API faults: corners: %s; opt-ins: %s", res.cornersNote(), res.optinsNote())
	if writes == 0 {
		t.Fatal("no write fault was injected: the fault client is not wired")
	}
	requireNoViolations(t)
}
