package main

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// The parties, in the order they run.
const (
	// partyRaw creates the pods a controller creates (its labels and a
	// controller owner reference), with no controller: the true limit.
	partyRaw          = "raw"
	partyDeployment   = "deployment"
	partyMyDeployment = "mydeployment"
	// partyRawPlain is the raw client as it was before: plain pods, no owner.
	// It runs scale-out and scale-in only, to say what a controller's pods
	// cost over plain ones; it is no party of the targets.
	partyRawPlain = "raw_plain"
	// partyInPlace is our manager with objects created in update-mode
	// InPlaceIfPossible, so their pods carry the readiness gate an in-place
	// update needs. It runs in_place_setup and in_place_update only.
	partyInPlace = "mydeployment_inplace"
)

// The scenarios.
const (
	scaleOut      = "scale_out"
	rollingUpdate = "rolling_update"
	scaleIn       = "scale_in"
	steadyState   = "steady_state"
	// inPlaceSetup brings the in-place party's objects to R ready pods
	// (timed, reported as information: the readiness gate costs a write a pod).
	inPlaceSetup = "in_place_setup"
	// inPlaceUpdate is the image change of rollingUpdate, done in place.
	inPlaceUpdate = "in_place_update"
)

// User agents of the benchmark's own clients, so the audit log tells them apart.
const (
	uaRaw    = "mydeployment-bench-raw"
	uaDriver = "mydeployment-bench-driver"
)

const (
	imageV1 = "registry.example/bench-app:v1"
	imageV2 = "registry.example/bench-app:v2"
)

// window is one party's run of one scenario.
type window struct {
	Party, Scenario string
	Round           int // 1-based
	Start, End      time.Time
	// CPU seconds spent in the window by every process of the cluster
	// (components), our manager (procManager) and the benchmark (procBench).
	CPU               map[string]float64
	Violations        int
	ViolationExamples []string
	// Pods the watch saw appear, and stop being live, in the window.
	PodsCreated, PodsDeleted int
	Reconciles               float64 // our manager's reconciles in the window (steady state)
	// Seconds from the start to the newest pod's appearance and the last pod becoming ready.
	LastNewPodS, LastReadyPodS float64
	// Runtime: what our manager allocated and collected in the window (nil: none ran).
	Runtime *windowRuntime
	// RSS: our manager's and kube-controller-manager's resident set at its
	// most anonymous in the window.
	RSS map[string]rssSplit
	// AuditCovered: the audit log holds a request received after End, so
	// it was written past the window and a count of 0 in it is a 0 (a quiet
	// window of a one-node smoke run can have no request at all).
	AuditCovered bool
}

// bench is one run: the cluster, its clients, and what was measured.
type bench struct {
	cfg     *config
	cl      *cluster
	rest    *rest.Config
	scheme  *runtime.Scheme
	driver  client.Client
	raw     kubernetes.Interface
	driverK kubernetes.Interface
	windows []*window
	mgr     *managerProc
	prof    *profiler // nil unless BENCH_PROFILE_DIR is set
	commit  string    // git describe of the repository when the run started
	// progress counts the scenarios done, for each one's line.
	progress *progress
	// lifetime stats of the processes we compare
	kcmStart, apiStart procSample
	kcmEnd, apiEnd     procSample
	// managerRuns: our manager at the end of each of its runs (one per round).
	managerRuns []procSample
	// inPlaceManagerRuns: the same for the in-place party's manager, kept
	// apart so our manager's figures stay those of the compared party.
	inPlaceManagerRuns []procSample
	mgrParty           string // whose manager b.mgr is
	// extra: CPU seconds kube-controller-manager and kube-apiserver spent
	// in the parties beyond the first three (raw_plain, mydeployment_inplace),
	// cleanups included, so the whole-run figures stay those of the three.
	extra struct{ kcm, api float64 }
	// heaps: our managers' live heap before and after each scale-out (runtime.go).
	heaps []heapSample
	// loads: the machine's load average around each round.
	loads []roundLoad
	// nodes: the cluster's node names, sorted, when cfg.BindPods.
	nodes []string
	// reqs: the audit log's requests of each window (b.windows), counted
	// as each round ends.
	reqs []requests
	// started: when this process began; firstRound its first round (a
	// resumed run starts after its checkpoint's); parts the run's earlier
	// parts (checkpoint.go).
	started    time.Time
	firstRound int
	parts      []runPart
}

