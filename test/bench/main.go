// Command bench measures, in one run on one local cluster, how fast and how
// cheaply three parties bring N objects x R replicas of pods through
// scale-out, a rolling update, scale-in and a quiet period: a plain client
// creating the pods itself (the API server's limit), kube-controller-
// manager's Deployment and ReplicaSet controllers, and our manager with
// MyDeployments. Every client runs at the same QPS/burst and worker count.
// It writes results.json, a Markdown table (README.md) and a PNG chart.
//
//	go run ./test/bench --size small --out docs/benchmarks
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// config is one benchmark run's settings.
type config struct {
	Size        string  `json:"size"`
	Objects     int     `json:"objects"`
	Replicas    int     `json:"replicas"`
	Nodes       int     `json:"nodes"`
	PodsPerNode int     `json:"pods_per_node"`
	QPS         float64 `json:"client_qps"`
	Burst       int     `json:"client_burst"`
	Workers     int     `json:"workers"`
	// ManagerWorkers: our manager's --workers and the raw client's objects
	// in flight. One of our syncs does what a Deployment sync and a
	// ReplicaSet sync do, so it gets both of kube-controller-manager's pools.
	ManagerWorkers int           `json:"manager_workers"`
	SyncPeriod     time.Duration `json:"-"`
	SyncPeriodS    float64       `json:"manager_sync_period_s"`
	KwokPodWork    int           `json:"kwok_pod_workers"`
	// KwokStages is the file of kwok Stages the cluster plays pods with,
	// relative to the repository ("": kwokctl's built-in stages).
	KwokStages string `json:"kwok_stages,omitempty"`
	// RawControllerPods: the raw party creates a controller's pods (since
	// issue 18; false in results of runs before, whose raw pods were plain).
	RawControllerPods bool `json:"raw_controller_pods"`
	// ManagerArgs are more flags for our manager (BENCH_MANAGER_ARGS).
	ManagerArgs []string      `json:"manager_args,omitempty"`
	Timeout     time.Duration `json:"-"`
	Parties     []string      `json:"parties"`
	// Rounds: every party runs every scenario once per round; a scenario's
	// figure is its median over the rounds (wall times on a 2-core machine
	// move by 15% from one run to the next).
	Rounds      int  `json:"rounds"`
	WaitCleanup bool `json:"wait_cleanup"`
	// ScalePods: the sizes of the scale curve (--scale-pods; scale.go), empty for a run of the benchmark.
	ScalePods []int `json:"scale_pods,omitempty"`
	// BindPods: every party's pods name their node (nodeName, the objects
	// round-robin over the nodes), so kube-scheduler places none. The scale
	// curve binds (on 2 cores the scheduler placed ~15 pods a second at
	// 30,000 and the curve measured it, not the controllers: issue 55); the
	// run of record keeps the scheduler, as a user's cluster has it.
	BindPods bool `json:"bind_pods,omitempty"`

	out, cluster, root, render string
	// commit is the commit measured (git describe of root), "" to describe
	// it when the run starts. The scale curve describes it once, before its
	// first size: each size writes its outputs into the tree, which would
	// make the next size's describe say "-dirty".
	commit string
	// checkpoint: where the run writes its state after each round
	// (checkpoint.go; "" for none); resume: go on from it; untilRound:
	// stop once this round is done (0: run every round).
	checkpoint string
	resume     bool
	untilRound int
}

// allParties are the parties a run has unless --parties says otherwise, in
// the order of its first round. Parties that are no side of a comparison
// come after the three compared, so those keep their order in every round.
var allParties = []string{partyRaw, partyDeployment, partyMyDeployment, partyRawPlain, partyInPlace}