func run(ctx context.Context, cfg *config) (*results, error) {
	started := time.Now()
	cl := &cluster{name: cfg.cluster, root: cfg.root, workDir: filepath.Join(cfg.root, "bin", "bench-clusters")}
	defer cl.down()
	logf("starting cluster %s (%d nodes, client qps %v / burst %d, kcm %d+%d workers, ours %d)",
		cfg.cluster, cfg.Nodes, cfg.QPS, cfg.Burst, cfg.Workers, cfg.Workers, cfg.ManagerWorkers)
	if err := cl.up(ctx, cfg); err != nil {
		// Other clusters on the machine may take a port kwokctl picked
		// meanwhile: one fresh try.
		logf("cluster did not come up (%v); trying once more", err)
		if err := cl.up(ctx, cfg); err != nil {
			return nil, err
		}
	}
	// The commit measured is the one at the start: bin/manager was built from it.
	commit := cfg.commit
	if commit == "" {
		commit = describe(cfg.root)
	}
	b := &bench{cfg: cfg, cl: cl, commit: commit, started: started, firstRound: 1}
	if cfg.resume {
		cp, err := loadCheckpoint(cfg.checkpoint, cfg, b.commit)
		if err != nil {
			return nil, err
		}
		b.resume(cp)
		logf("resuming after round %d of %d (%s)", cp.RoundsDone, cfg.Rounds, cfg.checkpoint)
	}
	b.progress = newProgress(started, cfg.Rounds-b.firstRound+1, cfg.Parties, func(party string) int { return len(b.steps(party)) })
	if err := b.clients(); err != nil {
		return nil, err
	}
	var err error
	if cfg.BindPods {
		if b.nodes, err = b.nodeNames(ctx); err != nil {
			return nil, err
		}
	}
	if b.prof, err = newProfiler(os.Getenv("BENCH_PROFILE_DIR"), b.rest); err != nil {
		return nil, err
	}
	kcm, err := cl.pid("kube-controller-manager")
	if err != nil {
		return nil, err
	}
	api, err := cl.pid("kube-apiserver")
	if err != nil {
		return nil, err
	}
	b.kcmStart, _ = readProc(kcm)
	b.apiStart, _ = readProc(api)
	for round := b.firstRound; round <= cfg.Rounds; round++ {
		b.startRound(round)
		first := len(b.windows)
		for _, p := range roundOrder(cfg.Parties, round) {
			kcm0, _ := readProc(kcm)
			api0, _ := readProc(api)
			if err := b.party(ctx, p, round); err != nil {
				b.stopManager()
				return nil, fmt.Errorf("round %d, party %s: %w", round, p, err)
			}
			if extraParty(p) {
				kcm1, _ := readProc(kcm)
				api1, _ := readProc(api)
				b.extra.kcm += kcm1.CPUSeconds - kcm0.CPUSeconds
				b.extra.api += api1.CPUSeconds - api0.CPUSeconds
			}
		}
		b.endRound()
		// The audit log is written in batches, each within a second
		// (audit-log-batch-max-wait): let the last one land.
		time.Sleep(3 * time.Second)
		reqs, err := countRequests(cl.auditLog, b.windows[first:])
		if err != nil {
			return nil, err
		}
		b.reqs = append(b.reqs, reqs...)
		if cfg.checkpoint == "" {
			continue
		}
		kcmNow, _ := readProc(kcm)
		apiNow, _ := readProc(api)
		if err := b.writeCheckpoint(cfg.checkpoint, round, b.part(kcmNow, apiNow, round)); err != nil {
			return nil, fmt.Errorf("checkpoint: %w", err)
		}
		if round == cfg.untilRound && round < cfg.Rounds {
			logf("round %d of %d done, checkpoint in %s", round, cfg.Rounds, cfg.checkpoint)
			return nil, errStopped
		}
	}
	if b.kcmEnd, err = readProc(kcm); err != nil {
		return nil, fmt.Errorf("kube-controller-manager is gone: %w", err)
	}
	b.apiEnd, _ = readProc(api)
	if dir := os.Getenv("BENCH_KEEP_AUDIT"); dir != "" { // for digging into one run's timeline
		if err := keepAudit(cl.auditLog, dir); err != nil {
			logf("keeping the audit log: %v", err)
		}
	}
	res := b.results(b.reqs, time.Since(started))
	if err := res.write(cfg.out); err != nil {
		return nil, err
	}
	return res, nil
}

func (b *bench) clients() error {
	cfg, err := clientcmd.BuildConfigFromFlags("", b.cl.kubeconfig)
	if err != nil {
		return err
	}
	// Every client here talks to the API server as kube-controller-manager,
	// kube-scheduler and our manager do: without gzip, which would otherwise
	// compress every event of the benchmark's own watches (WatchListCompression).
	cfg.DisableCompression = true
	b.rest = cfg
	b.scheme = runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(b.scheme); err != nil {
		return err
	}
	if err := appsv1beta1.AddToScheme(b.scheme); err != nil {
		return err
	}
	// The driver creates and patches the objects: it must never be what waits.
	dc := rest.CopyConfig(cfg)
	dc.QPS, dc.Burst, dc.UserAgent = 2000, 4000, uaDriver
	if b.driver, err = client.New(dc, client.Options{Scheme: b.scheme}); err != nil {
		return err
	}
	// A CRD's Established comes before discovery serves its group: a
	// mapper that asks in between says "no matches for kind" (an A/B run
	// of 2026-11-29 failed so). Wait until the driver's mapper finds
	// MyDeployment, a fresh mapper each time.
	gk := schema.GroupKind{Group: appsv1beta1.GroupVersion.Group, Kind: "MyDeployment"}
	if err := poll(context.Background(), 30*time.Second, 200*time.Millisecond, func() bool {
		if _, err := b.driver.RESTMapper().RESTMapping(gk, appsv1beta1.GroupVersion.Version); err == nil {
			return true
		}
		if c, err := client.New(dc, client.Options{Scheme: b.scheme}); err == nil {
			b.driver = c
		}
		return false
	}); err != nil {
		return fmt.Errorf("the API server does not serve MyDeployments: %w", err)
	}
	if b.driverK, err = kubernetes.NewForConfig(dc); err != nil {
		return err
	}
	// The raw party gets exactly what the controllers get: the same QPS and
	// burst, and pods in protobuf (kube-controller-manager's default content
	// type, and controller-runtime's for built-in types), not client-go's
	// JSON default, which costs the API server more per create.
	rc := rest.CopyConfig(cfg)
	rc.QPS, rc.Burst, rc.UserAgent = float32(b.cfg.QPS), b.cfg.Burst, uaRaw
	rc.ContentType = runtime.ContentTypeProtobuf
	rc.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	b.raw, err = kubernetes.NewForConfig(rc)
	return err
}

// partyState is what one party's scenarios share.
type partyState struct {
	name, ns string
	round    int
	objects  []string
	cache    cache.Cache
	pods     *tracker
	// rawPods: the raw parties' pod names per object, in creation order.
	rawPods map[string][]string
	// nodeOf: the node each object's pods are bound to (cfg.BindPods), else nil.
	nodeOf map[string]string
	status func(ctx context.Context) ([]objStatus, error)
}

// objStatus is the part of a Deployment's or MyDeployment's status the waits read.
type objStatus struct {
	name                                      string
	generation, observed                      int64
	spec, replicas, updated, ready, available int32
}

// roundOrder is the order the parties run in a round: rotated by one each
// round, so none always goes first on a fresh cluster or last after the
// others' leftovers (etcd's history, the API server's caches).
// nodeNames lists the cluster's nodes, sorted.
func (b *bench) nodeNames(ctx context.Context) ([]string, error) {
	list, err := b.driverK.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, n := range list.Items {
		names = append(names, n.Name)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("binding pods: the cluster has no nodes")
	}
	slices.Sort(names)
	return names, nil
}

// spread gives the i-th object the (i mod len(nodes))-th node: every party
// alike, so each node holds the same share of every party's pods. Nil
// without nodes (pods left to kube-scheduler).
func spread(objects, nodes []string) map[string]string {
	if len(nodes) == 0 {
		return nil
	}
	on := make(map[string]string, len(objects))
	for i, o := range objects {
		on[o] = nodes[i%len(nodes)]
	}
	return on
}