// sizes are the presets: full is the 10,000 pods, small a quick
// run, tiny the smoke test of `make test`.
var sizes = map[string]config{
	"full":  {Objects: 200, Replicas: 50, Nodes: 10, PodsPerNode: 2000, SyncPeriod: 30 * time.Second, Timeout: 15 * time.Minute, WaitCleanup: true, Rounds: 3},
	"small": {Objects: 20, Replicas: 20, Nodes: 2, PodsPerNode: 2000, SyncPeriod: 10 * time.Second, Timeout: 5 * time.Minute, WaitCleanup: true, Rounds: 1},
	"tiny":  {Objects: 3, Replicas: 4, Nodes: 1, PodsPerNode: 200, SyncPeriod: 2 * time.Second, Timeout: 2 * time.Minute, Rounds: 1},
}

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	// client-go's reflectors log through controller-runtime's logger: keep them quiet.
	ctrllog.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(cfg.ScalePods) > 0 {
		if err := scaleMain(ctx, cfg); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if cfg.render != "" {
		if err := render(cfg.render, cfg.out); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	res, err := run(ctx, cfg)
	if errors.Is(err, errStopped) {
		logf("%v", err)
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	logf("wrote %s (scale-out %.1fs raw / %.1fs Deployment / %.1fs MyDeployment)", cfg.out,
		deref(res.ScaleOut.RawS), deref(res.ScaleOut.DeploymentS), deref(res.ScaleOut.MyDeploymentS))
}

func parseFlags(args []string) (*config, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	size := fs.String("size", "small", "preset: full (200 x 50), small (20 x 20) or tiny (3 x 4)")
	objects := fs.Int("objects", 0, "objects per party (0: the preset's)")
	replicas := fs.Int("replicas", 0, "replicas per object (0: the preset's)")
	nodes := fs.Int("nodes", 0, "kwok nodes (0: the preset's)")
	qps := fs.Float64("qps", 500, "client QPS of every party (kube-controller-manager, kube-scheduler, our manager, the raw client)")
	burst := fs.Int("burst", 1000, "client burst of every party")
	workers := fs.Int("workers", 5, "kube-controller-manager's deployment workers and its replicaset workers")
	managerWorkers := fs.Int("manager-workers", 0, "our manager's --workers and the raw client's objects in flight "+
		"(0: twice --workers, kube-controller-manager's two pools together)")
	syncPeriod := fs.Duration("sync-period", 0, "our manager's --sync-period; steady state lasts two of them (0: the preset's)")
	out := fs.String("out", "docs/benchmarks", "where results.json, README.md and chart.png go")
	name := fs.String("cluster", "mydeployment-bench", "kwokctl cluster name (deleted and recreated)")
	root := fs.String("root", ".", "the repository (bin/ holds the binaries, config/crd the CRD)")
	timeout := fs.Duration("timeout", 0, "limit for each scenario (0: the preset's)")
	renderFrom := fs.String("render", "", "no run: rewrite README.md's results and chart.png in --out from this results.json")
	rounds := fs.Int("rounds", 0, "rounds (0: the preset's): each runs every party once, in an order rotated "+
		"each round; a scenario's figure is the median over the rounds")
	parties := fs.String("parties", strings.Join(allParties, ","), "which parties run, in this order (for profiling one of them)")
	bindPods := fs.Bool("bind-pods", false, "every party's pods name their node, as the scale curve's do (for profiling a size of it)")
	kwokWorkers := fs.Int("kwok-pod-workers", 0, "kwok's pod workers, the same for every party (0: its default, 4; the scale curve's 16)")
	scalePods := fs.String("scale-pods", "", "the scale curve: pods at each size, comma-separated (e.g. 2000,10000,30000), "+
		"one round of raw, deployment and mydeployment at each, --replicas per object; writes scale.json, scale.svg and "+
		"README.md's scale section in --out (with --render: rewrite them from this scale.json)")
	resume := fs.Bool("resume", false, "go on from the checkpoint (--checkpoint) of a run stopped between rounds, "+
		"with the same settings on the same commit")
	untilRound := fs.Int("until-round", 0, "stop once this round is done, its checkpoint written (0: run every round)")
	checkpointPath := fs.String("checkpoint", "", "where the run writes its state after each round "+
		"(default bin/bench-checkpoint-<size>.json; none for the scale curve)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	cfg, ok := sizes[*size]
	if !ok {
		return nil, fmt.Errorf("unknown --size %q (full, small, tiny)", *size)
	}
	var err error
	cfg.Size = *size
	for dst, v := range map[*int]int{&cfg.Objects: *objects, &cfg.Replicas: *replicas, &cfg.Nodes: *nodes, &cfg.Rounds: *rounds} {
		if v > 0 {
			*dst = v
		}
	}
	if *syncPeriod > 0 {
		cfg.SyncPeriod = *syncPeriod
	}
	if *timeout > 0 {
		cfg.Timeout = *timeout
	}
	if cfg.Replicas < 2 {
		return nil, fmt.Errorf("--replicas must be at least 2 (scale-in halves it)")
	}
	// Room for every pod of a rolling update (replicas + 25% surge) with slack.
	if need := cfg.Objects * (cfg.Replicas + cfg.Replicas/4 + 1) * 2; cfg.Nodes*cfg.PodsPerNode < need {
		cfg.PodsPerNode = (need + cfg.Nodes - 1) / cfg.Nodes
	}
	cfg.QPS, cfg.Burst, cfg.Workers = *qps, *burst, *workers
	cfg.ManagerWorkers = *managerWorkers
	if cfg.ManagerWorkers <= 0 {
		cfg.ManagerWorkers = 2 * cfg.Workers
	}
	cfg.SyncPeriodS = cfg.SyncPeriod.Seconds()
	cfg.ManagerArgs = strings.Fields(os.Getenv("BENCH_MANAGER_ARGS"))
	cfg.KwokPodWork = 4 // kwok v0.8.0's default podPlayStageParallelism, the same for every party
	if *scalePods != "" {
		if cfg.ScalePods, err = parsePods(*scalePods); err != nil {
			return nil, err
		}
		cfg.KwokPodWork = scaleKwokPodWorkers
	}
	if *kwokWorkers > 0 {
		cfg.KwokPodWork = *kwokWorkers
	}
	cfg.BindPods = *bindPods
	cfg.KwokStages = "hack/kwok/stages.yaml"
	cfg.RawControllerPods = true
	for _, p := range strings.Split(*parties, ",") {
		if p = strings.TrimSpace(p); !slices.Contains(allParties, p) {
			return nil, fmt.Errorf("unknown party %q in --parties", p)
		}
		cfg.Parties = append(cfg.Parties, strings.TrimSpace(p))
	}
	if slices.Contains(cfg.Parties, partyInPlace) && cfg.Replicas < 4 {
		return nil, fmt.Errorf("--replicas must be at least 4 for %s: below, maxUnavailable 25%% rounds down to 0 "+
			"and an in-place rollout surges a pod first", partyInPlace)
	}
	if cfg.root, err = filepath.Abs(*root); err != nil {
		return nil, err
	}
	if cfg.out, err = filepath.Abs(*out); err != nil {
		return nil, err
	}
	cfg.cluster, cfg.render = *name, *renderFrom
	cfg.resume, cfg.untilRound = *resume, *untilRound
	switch {
	case len(cfg.ScalePods) > 0 || cfg.render != "":
		if *resume || *untilRound > 0 {
			return nil, fmt.Errorf("--resume and --until-round are for a run of the benchmark, not the scale curve or --render")
		}
	case *checkpointPath != "":
		cfg.checkpoint = *checkpointPath
	default:
		cfg.checkpoint = filepath.Join(cfg.root, "bin", "bench-checkpoint-"+cfg.Size+".json")
	}
	if cfg.untilRound < 0 || cfg.untilRound > cfg.Rounds {
		return nil, fmt.Errorf("--until-round %d: the run has rounds 1 to %d", cfg.untilRound, cfg.Rounds)
	}
	return &cfg, nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s bench: %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}