func roundOrder(parties []string, round int) []string {
	k := (round - 1) % len(parties)
	return append(append([]string(nil), parties[k:]...), parties[:k]...)
}

func (b *bench) party(ctx context.Context, name string, round int) error {
	// A namespace per round: the last one's may still be terminating.
	// Names of namespaces and objects take no "_" (raw_plain, mydeployment_inplace).
	dns := strings.ReplaceAll(name, "_", "-")
	ps := &partyState{name: name, ns: fmt.Sprintf("bench-%s-r%d", dns, round), round: round,
		pods: newTracker(), rawPods: map[string][]string{}}
	for i := range b.cfg.Objects {
		ps.objects = append(ps.objects, fmt.Sprintf("%s-%03d", dns, i))
	}
	ps.nodeOf = spread(ps.objects, b.nodes)
	if err := b.namespace(ctx, ps.ns); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := b.watch(ctx, ps); err != nil {
		return err
	}
	if name == partyMyDeployment || name == partyInPlace {
		var err error
		if b.mgr, err = startManager(ctx, b.cfg, b.cl); err != nil {
			return err
		}
		b.mgrParty = name
		b.noteHeap(ps, 0)
	}
	for _, st := range b.steps(name) {
		if st.scenario == steadyState {
			// Rest means rest: no pod still terminating from scale-in, and the
			// status writes that follow their going settled.
			if err := poll(ctx, b.cfg.Timeout, 100*time.Millisecond, ps.pods.settled); err != nil {
				return fmt.Errorf("waiting for terminating pods to go: %w", err)
			}
			time.Sleep(2 * time.Second)
		}
		if err := b.measure(ctx, ps, st.scenario, st.fn); err != nil {
			return fmt.Errorf("%s: %w (%s)", st.scenario, err, ps.pods.summary())
		}
		if st.scenario == scaleOut || st.scenario == inPlaceSetup {
			time.Sleep(2 * time.Second) // the last status writes and their events
			b.noteHeap(ps, b.cfg.Objects*b.cfg.Replicas)
		}
	}
	b.stopManager()
	return b.cleanup(ctx, ps)
}

// step is one scenario of a party.
type step struct {
	scenario string
	fn       func(context.Context, *partyState) error
}

// steps are the scenarios party runs, in order.
func (b *bench) steps(party string) []step {
	switch {
	case isRaw(party): // no controller: nothing rolls, nothing rests
		return []step{{scaleOut, b.scaleOut}, {scaleIn, b.scaleIn}}
	case party == partyInPlace:
		return []step{{inPlaceSetup, b.inPlaceSetup}, {inPlaceUpdate, b.inPlaceUpdate}}
	}
	return []step{{scaleOut, b.scaleOut}, {rollingUpdate, b.rollingUpdate}, {scaleIn, b.scaleIn}, {steadyState, b.steady}}
}

// measure runs one scenario inside a window, sampling CPU around it.
func (b *bench) measure(ctx context.Context, ps *partyState, scenario string, fn func(context.Context, *partyState) error) error {
	w := &window{Party: ps.name, Scenario: scenario, Round: ps.round}
	cpu0 := b.sample()
	var rec0 float64
	if b.mgr != nil {
		rec0 = b.mgr.reconciles()
	}
	rt0 := b.runtimeNow()
	stopRSS := b.sampleRSS()
	ctx, cancel := context.WithTimeout(ctx, b.timeout(scenario))
	defer cancel()
	ctx = b.watchdog(ctx)
	ps.pods.mark()
	mgrPprof := ""
	if b.mgr != nil {
		mgrPprof = b.mgr.pprof
	}
	stopProfile := b.prof.window(ps.name, scenario, mgrPprof)
	w.Start = time.Now()
	err := fn(ctx, ps)
	if cause := context.Cause(ctx); err != nil && cause != nil && !errors.Is(err, cause) {
		err = fmt.Errorf("%w: %w", err, cause)
	}
	w.End = time.Now()
	cpu1 := b.sample()
	stopProfile() // after the sample: its wait for the last slice is not the scenario's
	w.CPU = map[string]float64{}
	for proc, secs := range cpu1 {
		w.CPU[proc] = secs - cpu0[proc]
	}
	if b.mgr != nil {
		w.Reconciles = b.mgr.reconciles() - rec0
	}
	w.Runtime = b.runtimeSince(rt0)
	w.RSS = stopRSS()
	if scenario == rollingUpdate || scenario == inPlaceUpdate {
		w.Violations, w.ViolationExamples = ps.pods.checkInvariants(nil)
	}
	w.PodsCreated, w.PodsDeleted = ps.pods.churn()
	b.windows = append(b.windows, w)
	if err != nil {
		return err
	}
	w.LastNewPodS, w.LastReadyPodS = ps.pods.since(w.Start)
	logf("round %d/%d: %s %s took %.2fs, last pod created at %.2fs, last ready at %.2fs (%s); %s", ps.round, b.cfg.Rounds,
		ps.name, scenario, w.End.Sub(w.Start).Seconds(), w.LastNewPodS, w.LastReadyPodS, ps.pods.summary(), b.progress.step(time.Now()))
	return nil
}

// timeout bounds one scenario: the preset's, twice that for the in-place
// update, whose pods each take six steps in series through our manager and
// kwok (at the small size it took twice Deployment's rolling update).
func (b *bench) timeout(scenario string) time.Duration {
	if scenario == inPlaceUpdate {
		return 2 * b.cfg.Timeout
	}
	return b.cfg.Timeout
}

// untilDone is what is left of ctx's deadline, or d when it has none.
func untilDone(ctx context.Context, d time.Duration) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		return time.Until(dl)
	}
	return d
}

// watchdog returns ctx, cancelled with the cause if a cluster component
// exits: a scenario would otherwise wait for its whole timeout for pods
// that nobody schedules or marks Ready.
func (b *bench) watchdog(ctx context.Context) context.Context {
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := b.cl.dead(); err != nil {
					cancel(err)
					return
				}
			}
		}
	}()
	return ctx
}

// sample reads every measured process's CPU seconds so far, by name.
func (b *bench) sample() map[string]float64 {
	pids := map[string]int{procBench: os.Getpid()}
	for _, comp := range components {
		if pid, err := b.cl.pid(comp); err == nil {
			pids[comp] = pid
		}
	}
	if b.mgr != nil {
		pids[procManager] = b.mgr.cmd.Process.Pid
	}
	cpu := map[string]float64{}
	for proc, pid := range pids {
		if s, err := readProc(pid); err == nil {
			cpu[proc] = s.CPUSeconds
		}
	}
	return cpu
}

func (b *bench) stopManager() {
	if b.mgr == nil {
		return
	}
	if s, err := readProc(b.mgr.cmd.Process.Pid); err == nil {
		if b.mgrParty == partyInPlace {
			b.inPlaceManagerRuns = append(b.inPlaceManagerRuns, s)
		} else {
			b.managerRuns = append(b.managerRuns, s)
		}
	}
	b.mgr.stop()
	b.mgr = nil
}

// namespace creates ns and waits for its default service account (pods
// of a fresh namespace are refused until kube-controller-manager makes it).
func (b *bench) namespace(ctx context.Context, ns string) error {
	if _, err := b.driverK.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return poll(ctx, time.Minute, 100*time.Millisecond, func() bool {
		_, err := b.driverK.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	})
}

// listStatus reads the status of every object of one list type from the
// cache: items names the list's items, conv reads one.
func listStatus[T, L any, PL interface {
	*L
	client.ObjectList
}](c cache.Cache, items func(PL) []T, conv func(*T) objStatus) func(context.Context) ([]objStatus, error) {
	return func(ctx context.Context) ([]objStatus, error) {
		l := PL(new(L))
		if err := c.List(ctx, l); err != nil {
			return nil, err
		}
		ts := items(l)
		out := make([]objStatus, len(ts))
		for i := range ts {
			out[i] = conv(&ts[i])
		}
		return out, nil
	}
}

// watch starts the party's cache: its pods (through the tracker) and its objects.
func (b *bench) watch(ctx context.Context, ps *partyState) error {
	dc := rest.CopyConfig(b.rest)
	dc.QPS, dc.Burst, dc.UserAgent = 2000, 4000, uaDriver
	c, err := cache.New(dc, cache.Options{
		Scheme:            b.scheme,
		DefaultNamespaces: map[string]cache.Config{ps.ns: {}},
		DefaultTransform:  cache.TransformStripManagedFields(),
	})
	if err != nil {
		return err
	}
	inf, err := c.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return err
	}
	if _, err := inf.AddEventHandler(ps.pods.handler()); err != nil {
		return err
	}
	switch ps.name {
	case partyDeployment:
		if _, err := c.GetInformer(ctx, &appsv1.Deployment{}); err != nil {
			return err
		}
		ps.status = listStatus(c, func(l *appsv1.DeploymentList) []appsv1.Deployment { return l.Items },
			func(d *appsv1.Deployment) objStatus {
				s := d.Status
				return objStatus{d.Name, d.Generation, s.ObservedGeneration, ptr.Deref(d.Spec.Replicas, 1),
					s.Replicas, s.UpdatedReplicas, s.ReadyReplicas, s.AvailableReplicas}
			})
	case partyMyDeployment, partyInPlace:
		if _, err := c.GetInformer(ctx, &appsv1beta1.MyDeployment{}); err != nil {
			return err
		}
		ps.status = listStatus(c, func(l *appsv1beta1.MyDeploymentList) []appsv1beta1.MyDeployment { return l.Items },
			func(d *appsv1beta1.MyDeployment) objStatus {
				s := d.Status
				return objStatus{d.Name, d.Generation, s.ObservedGeneration, ptr.Deref(d.Spec.Replicas, 1),
					s.Replicas, s.UpdatedReplicas, s.ReadyReplicas, s.AvailableReplicas}
			})
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return fmt.Errorf("the benchmark's cache did not sync")
	}
	ps.cache = c
	return nil
}

// podTemplate is object name's pod template; node, when not "", binds its
// pods (cfg.BindPods).
func podTemplate(name, image, node string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name, objectLabel: name}},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: image}}},
	}
}

func (b *bench) object(ps *partyState, name string) client.Object {
	replicas := int32(b.cfg.Replicas)
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}
	meta := metav1.ObjectMeta{Name: name, Namespace: ps.ns}
	if ps.name == partyDeployment {
		return &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{
			Replicas: &replicas, Selector: sel, Template: podTemplate(name, imageV1, ps.nodeOf[name])}}
	}
	if ps.name == partyInPlace {
		meta.Annotations = map[string]string{appsv1beta1.UpdateModeAnnotation: appsv1beta1.UpdateModeInPlaceIfPossible}
	}
	return &appsv1beta1.MyDeployment{ObjectMeta: meta, Spec: appsv1beta1.MyDeploymentSpec{
		Replicas: &replicas, Selector: sel, Template: podTemplate(name, imageV1, ps.nodeOf[name])}}
}

// extraParty says the party is not one of the three whose work the
// whole-run process figures cover (raw, deployment, mydeployment).
func extraParty(party string) bool { return party == partyRawPlain || party == partyInPlace }

// isRaw says the party is a raw client (no controller).
func isRaw(party string) bool { return party == partyRaw || party == partyRawPlain }

// rawPod is the pod the raw client creates for object name: for partyRaw
// the pod a controller creates, from generateName "<name>-", with the
// template's labels, a controller-revision-hash and a pod-template-hash
// label, and a controller reference to owner; for partyRawPlain the plain
// pod "<name>-<i>" of the template alone (owner is nil). node binds it as
// the template does.
func rawPod(ns, name string, i int, image, node string, owner *corev1.ConfigMap) *corev1.Pod {
	tmpl := podTemplate(name, image, node)
	pod := &corev1.Pod{ObjectMeta: *tmpl.ObjectMeta.DeepCopy(), Spec: *tmpl.Spec.DeepCopy()}
	pod.Namespace = ns
	if owner == nil {
		pod.Name = fmt.Sprintf("%s-%d", name, i)
		return pod
	}
	// A template hash as the ReplicaSet controller writes one (fnv, safe-encoded).
	h := fnv.New32a()
	_, _ = h.Write([]byte(name + "/" + image))
	hash := utilrand.SafeEncodeString(fmt.Sprint(h.Sum32()))
	pod.GenerateName = name + "-"
	pod.Labels[appsv1.ControllerRevisionHashLabelKey] = name + "-" + hash
	pod.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	pod.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(owner, corev1.SchemeGroupVersion.WithKind("ConfigMap"))}
	return pod
}

// rawScaleOut creates R pods per object with the raw client, ManagerWorkers
// objects at a time (partyRaw: after the driver made the object's owner, as
// it makes the controllers' objects), and records their names for scale-in.
func (b *bench) rawScaleOut(ctx context.Context, ps *partyState) error {
	R := b.cfg.Replicas
	for _, name := range ps.objects {
		ps.rawPods[name] = make([]string, R) // filled at distinct indices below
	}
	return forEach(ctx, ps.objects, b.cfg.ManagerWorkers, func(name string) error {
		var owner *corev1.ConfigMap
		if ps.name == partyRaw {
			owner = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ps.ns}}
			if err := b.driver.Create(ctx, owner); err != nil {
				return err
			}
		}
		return forEachN(R, R, func(i int) error {
			pod, err := b.raw.CoreV1().Pods(ps.ns).Create(ctx, rawPod(ps.ns, name, i, imageV1, ps.nodeOf[name], owner), metav1.CreateOptions{})
			if err != nil {
				return err
			}
			ps.rawPods[name][i] = pod.Name
			return nil
		})
	})
}

// scaleOut: from nothing until every pod exists and is Ready, and (for
// the controllers) every object's status says so.
func (b *bench) scaleOut(ctx context.Context, ps *partyState) error {
	R := b.cfg.Replicas
	if isRaw(ps.name) {
		if err := b.rawScaleOut(ctx, ps); err != nil {
			return err
		}
		return b.waitPods(ctx, ps, R, imageV1)
	}
	if err := forEach(ctx, ps.objects, 20, func(name string) error {
		return b.driver.Create(ctx, b.object(ps, name))
	}); err != nil {
		return err
	}
	return b.waitDone(ctx, ps, R, imageV1)
}

// rollingUpdate: a new image on every object, until every object runs R
// updated, available pods and nothing else; the tracker checks the
// RollingUpdate invariants (25%/25%) on every pod event meanwhile.
func (b *bench) rollingUpdate(ctx context.Context, ps *partyState) error {
	R := b.cfg.Replicas
	surge, unavailable := (R+3)/4, R/4 // 25% rounded up and down, as Deployment does
	ps.pods.checkInvariants(&bounds{maxLive: R + surge, minReady: R - unavailable})
	patch := client.RawPatch(types.MergePatchType,
		[]byte(fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":%q}]}}}}`, imageV2)))
	if err := forEach(ctx, ps.objects, 20, func(name string) error {
		obj := b.object(ps, name)
		return b.driver.Patch(ctx, obj, patch)
	}); err != nil {
		return err
	}
	return b.waitDone(ctx, ps, R, imageV2)
}

// inPlaceSetup creates the in-place party's objects, annotated from the
// start (pods created before the annotation have no readiness gate and are
// replaced, not updated in place), until each runs R ready pods.
func (b *bench) inPlaceSetup(ctx context.Context, ps *partyState) error {
	if err := forEach(ctx, ps.objects, 20, func(name string) error {
		return b.driver.Create(ctx, b.object(ps, name))
	}); err != nil {
		return err
	}
	return b.waitDone(ctx, ps, b.cfg.Replicas, imageV1)
}

// inPlaceUpdate: rollingUpdate's image change on every object, done in
// place, until every object runs R ready pods of the new image and its
// status says so. The tracker checks meanwhile that an object never has
// more than R live pods nor fewer than R - maxUnavailable ready ones, a pod
// whose in-place gate is False counting as not ready; the window counts
// the pods that appear (each would be a replacement).
func (b *bench) inPlaceUpdate(ctx context.Context, ps *partyState) error {
	R := b.cfg.Replicas
	ps.pods.checkInvariants(&bounds{maxLive: R, minReady: R - R/4})
	patch := client.RawPatch(types.MergePatchType,
		[]byte(fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":%q}]}}}}`, imageV2)))
	if err := forEach(ctx, ps.objects, 20, func(name string) error {
		return b.driver.Patch(ctx, b.object(ps, name), patch)
	}); err != nil {
		return err
	}
	return b.waitDone(ctx, ps, R, imageV2)
}

// scaleIn: to half the replicas.
func (b *bench) scaleIn(ctx context.Context, ps *partyState) error {
	R, half := b.cfg.Replicas, b.cfg.Replicas/2
	if isRaw(ps.name) {
		err := forEach(ctx, ps.objects, b.cfg.ManagerWorkers, func(name string) error {
			return forEachN(R-half, R-half, func(i int) error {
				return b.raw.CoreV1().Pods(ps.ns).Delete(ctx, ps.rawPods[name][half+i], metav1.DeleteOptions{})
			})
		})
		if err != nil {
			return err
		}
		return b.waitPods(ctx, ps, half, imageV1)
	}
	patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, half)))
	if err := forEach(ctx, ps.objects, 20, func(name string) error {
		return b.driver.Patch(ctx, b.object(ps, name), patch)
	}); err != nil {
		return err
	}
	return b.waitDone(ctx, ps, half, imageV2)
}

// steady: nothing changes for two of our manager's resync periods (every
// object is reconciled twice); the audit log then says what was written.
func (b *bench) steady(ctx context.Context, _ *partyState) error {
	d := b.cfg.SyncPeriod*2 + b.cfg.SyncPeriod/4 // resyncs carry 10% jitter
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

func (b *bench) waitPods(ctx context.Context, ps *partyState, want int, image string) error {
	return poll(ctx, untilDone(ctx, b.cfg.Timeout), 50*time.Millisecond, func() bool { return ps.pods.all(ps.objects, want, image) })
}

// waitDone waits until every object's status reports want updated,
// available replicas for its current generation and the watch sees
// exactly that many ready pods of image.
func (b *bench) waitDone(ctx context.Context, ps *partyState, want int, image string) error {
	return poll(ctx, untilDone(ctx, b.cfg.Timeout), 50*time.Millisecond, func() bool {
		if !ps.pods.all(ps.objects, want, image) {
			return false
		}
		sts, err := ps.status(ctx)
		if err != nil || len(sts) != len(ps.objects) {
			return false
		}
		w := int32(want)
		for _, s := range sts {
			if s.observed < s.generation || s.spec != w || s.replicas != w || s.updated != w || s.ready != w || s.available != w {
				return false
			}
		}
		return true
	})
}

// cleanup removes everything of the party and waits until it is gone, so
// the next party starts on a quiet cluster.
func (b *bench) cleanup(ctx context.Context, ps *partyState) error {
	logf("%s: cleaning up", ps.name)
	bg := metav1.DeletePropagationBackground
	switch ps.name {
	case partyDeployment:
		_ = b.driver.DeleteAllOf(ctx, &appsv1.Deployment{}, client.InNamespace(ps.ns), client.PropagationPolicy(bg))
		_ = b.driver.DeleteAllOf(ctx, &appsv1.ReplicaSet{}, client.InNamespace(ps.ns), client.PropagationPolicy(bg))
	case partyMyDeployment, partyInPlace:
		_ = b.driver.DeleteAllOf(ctx, &appsv1beta1.MyDeployment{}, client.InNamespace(ps.ns), client.PropagationPolicy(bg))
	}
	// Grace 0: pods go at once, without waiting for kwok.
	// (Thousands of pods may outlast the request's timeout: the namespace's
	// deletion below finishes the job either way.)
	if err := b.driverK.CoreV1().Pods(ps.ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{}); err != nil {
		logf("%s: deleting pods: %v (the namespace's deletion goes on)", ps.name, err)
	}
	if err := b.driverK.CoreV1().Namespaces().Delete(ctx, ps.ns, metav1.DeleteOptions{}); err != nil {
		return err
	}
	if !b.cfg.WaitCleanup {
		return nil // the smoke size: a handful of pods cannot disturb the next party
	}
	return poll(ctx, 10*time.Minute, 500*time.Millisecond, func() bool {
		_, err := b.driverK.CoreV1().Namespaces().Get(ctx, ps.ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

// forEach calls fn for every item with at most workers at once; the first
// error wins.
func forEach(ctx context.Context, items []string, workers int, fn func(string) error) error {
	return forEachN(len(items), workers, func(i int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		return fn(items[i])
	})
}

func forEachN(n, workers int, fn func(int) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  int
	)
	for range max(1, min(workers, n)) {
		wg.Go(func() {
			for {
				mu.Lock()
				i := next
				next++
				stop := first != nil
				mu.Unlock()
				if i >= n || stop {
					return
				}
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return first
}

func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
